"""A live box's rows are wrapped at the width the box shows at.

Textual's layout can ask a widget's height for a trial width (beside a vertical
scrollbar it then drops) and keep the place the widget had. StreamText wraps its rows when
asked its height, so it was left holding rows wrapped one column short: a clean-clone
snapshot run under load showed "workbench for / goal-driven agents" where the card has
room for "workbench for goal-driven / agents"."""

from __future__ import annotations

from typing import Any

from textual.geometry import Size
from textual.pilot import Pilot

from soothe.widgets.stream_text import StreamText
from tests.app.real_harness import screen_text
from tests.app.tiny_app import One

TEXT = "Soothe is a terminal workbench for goal-driven agents, run locally."


async def _quiet(pilot: Pilot[Any]) -> None:
    for _ in range(4):
        await pilot.pause()


def shown(app: Any) -> list[str]:
    return [line.rstrip() for line in screen_text(app).splitlines() if line.strip()]


async def test_rows_are_wrapped_at_the_width_the_box_shows_at() -> None:
    text = StreamText()
    app = One(text)
    async with app.run_test(size=(46, 8)) as pilot:
        text.append(TEXT)
        await _quiet(pilot)
        assert shown(app) == [
            "Soothe is a terminal workbench for goal-driven",
            "agents, run locally.",
        ]
        # the layout's trial: the height beside a scrollbar, one column short
        assert text.get_content_height(Size(46, 8), Size(46, 8), 45) == 2
        text.refresh()  # the next frame (a token, the spinner) repaints the box
        await _quiet(pilot)
        assert text.size.width == 46
        assert shown(app) == [
            "Soothe is a terminal workbench for goal-driven",
            "agents, run locally.",
        ]
