"""Server checks: is the model server up, which version, which models, is ours there.

Ollama: ``/api/version``, ``/api/tags`` and ``/api/show`` (tool capability, when the
server reports capabilities; size and trained context). OpenAI-compatible: ``/models``
under the base URL (there is no version endpoint; the window where the server reports
it, LM Studio's native ``/api/v0/models/{id}`` when ``/models`` does not). Every
failure becomes a one-line ``error`` and a ``fix``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from soothe.engine.config import ModelSettings
from soothe.engine.llm.errors import LLMError, ModelErrorKind, map_error
from soothe.engine.llm.profile import ModelInfo

__all__ = ["CHECK_TIMEOUT_CAP", "ServerStatus", "check_server", "model_present"]

CHECK_TIMEOUT_CAP = 5.0
"""A health check should answer fast; a server that takes longer counts as down."""


@dataclass
class ServerStatus:
    provider: str
    base_url: str
    model: str
    reachable: bool = False
    version: str | None = None
    models: list[str] = field(default_factory=list)
    model_present: bool | None = None
    fast_model: str | None = None
    fast_model_present: bool | None = None
    tools: bool | None = None
    """Tool support of the chosen model, when the server says (Ollama capabilities)."""
    info: ModelInfo = field(default_factory=ModelInfo)
    """What the server says about the chosen model: size, trained context and
    capabilities (Ollama ``/api/show``), the window (OpenAI-compatible ``/models``)."""
    error: str | None = None
    fix: str | None = None
    kind: ModelErrorKind | None = None

    @property
    def ok(self) -> bool:
        if self.provider == "demo":
            return True
        return (
            self.reachable
            and bool(self.model_present)
            and self.fast_model_present is not False
            and self.tools is not False
        )


def _norm(name: str) -> str:
    return name if ":" in name else f"{name}:latest"


def model_present(name: str, available: list[str], provider: str) -> bool:
    """Ollama treats ``x`` and ``x:latest`` as one model; OpenAI ids match exactly."""
    if provider == "ollama":
        return _norm(name) in {_norm(m) for m in available}
    return name in available


async def check_server(settings: ModelSettings) -> ServerStatus:
    """Ask the configured server about itself and the configured model(s)."""
    status = ServerStatus(
        provider=settings.provider,
        base_url="" if settings.provider == "demo" else settings.resolved_base_url(),
        model=settings.display_name,
        fast_model=settings.fast_name if settings.provider != "demo" else None,
    )
    if settings.provider == "demo":
        status.reachable = True
        status.model_present = True
        return status
    import httpx

    timeout = httpx.Timeout(min(settings.timeout, CHECK_TIMEOUT_CAP))
    try:
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=True) as client:
            if settings.provider == "ollama":
                await _check_ollama(client, status)
            else:
                await _check_openai(client, status, settings.resolved_api_key())
    except LLMError as err:
        _fail(status, err)
        return status
    except Exception as exc:
        mapped = map_error(
            exc, provider=status.provider, base_url=status.base_url, model=status.model
        )
        _fail(status, mapped)
        return status
    _judge(status)
    return status


def _without_fix(message: str) -> str:
    """The problem part of an LLMError message (the doctor prints the fix on its own)."""
    if message.endswith(")") and " (" in message:
        return message[: message.rindex(" (")]
    return message


def _fail(status: ServerStatus, err: LLMError) -> None:
    status.error = _without_fix(err.message)
    status.kind = err.kind
    if err.kind in (ModelErrorKind.unreachable, ModelErrorKind.timeout):
        status.reachable = False
        if status.provider == "ollama":
            status.fix = "start Ollama: ollama serve (or set model.base_url / OLLAMA_HOST)"
        else:
            status.fix = "start the server, or set model.base_url to where it listens"
    elif err.kind == ModelErrorKind.bad_credentials:
        status.reachable = True
        status.fix = "set model.api_key in the config file, or OPENAI_API_KEY"
    else:
        status.fix = "check model.base_url points at the model server"


def _judge(status: ServerStatus) -> None:
    status.model_present = model_present(status.model, status.models, status.provider)
    if status.fast_model:
        status.fast_model_present = model_present(status.fast_model, status.models, status.provider)
    missing = [
        name
        for name, present in (
            (status.model, status.model_present),
            (status.fast_model, status.fast_model_present),
        )
        if name and present is False
    ]
    if missing:
        status.kind = ModelErrorKind.model_not_found
        names = " and ".join(f"'{m}'" for m in missing)
        if status.provider == "ollama":
            status.error = f"model {names} not installed in Ollama"
            status.fix = " && ".join(f"ollama pull {m}" for m in missing)
        else:
            status.error = f"model {names} not offered by the server"
            shown = ", ".join(status.models[:8]) or "none"
            status.fix = f"set model.name to one of: {shown}"
        return
    if status.tools is False:
        status.kind = ModelErrorKind.no_tool_support
        status.error = f"model '{status.model}' does not support tool calls"
        status.fix = "choose a tool-capable model (e.g. ollama pull qwen2.5:7b) and set model.name"


async def _get_json(client: Any, method: str, url: str, **kwargs: Any) -> Any:
    response = await client.request(method, url, **kwargs)
    response.raise_for_status()
    return response.json()


async def _check_ollama(client: Any, status: ServerStatus) -> None:
    import httpx

    base = status.base_url.rstrip("/")
    try:
        version = await _get_json(client, "GET", f"{base}/api/version")
    except httpx.HTTPStatusError as exc:
        status.reachable = True
        raise LLMError(
            ModelErrorKind.bad_request,
            f"{base} answered HTTP {exc.response.status_code} to /api/version: "
            "it does not look like an Ollama server",
        ) from None
    status.reachable = True
    status.version = str(version.get("version")) if isinstance(version, dict) else None
    tags = await _get_json(client, "GET", f"{base}/api/tags")
    status.models = sorted(
        str(m.get("name") or m.get("model")) for m in tags.get("models", []) if isinstance(m, dict)
    )
    if not model_present(status.model, status.models, "ollama"):
        return
    try:
        show = await _get_json(client, "POST", f"{base}/api/show", json={"model": status.model})
    except httpx.HTTPError:
        return  # capability check is a bonus; the model is there
    from soothe.engine.llm.profile import model_info_from_show

    status.info = model_info_from_show(show)
    status.tools = status.info.can("tools")


async def _check_openai(client: Any, status: ServerStatus, api_key: str | None) -> None:
    import httpx

    base = status.base_url.rstrip("/")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        data = await _get_json(client, "GET", f"{base}/models", headers=headers)
    except httpx.HTTPStatusError as exc:
        status.reachable = True
        code = exc.response.status_code
        if code in (401, 403):
            raise LLMError(
                ModelErrorKind.bad_credentials,
                f"the server at {base} rejected the API key (HTTP {code})",
            ) from None
        raise LLMError(
            ModelErrorKind.bad_request,
            f"the server at {base} answered HTTP {code} for /models (does base_url end in /v1?)",
        ) from None
    status.reachable = True
    items = data.get("data", []) if isinstance(data, dict) else []
    status.models = sorted(str(m.get("id")) for m in items if isinstance(m, dict) and m.get("id"))
    from soothe.engine.llm.profile import loaded_window, model_info_from_models, models_path

    if status.model in status.models:
        info = model_info_from_models(data, status.model, models_path(base))
        status.info = await loaded_window(client, base, status.model, headers, info)
