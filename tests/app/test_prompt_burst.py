"""Keys that reach the prompt in one burst (a fast typist, key repeat, tmux send-keys) are
applied in the order they came, bound keys (ctrl+j, enter, backspace) included; and tab
on an @path that it has just completed to a folder goes into the folder."""

from __future__ import annotations

from pathlib import Path

from textual import events

from soothe.widgets.prompt_input import workspace_paths
from tests.app.real_harness import until
from tests.app.test_prompt import _Host


def _burst(app: _Host, *keys: str) -> None:
    """Post every key to the app at once, as the driver does with one read of the terminal
    (Pilot.press lets the app run between keys, which hides ordering bugs)."""
    for key in keys:
        character = {"ctrl+j": "\n", "enter": "\r", "tab": "\t", "backspace": "\x7f"}.get(
            key, key if len(key) == 1 else None
        )
        app.post_message(events.Key(key, character))


async def test_a_burst_with_ctrl_j_puts_each_line_after_its_new_line() -> None:
    app = _Host()
    async with app.run_test() as pilot:
        app.prompt.focus()
        await pilot.pause()
        _burst(app, *"aaa", "ctrl+j", *"bbb", "ctrl+j", *"ccc")
        await until(
            lambda: app.prompt.value.count("c") == 3 and app.prompt.value.count("\n") == 2, pilot
        )
        await pilot.pause()
        assert app.prompt.value == "aaa\nbbb\nccc"
        assert app.prompt.cursor_location == (2, 3)


async def test_a_burst_with_backspace_and_enter_sends_what_was_typed_before_enter() -> None:
    app = _Host()
    async with app.run_test() as pilot:
        app.prompt.focus()
        await pilot.pause()
        _burst(app, *"abx", "backspace", *"c", "enter", *"next")
        await until(lambda: app.sent, pilot)
        await pilot.pause()
        assert app.sent == ["abc"]  # not "abxcnex": backspace and enter ran after later keys
        await until(lambda: app.prompt.value == "next", pilot)  # the keys after enter stay


async def test_tab_again_goes_into_the_folder_it_completed(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("")
    (tmp_path / "lib" / "pkg").mkdir(parents=True)
    (tmp_path / "lib" / "pkg" / "a.py").write_text("")
    (tmp_path / "lib" / "pkg" / "b.py").write_text("")
    app = _Host(files=lambda prefix: workspace_paths(tmp_path, prefix))
    async with app.run_test() as pilot:
        app.prompt.focus()
        await pilot.press(*"read @s", "tab")
        assert app.prompt.value == "read @src/"
        await pilot.press("tab")  # the folder's one entry
        assert app.prompt.value == "read @src/app.py"
        await pilot.press("tab")  # a file, the only match: it stays
        assert app.prompt.value == "read @src/app.py"
        await pilot.press(*" and @l", "tab")
        assert app.prompt.value == "read @src/app.py and @lib/"
        await pilot.press("tab")  # lib/ holds one folder: into it, and on into that one
        assert app.prompt.value == "read @src/app.py and @lib/pkg/"
        await pilot.press("tab")  # several entries: the first, then tab cycles them
        assert app.prompt.value == "read @src/app.py and @lib/pkg/a.py"
        await pilot.press("tab")
        assert app.prompt.value == "read @src/app.py and @lib/pkg/b.py"
        await pilot.press("tab")
        assert app.prompt.value == "read @src/app.py and @lib/pkg/a.py"
