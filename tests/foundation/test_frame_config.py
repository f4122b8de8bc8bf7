"""FrameConfig: what the first frame reads without pydantic agrees with Settings, from the
same file, environment and command line; a bad file or value still gives one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from soothe import cli
from soothe.engine.config import load_settings
from soothe.engine.config_file import ConfigError, FrameConfig


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def frame_values(frame: FrameConfig) -> tuple[Any, ...]:
    return (frame.theme, frame.keymap, frame.provider, frame.model_name, frame.data_dir)


CASES = [
    ("", {}, {}),
    ('[ui]\ntheme = "soothe-dusk"\n[ui.keymap]\n"app.quit" = "ctrl+x"\n', {}, {}),
    (
        '[model]\nprovider = "openai"\nname = "gpt-x"\n[storage]\ndata_dir = "/srv/d"\n',
        {},
        {},
    ),
    (
        '[ui]\ntheme = "soothe-dusk"\n[model]\nname = "file-model"\n',
        {"SOOTHE_UI__THEME": "soothe-light", "soothe_model__name": "env-model"},
        {},
    ),
    (
        '[model]\nname = "file-model"\n',
        {"SOOTHE_MODEL__NAME": "env-model", "SOOTHE_DATA_DIR": "/env/fallback"},
        {"model": {"name": "cli-model", "provider": "demo"}, "storage": {"data_dir": "/cli"}},
    ),
    ("", {"SOOTHE_UI": '{"theme": "soothe-high-contrast", "keymap": {"a": "b"}}'}, {}),
    ("", {"SOOTHE_UI__KEYMAP": '{"app.help": "f2"}', "SOOTHE_MODEL__PROVIDER": "demo"}, {}),
]


@pytest.mark.parametrize(("toml", "env", "overrides"), CASES)
def test_frame_config_agrees_with_settings(
    isolated_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    toml: str,
    env: dict[str, str],
    overrides: dict[str, Any],
) -> None:
    path = write(isolated_env / "c.toml", toml)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    frame = FrameConfig.read(path, overrides)
    assert frame_values(frame) == frame_values(FrameConfig.of(load_settings(path, overrides)))
    assert frame.display_name == load_settings(path, overrides).model.display_name
    # and the settings it builds later are those
    assert frame.load_settings() == load_settings(path, overrides)


def test_frame_config_defaults_are_the_settings_defaults(isolated_env: Path) -> None:
    assert frame_values(FrameConfig.read()) == frame_values(FrameConfig.of(load_settings()))
    assert frame_values(FrameConfig()) == frame_values(FrameConfig.of(load_settings()))


def test_a_value_the_frame_cannot_use_counts_as_unset(isolated_env: Path) -> None:
    path = write(isolated_env / "c.toml", '[ui]\ntheme = 3\n[model]\nprovider = "nope"\n')
    frame = FrameConfig.read(path)
    assert (frame.theme, frame.provider) == ("soothe-dark", "ollama")
    with pytest.raises(ConfigError):  # the full settings reject it
        frame.load_settings()


@pytest.mark.parametrize(
    ("content", "needle"),
    [("[model\n", "not valid TOML"), (None, "no such file")],
    ids=["bad-toml", "missing"],
)
def test_an_unreadable_file_fails_before_any_screen(
    isolated_env: Path, capsys: pytest.CaptureFixture[str], content: str | None, needle: str
) -> None:
    path = isolated_env / "conf.toml"
    if content is not None:
        write(path, content)
    assert cli.main(["--config", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"error: config: {path}: ") and needle in err


async def test_a_bad_value_exits_2_with_the_one_line_after_the_first_frame(
    isolated_env: Path,
) -> None:
    from soothe.app.main import SootheApp

    path = write(isolated_env / "conf.toml", '[loop]\nmax_iterations = "lots"\n')
    painted: list[bool] = []
    app = SootheApp(
        FrameConfig.read(path),
        animate=False,
        on_first_frame=lambda app: painted.append(True),
    )
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(200):
            if not app.is_running:
                break
            await pilot.pause(0.05)
    assert painted == [True]
    assert app.return_code == 2
    assert app.config_error.startswith(f"error: config: {path}: loop.max_iterations: ")
    assert "valid integer" in app.config_error and "\n" not in app.config_error
    assert app.session is None  # no engine was started on a bad config


def test_the_workbench_command_does_not_build_settings_before_the_first_frame(
    isolated_env: Path,
) -> None:
    """The command's path to the app imports no pydantic-settings (its ~0.3 s is spent
    after the first frame, in the engine-start worker)."""
    code = (
        "import sys\n"
        "import soothe.app.tui, soothe.app.main, soothe.cli\n"
        "from soothe.engine.config_file import FrameConfig\n"
        "FrameConfig.read()\n"
        "print(sorted(m for m in sys.modules if m.startswith('pydantic_settings')\n"
        "    or m == 'soothe.engine.config'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
