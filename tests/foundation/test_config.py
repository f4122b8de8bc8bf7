"""Settings: defaults, file, env and CLI precedence, provider hosts, errors, secrets, XDG."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from soothe import cli
from soothe.engine.config import (
    DEFAULT_OLLAMA_MODEL,
    DEFAULT_OLLAMA_URL,
    ConfigError,
    Settings,
    default_config_path,
    load_settings,
)

SECRET = "sk-very-secret-0123456789"
README = Path(__file__).resolve().parents[2] / "README.md"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def xdg_config_file(home: Path) -> Path:
    return home / "xdg-config" / "soothe" / "config.toml"


def config_error(path: Path | None = None, overrides: dict[str, Any] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        load_settings(path, overrides)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("config error: ")
    return message


def test_defaults(isolated_env: Path) -> None:
    s = load_settings()
    assert s.config_file is None
    assert s.model.provider == "ollama"
    assert s.model.name == DEFAULT_OLLAMA_MODEL
    assert s.model.base_url is None and s.model.api_key is None
    assert s.model.resolved_base_url() == DEFAULT_OLLAMA_URL
    assert s.model.resolved_api_key() is None
    assert (s.model.timeout, s.model.temperature, s.model.num_ctx) == (120.0, 0.2, 8192)
    assert (s.loop.max_iterations, s.loop.agentic_max_iterations) == (8, 3)
    assert (s.projection.max_goals, s.projection.max_steps_per_goal) == (5, 10)
    assert (s.projection.max_ledger_chars, s.projection.max_ledger_messages) == (4000, 20)
    assert s.projection.max_lineage_chars == 2000
    assert s.storage.data_dir == isolated_env / "xdg-data" / "soothe"
    assert s.storage.db_path == isolated_env / "xdg-data" / "soothe" / "soothe.db"
    assert (s.tools.approval, s.tools.clarify, s.tools.workspace) == ("ask", "ask", None)
    assert s.tools.resolved_workspace() == Path.cwd().resolve()
    assert s.memory.cross_thread is True
    assert s.ui.theme == "soothe-dark"


def test_file_in_xdg_config_home_is_read(isolated_env: Path) -> None:
    path = write(
        xdg_config_file(isolated_env),
        '[model]\nname = "llama3.2:3b"\ntimeout = 30\n'
        '[loop]\nmax_iterations = 4\n[ui.keymap]\nquit = "ctrl+q"\n',
    )
    s = load_settings()
    assert s.config_file == path
    assert (s.model.name, s.model.timeout, s.loop.max_iterations) == ("llama3.2:3b", 30.0, 4)
    assert s.ui.keymap == {"quit": "ctrl+q"}
    assert s.loop.agentic_max_iterations == 3, "keys absent from the file keep their default"


def test_explicit_file_and_soothe_config_env(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(xdg_config_file(isolated_env), '[model]\nname = "from-xdg"\n')
    explicit = write(tmp_path / "explicit.toml", '[model]\nname = "from-explicit"\n')
    via_env = write(tmp_path / "via-env.toml", '[model]\nname = "from-env-path"\n')
    assert load_settings(explicit).model.name == "from-explicit"
    assert load_settings(str(explicit)).model.name == "from-explicit"
    monkeypatch.setenv("SOOTHE_CONFIG", str(via_env))
    assert default_config_path() == via_env
    assert load_settings().model.name == "from-env-path"
    assert load_settings().config_file == via_env
    assert load_settings(explicit).model.name == "from-explicit"


def test_env_overrides_file_and_cli_overrides_env(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(
        tmp_path / "c.toml", '[model]\nname = "file"\ntimeout = 5\n[loop]\nmax_iterations = 2\n'
    )
    assert load_settings(path).model.name == "file"

    monkeypatch.setenv("SOOTHE_MODEL__NAME", "env")
    monkeypatch.setenv("SOOTHE_LOOP__MAX_ITERATIONS", "6")
    s = load_settings(path)
    assert (s.model.name, s.loop.max_iterations) == ("env", 6)
    assert s.model.timeout == 5.0, "the rest of the file's section still applies"

    s = load_settings(path, {"model": {"name": "cli"}, "loop": {"max_iterations": 9}})
    assert (s.model.name, s.loop.max_iterations) == ("cli", 9)
    assert s.model.timeout == 5.0


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("example.lan:11500", "http://example.lan:11500"),
        ("http://example.lan:11500", "http://example.lan:11500"),
        ("http://example.lan:11500/", "http://example.lan:11500"),
        ("example.lan", "http://example.lan:11434"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("0.0.0.0:9999", "http://127.0.0.1:9999"),
        ("http://0.0.0.0:9999", "http://127.0.0.1:9999"),
        (":7000", "http://127.0.0.1:7000"),
        ("https://ollama.example.com", "https://ollama.example.com:443"),
    ],
)
def test_ollama_host_forms(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, host: str, expected: str
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", host)
    assert load_settings().model.resolved_base_url() == expected
    explicit = load_settings(None, {"model": {"base_url": "127.0.0.1:1234"}})
    assert explicit.model.resolved_base_url() == "http://127.0.0.1:1234", "config beats env"


def test_openai_base_url_and_key(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    openai = {"model": {"provider": "openai", "name": "gpt-x"}}
    assert load_settings(None, openai).model.resolved_base_url() == "https://api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OLLAMA_HOST", "elsewhere:1")
    s = load_settings(None, openai)
    assert s.model.resolved_base_url() == "http://127.0.0.1:8080/v1"
    assert s.model.resolved_api_key() == SECRET
    configured = load_settings(
        None, {"model": {**openai["model"], "base_url": "http://h:1/v1", "api_key": "sk-cfg"}}
    )
    assert configured.model.resolved_base_url() == "http://h:1/v1"
    assert configured.model.resolved_api_key() == "sk-cfg"


def test_bad_type_in_file_is_one_line_naming_file_and_key(
    isolated_env: Path, tmp_path: Path
) -> None:
    path = write(tmp_path / "bad.toml", '[model]\ntimeout = "soon"\n')
    message = config_error(path)
    assert str(path) in message
    assert "model.timeout" in message


def test_out_of_range_value_in_file(isolated_env: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "bad.toml", "[loop]\nmax_iterations = 0\n")
    message = config_error(path)
    assert str(path) in message and "loop.max_iterations" in message


def test_bad_env_value_names_the_variable(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOOTHE_MODEL__TIMEOUT", "never")
    message = config_error()
    assert "SOOTHE_MODEL__TIMEOUT" in message and "model.timeout" in message


def test_bad_cli_value_says_command_line(isolated_env: Path) -> None:
    message = config_error(None, {"loop": {"max_iterations": 0}})
    assert "command line" in message and "loop.max_iterations" in message


@pytest.mark.parametrize(
    ("text", "key"),
    [('[model]\nnmae = "x"\n', "model.nmae"), ("colour = 1\n", "colour")],
    ids=["in-section", "top-level"],
)
def test_unknown_key(isolated_env: Path, tmp_path: Path, text: str, key: str) -> None:
    path = write(tmp_path / "unknown.toml", text)
    message = config_error(path)
    assert str(path) in message
    assert f"{key}: unknown key" in message


def test_bad_toml(isolated_env: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "broken.toml", '[model\nname = "x"\n')
    message = config_error(path)
    assert str(path) in message and "not valid TOML" in message


def test_missing_explicit_file(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nope.toml"
    assert "no such file" in config_error(missing)
    assert str(missing) in config_error(missing)
    monkeypatch.setenv("SOOTHE_CONFIG", str(missing))
    assert "no such file" in config_error()


def test_missing_default_file_is_fine(isolated_env: Path) -> None:
    assert not xdg_config_file(isolated_env).exists()
    assert load_settings().config_file is None


def test_masked_hides_the_key(isolated_env: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "c.toml", f'[model]\nprovider = "openai"\napi_key = "{SECRET}"\n')
    s = load_settings(path)
    assert s.model.resolved_api_key() == SECRET
    masked = s.masked()
    assert masked["model"]["api_key"] == "***"
    assert SECRET not in json.dumps(masked)
    assert SECRET not in repr(s) and SECRET not in str(s.model)
    assert load_settings().masked()["model"]["api_key"] is None


@pytest.mark.parametrize(
    "text",
    [
        f'[model]\napi_key = "{SECRET}"\ntimeout = "x"\n',
        f'[model]\napi_key = "{SECRET}"\n[loop]\nmax_iterations = -1\n',
        f'[model]\napikey = "{SECRET}"\n',
        f'[model]\nprovider = "{SECRET}"\n',
        f'[model]\nname = ["{SECRET}"]\n',
        f"[model]\napi_key = {SECRET}\n",
        f'[model]\napi_key = "{SECRET}\n',
    ],
    ids=["bad-type", "other-section", "misspelt-key", "bad-enum", "bad-list", "unquoted", "open"],
)
def test_config_error_never_shows_the_secret(isolated_env: Path, tmp_path: Path, text: str) -> None:
    message = config_error(write(tmp_path / "secret.toml", text))
    assert SECRET not in message
    assert "sk-very" not in message


def test_config_error_never_shows_a_secret_from_env(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOOTHE_MODEL__API_KEY", SECRET)
    monkeypatch.setenv("SOOTHE_MODEL__PROVIDER", SECRET)
    assert SECRET not in config_error()


def test_config_show_through_the_cli(
    isolated_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(xdg_config_file(isolated_env), f'[model]\nname = "m1"\napi_key = "{SECRET}"\n')
    monkeypatch.setenv("SOOTHE_LOOP__MAX_ITERATIONS", "5")
    assert cli.main(["config", "show", "--model", "m2"]) == 0
    out, err = capsys.readouterr()
    shown = json.loads(out)
    assert shown["model"]["name"] == "m2"
    assert shown["model"]["api_key"] == "***"
    assert shown["loop"]["max_iterations"] == 5
    assert shown["storage"]["data_dir"] == str(isolated_env / "xdg-data" / "soothe")
    assert set(shown) == {
        "model",
        "loop",
        "run",
        "goals",
        "projection",
        "storage",
        "tools",
        "memory",
        "mcp",
        "ui",
    }
    assert SECRET not in out and SECRET not in err
    assert f"# from {path}" in err


def test_config_show_default_action(isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["config"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["model"]["name"] == DEFAULT_OLLAMA_MODEL
    assert err == ""


def test_xdg_dirs_are_honoured(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_config_path() == tmp_path / "cfg" / "soothe" / "config.toml"
    write(tmp_path / "cfg" / "soothe" / "config.toml", '[ui]\ntheme = "plain"\n')
    s = load_settings()
    assert s.ui.theme == "plain"
    assert s.storage.data_dir == tmp_path / "data" / "soothe"


def test_without_xdg_vars_home_is_used(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_config_path() == isolated_env / ".config" / "soothe" / "config.toml"
    assert load_settings().storage.data_dir == isolated_env / ".local" / "share" / "soothe"


def test_soothe_data_dir_is_a_fallback_for_storage_data_dir(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOOTHE_DATA_DIR", str(tmp_path / "env-data"))
    assert load_settings().storage.data_dir == tmp_path / "env-data"
    assert load_settings().storage.db_path == tmp_path / "env-data" / "soothe.db"
    path = write(tmp_path / "c.toml", f'[storage]\ndata_dir = "{tmp_path / "file-data"}"\n')
    assert load_settings(path).storage.data_dir == tmp_path / "file-data"
    monkeypatch.setenv("SOOTHE_STORAGE__DATA_DIR", str(tmp_path / "nested-env"))
    assert load_settings(path).storage.data_dir == tmp_path / "nested-env"
    cli_dir = {"storage": {"data_dir": str(tmp_path / "cli")}}
    assert load_settings(path, cli_dir).storage.data_dir == tmp_path / "cli"


def _settings_keys() -> dict[str, Any]:
    keys: dict[str, Any] = {}
    for section, field in Settings.model_fields.items():
        if field.exclude:
            continue
        model = field.annotation
        for key, sub in model.model_fields.items():  # type: ignore[union-attr]
            keys[f"{section}.{key}"] = sub
    return keys


def _toml_literal(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    return None


def test_readme_documents_every_key(isolated_env: Path) -> None:
    """The Configuration table in README.md lists every key in config.py, with its default."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("\n## Configuration\n") :]
    section = section[: section.find("\n## ", 1) if "\n## " in section[1:] else None]
    rows = dict(re.findall(r"^\|\s*`([a-z_]+\.[a-z_]+)`\s*\|\s*([^|]*?)\s*\|", section, flags=re.M))
    keys = _settings_keys()
    assert set(keys) - set(rows) == set(), "add these keys to README.md ## Configuration"
    assert set(rows) - set(keys) == set(), "README.md documents keys that do not exist"
    for key, field in keys.items():
        if field.default_factory is not None:
            continue
        literal = _toml_literal(field.default)
        expected = f"`{literal}`" if literal is not None else "unset"
        assert rows[key].startswith(expected), f"README default of {key}: want {expected}"
