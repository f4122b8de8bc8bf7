"""The config file and its places, read without pydantic; what the first frame needs.

``Settings`` (``config.py``) validates every key, but building it imports
pydantic-settings and builds a dozen models: a few hundred milliseconds the first frame
must not wait for. This module holds what both need and is cheap to import: the XDG
places, the file reader (``read_config_file``, the same one-line ``ConfigError``), the
defaults the screen shows, and ``FrameConfig``: the theme, keymap, model and data dir read
from the same sources in the same order (command line, ``SOOTHE_*`` environment, the
file, defaults). ``FrameConfig`` never rejects a value; a value it cannot use counts as
unset, and the full ``Settings``, loaded after the first frame, is the authority: it
raises the clear error or replaces what the first frame showed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from soothe.engine.config import Settings

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
DEFAULT_OLLAMA_MODEL = "qwen2.5:7b"
DEFAULT_PROVIDER: Final[Literal["ollama"]] = "ollama"
DEFAULT_THEME = "soothe-dark"
PROVIDERS = ("ollama", "openai", "demo")
ENV_PREFIX = "SOOTHE_"
ENV_NESTED = "__"


class ConfigError(ValueError):
    """A bad config file or value; ``str()`` is one line fit for the user."""

    def cli_line(self) -> str:
        """The line the ``soothe`` command prints for it (then exits 2)."""
        return str(self).replace("config error:", "error: config:", 1)


def xdg_config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def xdg_data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def default_data_dir() -> Path:
    """``SOOTHE_DATA_DIR``, else ``$XDG_DATA_HOME/soothe``; like OLLAMA_HOST, a fallback
    that ``storage.data_dir`` (file, SOOTHE_STORAGE__DATA_DIR, --data-dir) overrides."""
    env = os.environ.get("SOOTHE_DATA_DIR")
    return Path(env).expanduser() if env else xdg_data_home() / "soothe"


def default_config_path() -> Path:
    env = os.environ.get("SOOTHE_CONFIG")
    return Path(env).expanduser() if env else xdg_config_home() / "soothe" / "config.toml"


def normalize_host(value: str) -> str:
    """Accept ``host:port``, ``host``, ``:port`` and full URLs alike (OLLAMA_HOST forms)."""
    value = value.strip().rstrip("/")
    if "://" not in value:
        value = "http://" + value
    scheme, rest = value.split("://", 1)
    if rest.startswith(":"):
        rest = "127.0.0.1" + rest
    if rest.startswith("0.0.0.0"):
        rest = "127.0.0.1" + rest[len("0.0.0.0") :]
    host = rest.split("/", 1)[0]
    if ":" not in host.rsplit("]", 1)[-1]:
        default_port = "11434" if scheme == "http" else "443"
        rest = host + ":" + default_port + rest[len(host) :]
    return f"{scheme}://{rest}"


def read_config_file(config_path: Path | str | None = None) -> tuple[Path, dict[str, Any]]:
    """(the file's path, its TOML tables); ``{}`` when the default file does not exist.

    ConfigError (one line naming the file) when it is not valid TOML, cannot be read, or
    was named (``--config``, ``SOOTHE_CONFIG``) and does not exist."""
    path = Path(config_path).expanduser() if config_path else default_config_path()
    explicit = config_path is not None or "SOOTHE_CONFIG" in os.environ
    if not path.exists():
        if explicit:
            raise ConfigError(f"config error: {path}: no such file")
        return path, {}
    import tomllib  # ~10 ms of regexes: only when there is a file to read

    try:
        return path, tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config error: {path}: not valid TOML ({exc})") from None
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start : exc.start + 1].hex()
        raise ConfigError(
            f"config error: {path}: not UTF-8 text (byte 0x{byte} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"config error: {path}: cannot read ({exc.strerror})") from None


def _env_value(section: str, key: str) -> Any:
    """``SOOTHE_SECTION__KEY`` (any case, as pydantic-settings matches it), else the key
    inside a ``SOOTHE_SECTION`` JSON object; None when neither is set."""
    nested = f"{ENV_PREFIX}{section}{ENV_NESTED}{key}".lower()
    whole = f"{ENV_PREFIX}{section}".lower()
    found: Any = None
    for name, value in os.environ.items():
        lowered = name.lower()
        if lowered == nested:
            return _maybe_json(value)
        if lowered == whole:
            table = _maybe_json(value)
            if isinstance(table, dict) and key in table:
                found = table[key]
    return found


def _maybe_json(value: str) -> Any:
    if value[:1] in "{[":
        import json

        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _pick(
    section: str, key: str, overrides: dict[str, Any], file_data: dict[str, Any]
) -> list[Any]:
    """The values set for ``section.key``, highest precedence first."""
    out = []
    for source in (overrides, None, file_data):
        if source is None:
            value = _env_value(section, key)
        else:
            table = source.get(section)
            value = table.get(key) if isinstance(table, dict) else None
        if value is not None:
            out.append(value)
    return out


def _first_str(values: list[Any], default: str, choices: tuple[str, ...] = ()) -> str:
    for value in values:
        if isinstance(value, str) and (not choices or value in choices):
            return value
    return default


@dataclass(frozen=True)
class FrameConfig:
    """What the screen shows before ``Settings`` is built, and how to build it.

    ``config_path`` and ``overrides`` are what the command line gave; ``load_settings()``
    builds the full, validated ``Settings`` from them (the engine-start worker does, after
    the first frame)."""

    theme: str = DEFAULT_THEME
    keymap: dict[str, str] = field(default_factory=dict)
    provider: str = DEFAULT_PROVIDER
    model_name: str = DEFAULT_OLLAMA_MODEL
    data_dir: Path = field(default_factory=default_data_dir)
    config_path: Path | str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def display_name(self) -> str:
        """The model as the status line names it (``ModelSettings.display_name``)."""
        return "demo model" if self.provider == "demo" else self.model_name

    @classmethod
    def read(
        cls, config_path: Path | str | None = None, overrides: dict[str, Any] | None = None
    ) -> FrameConfig:
        """From the command line's ``--config`` and overrides, the environment and the
        file. ConfigError only for a file that cannot be read as TOML (as ``Settings``)."""
        overrides = overrides or {}
        _, data = read_config_file(config_path)
        keymaps = [v for v in _pick("ui", "keymap", overrides, data) if isinstance(v, dict)]
        data_dirs = _pick("storage", "data_dir", overrides, data)
        data_dir = next((v for v in data_dirs if isinstance(v, str | Path)), None)
        return cls(
            theme=_first_str(_pick("ui", "theme", overrides, data), DEFAULT_THEME),
            keymap={
                str(k): v for k, v in (keymaps[0] if keymaps else {}).items() if isinstance(v, str)
            },
            provider=_first_str(
                _pick("model", "provider", overrides, data), DEFAULT_PROVIDER, PROVIDERS
            ),
            model_name=_first_str(_pick("model", "name", overrides, data), DEFAULT_OLLAMA_MODEL),
            data_dir=Path(data_dir) if data_dir is not None else default_data_dir(),
            config_path=config_path,
            overrides=overrides,
        )

    @classmethod
    def of(cls, settings: Settings) -> FrameConfig:
        """The frame values of settings already built (tests, callers that have them)."""
        return cls(
            theme=settings.ui.theme,
            keymap=dict(settings.ui.keymap),
            provider=settings.model.provider,
            model_name=settings.model.name,
            data_dir=settings.storage.data_dir,
            config_path=settings.config_file,
        )

    def load_settings(self) -> Settings:
        """The full ``Settings`` from the same sources; ConfigError on any bad value."""
        from soothe.engine.config import load_settings

        return load_settings(self.config_path, self.overrides)
