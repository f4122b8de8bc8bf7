"""Keys that reach the prompt in one burst (a fast typist, key repeat, tmux send-keys) are
applied in the order they came, bound keys (ctrl+j, enter, backspace) included."""

from __future__ import annotations

from textual import events

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
