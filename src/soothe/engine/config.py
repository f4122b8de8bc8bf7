"""Settings: a TOML file, then environment variables, then command-line overrides.

Precedence (highest first): overrides passed by the CLI, ``SOOTHE_<SECTION>__<KEY>``
environment variables, the TOML file, defaults. The file is
``$XDG_CONFIG_HOME/soothe/config.toml`` unless ``--config`` or ``SOOTHE_CONFIG`` names
another. A bad file raises ``ConfigError`` whose message is one line naming the file, the
key and the problem, never a secret value.
"""

from __future__ import annotations

import contextvars
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

if TYPE_CHECKING:
    from soothe.engine.goal_contract import GoalBudget

from soothe.engine.config_file import (
    DEFAULT_OLLAMA_MODEL,
    DEFAULT_OLLAMA_URL,
    DEFAULT_PROVIDER,
    DEFAULT_THEME,
    ENV_NESTED,
    ENV_PREFIX,
    ConfigError,
    default_config_path,
    default_data_dir,
    normalize_host,
    read_config_file,
    xdg_config_home,
    xdg_data_home,
)

__all__ = [  # the places and the reader live in config_file (cheap to import); here too
    "DEFAULT_OLLAMA_MODEL",
    "DEFAULT_OLLAMA_URL",
    "ConfigError",
    "Settings",
    "default_config_path",
    "default_data_dir",
    "load_settings",
    "normalize_host",
    "xdg_config_home",
    "xdg_data_home",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class NumPredictSettings(_Section):
    """Reply limits (tokens) per call role: ``options.num_predict`` on Ollama,
    ``max_tokens`` on OpenAI-compatible servers. Without one a small model that loops
    can run for minutes on a real server. 0 means no limit for that role."""

    classify: int = Field(384, ge=0, description="routing (+ a short quiz answer)")
    assess: int = Field(192, ge=0, description="the 'are we done?' assessment")
    plan: int = Field(1024, ge=0, description="plans and goal decompositions")
    structured: int = Field(512, ge=0, description="any other structured call")
    step: int = Field(1024, ge=0, description="step answers and tool-call turns")
    final: int = Field(1536, ge=0, description="the final answer of a goal")


CallRole = Literal["classify", "assess", "plan", "structured", "step", "final"]

CALL_TIMEOUT_FACTOR = 5.0
"""Without ``model.call_timeout`` one model call may take this many ``model.timeout``s."""

SMALL_MODEL_BILLIONS = 3.0
"""Below this many parameters ``model.profile = "auto"`` picks the small profile."""


class ModelSettings(_Section):
    provider: Literal["ollama", "openai", "demo"] = DEFAULT_PROVIDER
    name: str = Field(DEFAULT_OLLAMA_MODEL, description="model used for every role")
    fast_name: str | None = Field(None, description="optional faster model for assess/classify")
    base_url: str | None = Field(None, description="server URL; else OLLAMA_HOST/OPENAI_BASE_URL")
    api_key: SecretStr | None = Field(None, description="OpenAI-compatible key (or OPENAI_API_KEY)")
    timeout: float = Field(
        120.0, gt=0, description="seconds a model request may wait for its next bytes"
    )
    call_timeout: float | None = Field(
        None,
        gt=0,
        description="wall-clock seconds one model call may take in all, however slowly "
        f"the server trickles (default: {CALL_TIMEOUT_FACTOR:g} x timeout)",
    )
    temperature: float = Field(0.2, ge=0, le=2)
    num_ctx: int | None = Field(8192, ge=512, description="Ollama context window")
    context_window: int | None = Field(
        None,
        ge=512,
        description="context window (tokens) of an OpenAI-compatible server that does not "
        "report it in /v1/models (Ollama: model.num_ctx)",
    )
    structured_retries: int = Field(2, ge=0, le=5, description="re-asks after invalid JSON")
    num_predict: NumPredictSettings = Field(default_factory=NumPredictSettings)
    profile: Literal["auto", "small", "default"] = Field(
        "auto", description="small: the tight configuration for < ~3B models; auto: by size"
    )
    think: bool | Literal["low", "medium", "high"] = Field(
        False,
        description="Ollama 'think' for step and final-answer calls of a model whose "
        "/api/show lists the thinking capability (classification and structured calls "
        "always get false; a model without the capability gets no 'think'). Off by "
        "default: at 10-20 tokens/s a 7B model's trace (500-2,000 tokens) adds 30-120 s "
        "to every step, and the loop already plans and assesses in calls of its own",
    )
    thinking_allowance: int = Field(
        1024,
        ge=0,
        description="tokens added to a call's num_predict when the model thinks (think on, "
        "or a model seen thinking anyway): the trace counts toward the limit, and a 7B "
        "model's trace is often 500-1,000 tokens; a reply cut while still thinking is "
        "retried once with it",
    )

    def resolved_base_url(self) -> str:
        if self.base_url:
            return normalize_host(self.base_url) if self.provider == "ollama" else self.base_url
        if self.provider == "openai":
            return os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        host = os.environ.get("OLLAMA_HOST")
        return normalize_host(host) if host else DEFAULT_OLLAMA_URL

    def resolved_api_key(self) -> str | None:
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        return os.environ.get("OPENAI_API_KEY")

    @property
    def display_name(self) -> str:
        return "demo model" if self.provider == "demo" else self.name

    def resolved_call_timeout(self) -> float:
        """The wall-clock cap of one model call: ``call_timeout``, else a multiple of
        ``timeout`` (the wait for the first token plus a slow reply's generation)."""
        if self.call_timeout is not None:
            return float(self.call_timeout)
        return CALL_TIMEOUT_FACTOR * float(self.timeout)


class RunSettings(_Section):
    """Bounds of one run (a request, a resume, a scheduled batch of goals). Past either
    the run fails (``run.failed``) and its goals are suspended, to be resumed."""

    deadline: float = Field(
        3600.0, ge=0, description="wall-clock seconds a run may take (0: no deadline)"
    )
    max_model_calls: int = Field(
        80,
        ge=0,
        description="model calls a run may make, re-asks included (0: no cap). A 7B model on "
        "a laptop (10-20 tokens/s) takes ~20 s a call: 80 calls is ~30 minutes, several "
        "plan/execute rounds of a real request; 159 calls measured ~1 hour",
    )
    max_tokens: int = Field(
        300_000,
        ge=0,
        description="tokens a run may spend, input + output of every call, re-asks included "
        "(0: no cap). At ~150 tokens/s prompt evaluation and 10-20 tokens/s generation on a "
        "laptop, 300k (mostly prompt) is ~30-40 minutes, in line with max_model_calls",
    )


class LoopSettings(_Section):
    max_iterations: int = Field(8, ge=1, le=50)
    agentic_max_iterations: int = Field(3, ge=1, le=10)
    parallelism: Literal["parallel", "dependency"] = "parallel"
    max_parallel_steps: int = Field(4, ge=1, le=16)
    max_parallel_goals: int = Field(2, ge=1, le=8)
    step_tool_budget: int = Field(8, ge=1, le=50, description="tool calls per step")


class GoalSettings(_Section):
    """What goals get by default."""

    budget: str = Field(
        "",
        description="default caps of each new goal, as --budget takes them: "
        "'calls=40,tokens=200k,time=30m' (any of the three; '' or a missing key: no cap). "
        "A goal that reaches a cap is suspended (reason 'budget: tokens 200k') and resumes "
        "with a raised cap",
    )

    @model_validator(mode="after")
    def _readable(self) -> GoalSettings:
        if self.budget.strip():
            from soothe.engine.goal_args import parse_budget

            parse_budget(self.budget)  # a ValueError names the bad part
        return self

    def default_budget(self) -> GoalBudget:
        from soothe.engine.goal_args import parse_budget
        from soothe.engine.goal_contract import GoalBudget

        return parse_budget(self.budget) if self.budget.strip() else GoalBudget()


class ProjectionSettings(_Section):
    max_goals: int = Field(5, ge=1)
    max_steps_per_goal: int = Field(10, ge=1)
    max_ledger_chars: int = Field(4000, ge=100)
    max_ledger_messages: int = Field(20, ge=1)
    max_lineage_chars: int = Field(2000, ge=100)


class StorageSettings(_Section):
    data_dir: Path = Field(default_factory=default_data_dir)
    backend: Literal["sqlite", "postgresql"] = Field(
        "sqlite", description="sqlite: one process per data dir; postgresql: many workers"
    )
    dsn: str = Field("", description="PostgreSQL DSN for backend = postgresql")

    @property
    def db_path(self) -> Path:
        return self.data_dir / "soothe.db"


RuleValue = Literal["ask", "auto", "deny"]


class ToolSettings(_Section):
    workspace: Path | None = Field(None, description="tool root; default the current directory")
    approval: Literal["ask", "auto", "deny"] = "ask"
    clarify: Literal["ask", "auto", "fail"] = "ask"
    max_output_chars: int = Field(4000, ge=200)
    max_read_bytes: int = Field(200_000, ge=1000)
    rules: dict[str, RuleValue | dict[str, RuleValue]] = Field(
        default_factory=dict,
        description="tool name or 'server.*' -> ask|auto|deny; run_shell = {PROGRAM = ...}",
    )
    shell_network: bool = Field(False, description="let run_shell reach the network")

    def resolved_workspace(self) -> Path:
        return (self.workspace or Path.cwd()).expanduser().resolve()


class McpServerSettings(_Section):
    """One ``[mcp.servers.NAME]`` table: a stdio command, or the URL of a streamable
    HTTP server."""

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    startup_timeout: float = Field(20.0, gt=0, description="seconds to start and list tools")
    call_timeout: float = Field(60.0, gt=0, description="seconds per tool call")

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (stdio) or url (streamable HTTP)")
        return self


class McpSettings(_Section):
    servers: dict[str, McpServerSettings] = Field(default_factory=dict)


class MemorySettings(_Section):
    cross_thread: bool = True
    max_recall: int = Field(3, ge=0, le=20)


class UISettings(_Section):
    theme: str = DEFAULT_THEME
    keymap: dict[str, str] = Field(default_factory=dict, description="binding id -> keys")
    notify: Literal["bell", "osc9", "osc777", "off"] = Field(
        "bell",
        description="when a run ends or a question waits: terminal bell, desktop "
        "notification (OSC 9 / OSC 777), or nothing",
    )


_FILE_DATA: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "soothe_config_file_data", default=None
)


class _FileSource(PydanticBaseSettingsSource):
    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return (_FILE_DATA.get() or {}).get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(_FILE_DATA.get() or {})


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED,
        extra="forbid",
        validate_assignment=True,
    )

    model: ModelSettings = Field(default_factory=ModelSettings)
    loop: LoopSettings = Field(default_factory=LoopSettings)
    run: RunSettings = Field(default_factory=RunSettings)
    goals: GoalSettings = Field(default_factory=GoalSettings)
    projection: ProjectionSettings = Field(default_factory=ProjectionSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    ui: UISettings = Field(default_factory=UISettings)
    config_file: Path | None = Field(None, exclude=True)
    _profile: Any = PrivateAttr(default=None)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _FileSource(settings_cls))

    def effective(self, profile: ProfileLike | None) -> Settings:
        """These settings as the engine runs them under ``profile`` (a resolved
        ``ModelProfile`` or anything with a ``small`` flag).

        The small profile: 2 tool calls per step, one step at a time (dependency mode),
        one agentic round, no cross-thread recall. Read-only tools for read-only
        requests and prompts without examples are decided where those live, from
        ``profile.small``. The default profile returns ``self`` unchanged."""
        if profile is None or not profile.small:
            out = self.model_copy()
            out.config_file = self.config_file
            out._profile = profile
            return out
        loop = self.loop.model_copy(
            update={
                "step_tool_budget": min(self.loop.step_tool_budget, SMALL_TOOL_BUDGET),
                "max_parallel_steps": 1,
                "parallelism": "dependency",
                "agentic_max_iterations": 1,
            }
        )
        memory = self.memory.model_copy(update={"cross_thread": False})
        out = self.model_copy(update={"loop": loop, "memory": memory})
        out.config_file = self.config_file
        out._profile = profile
        return out

    @property
    def resolved_profile(self) -> ProfileLike | None:
        """The profile these settings were made ``effective`` under (None: not resolved,
        i.e. the configured settings as they are)."""
        return self._profile

    @property
    def small_model(self) -> bool:
        """True under the small profile: prompt builders drop examples, read-only
        requests get read-only tools."""
        return self._profile is not None and bool(self._profile.small)

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain data, secrets replaced by ``***``."""
        data = self.model_dump(mode="json", exclude={"config_file"})
        if self.model.api_key is not None:
            data["model"]["api_key"] = "***"
        if self.storage.dsn:
            from soothe.engine.context.store_pg import redact_dsn

            data["storage"]["dsn"] = redact_dsn(self.storage.dsn)
        return data


SMALL_TOOL_BUDGET = 2
"""Tool calls per step under the small profile."""


class ProfileLike(Protocol):
    @property
    def small(self) -> bool: ...


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _dig(data: dict[str, Any], loc: tuple[Any, ...]) -> bool:
    node: Any = data
    for part in loc:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


class _Alone(Settings):
    """``Settings`` validated from what it is given only (no environment, no file): one
    source checked on its own, so a wrong type is refused even where a higher source
    would have replaced it (``model = 5`` in the file under ``--provider demo``), and
    blamed on that source."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


SANDBOX_MODES = ("auto", "landlock", "none")
"""What ``SOOTHE_SANDBOX`` may say (``sandbox.detect``): the best confinement the machine
has, Landlock only, or none."""


def env_variable(loc: tuple[Any, ...]) -> str | None:
    """The ``SOOTHE_*`` variable (as spelt in the environment) that set the key at
    ``loc``: ``SOOTHE_MODEL__TIMEOUT`` for ``model.timeout``, else the ``SOOTHE_MODEL``
    JSON object holding it; None when no variable did."""
    names = {name.lower(): name for name in os.environ}
    for end in range(len(loc), 0, -1):
        wanted = (ENV_PREFIX + ENV_NESTED.join(str(p) for p in loc[:end])).lower()
        if wanted in names:
            return names[wanted]
    return None


def _env_data() -> dict[str, Any]:
    """The settings the ``SOOTHE_*`` variables give, parsed as ``Settings`` reads them;
    ConfigError naming the variable when one cannot be parsed (bad JSON)."""
    from pydantic_settings import EnvSettingsSource, SettingsError

    try:
        return dict(EnvSettingsSource(Settings)())
    except SettingsError as exc:
        field = str(exc).split('"')[1] if '"' in str(exc) else ""
        name = env_variable((field,)) or f"{ENV_PREFIX}{field.upper()}"
        raise ConfigError(f"config error: {name}: {field}: not valid JSON") from None


def _check_sandbox() -> None:
    value = os.environ.get("SOOTHE_SANDBOX")
    if value is not None and value.strip() and value.strip().lower() not in SANDBOX_MODES:
        shown = ", ".join(SANDBOX_MODES)
        raise ConfigError(f"config error: SOOTHE_SANDBOX: {value.strip()!r} is not one of {shown}")


def _problem(exc: ValidationError) -> tuple[tuple[Any, ...], str, str]:
    """(loc, dotted key, problem) of the first error."""
    err = exc.errors()[0]
    loc = tuple(p for p in err["loc"] if p != "__root__")
    key = ".".join(str(p) for p in loc) or "(top level)"
    problem = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
    return loc, key, problem


def load_settings(
    config_path: Path | str | None = None,
    overrides: dict[str, Any] | None = None,
) -> Settings:
    """Load settings; raise ConfigError with a one-line message on any problem.

    Each source is validated on its own first (the file, the ``SOOTHE_*`` variables, the
    command line), so a wrong value is refused whatever another source sets, and the
    message names where it came from: the file, the variable, or the command line."""
    overrides = overrides or {}
    path, file_data = read_config_file(config_path)
    _check_sandbox()
    env_data = _env_data()
    for data, source in ((file_data, "file"), (env_data, "env"), (overrides, "command line")):
        if not data:
            continue
        try:
            _Alone(**data)
        except ValidationError as exc:
            loc, key, problem = _problem(exc)
            if source == "file":
                where = str(path)
            elif source == "env":
                where = env_variable(loc) or "environment"
            else:
                where = source
            raise ConfigError(f"config error: {where}: {key}: {problem}") from None
    token = _FILE_DATA.set(file_data)
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:  # only what no source shows alone (values combined)
        loc, key, problem = _problem(exc)
        if _dig(overrides, loc):
            where = "command line"
        elif variable := env_variable(loc):
            where = variable
        else:
            where = str(path)
        raise ConfigError(f"config error: {where}: {key}: {problem}") from None
    finally:
        _FILE_DATA.reset(token)
    settings.config_file = path if path.exists() else None
    return settings


def merge_overrides(*parts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in parts:
        out = _deep_merge(out, part)
    return out
