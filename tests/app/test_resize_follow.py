"""A terminal resized while the middle panel follows its end keeps showing the end (a new
user's trial: shrunk from 120x40 to 80x24 while idle, the view showed an older part of
the thread until pgdn). A view the user scrolled up in stays where they read."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from soothe.widgets.step_stream import StepStream
from soothe.widgets.transcript import Transcript
from tests.app.real_harness import (
    Rig,
    panel,
    quiz,
    readme_flow,
    ready,
    screen_text,
    send,
    settle,
    until,
)
from tests.app.tiny_app import One, full_stream

LONG = " ".join(["word"] * 30)  # a note of 2 rows at 120 columns, 3 at 80


async def _resize(pilot: Pilot[Any], view: StepStream, width: int, height: int) -> None:
    """Resize the terminal and wait until the view has been laid out at the new size."""
    before = view.region
    await pilot.resize_terminal(width, height)
    await until(lambda: view.region != before and view.layout_settled(), pilot)
    await pilot.pause()


def _stream(text: str, notes: int = 30) -> tuple[One, StepStream, Transcript]:
    app, view, transcript = full_stream(notes=0)
    for i in range(notes):
        transcript.note(f"note {i} {text}".rstrip())
    return app, view, transcript


@pytest.mark.parametrize("text", ["", LONG], ids=["short notes", "notes that wrap"])
async def test_a_following_view_keeps_its_end_when_the_terminal_is_resized(text: str) -> None:
    """Short notes fit 40 rows but not 24 (the virtual size does not grow); long ones wrap
    into more rows when narrower. Shorter or narrower, the end stays in view."""
    app, view, transcript = _stream(text)
    async with app.run_test(size=(120, 40)) as pilot:
        view.show(transcript)
        await until(lambda: "note 29" in screen_text(app) and view._at_end(), pilot)
        assert view.follow
        for width, height in ((80, 24), (60, 12), (120, 40), (80, 24)):
            await _resize(pilot, view, width, height)
            assert view.follow, (width, height)
            assert view.max_scroll_y > 0 or height == 40, (width, height)
            assert view.scroll_y == view.max_scroll_y, (width, height)
            assert "note 29" in screen_text(app), (width, height)


async def test_a_view_scrolled_up_keeps_its_place_when_the_terminal_is_resized() -> None:
    app, view, transcript = _stream("", notes=40)  # a note a row: 10 rows below 30
    async with app.run_test(size=(120, 30)) as pilot:
        view.show(transcript)
        await until(lambda: view.max_scroll_y > 0 and view._at_end(), pilot)
        assert view.scroll_y == 10
        view.focus()
        for _ in range(3):
            await pilot.press("up")
        await until(lambda: not view.follow and view.scroll_y == 7, pilot)
        await _resize(pilot, view, 80, 20)
        assert not view.follow
        assert view.scroll_y == 7 and view.max_scroll_y == 20  # note 7 still at the top
        shown = screen_text(app)
        assert "note 7" in shown and "note 6" not in shown and "note 39" not in shown


async def test_the_end_of_a_finished_run_stays_in_view_when_the_terminal_shrinks(
    rig: Rig,
) -> None:
    """The trial on the real Session: idle at the end, 120x40 -> 80x24."""
    readme_flow(rig.brain)
    quiz(rig.brain, "Four.")
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Summarise README.md")
        await settle(app, pilot)
        await send(app, pilot, "What is 2+2?")
        await settle(app, pilot)
        stream = app.main.stream
        assert stream.follow and stream.max_scroll_y == 0  # all of it fits 40 rows
        await _resize(pilot, stream, 80, 24)
        await settle(app, pilot)
        assert stream.follow
        assert stream.max_scroll_y > 0 and stream.scroll_y == stream.max_scroll_y
        rows = [row.strip() for row in panel(screen_text(app), "Conversation")]
        shown = [row for row in rows if row]
        assert shown[-1].startswith("done in") and "1 model call" in shown[-1], rows
        assert "▌ Four." in shown
