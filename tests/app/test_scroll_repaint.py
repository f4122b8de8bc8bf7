"""A scroll right after a layout repaints what moved, not the whole screen (and what the
user sees stays the screen as it is): ``textual_fixes``' scroll repaint."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from soothe.app import handler
from soothe.widgets import textual_fixes
from tests.app.real_harness import Rig, parallel_flow, ready, send, settle, until, wait_event
from tests.app.screen_cells import Cells


def test_textual_still_compares_a_scroll_with_nothing_after_a_layout() -> None:
    """The fix is for this line of the pinned Textual: re-check it on an upgrade."""
    source = inspect.getsource(
        getattr(Compositor.reflow_visible, "__wrapped__", Compositor.reflow_visible)
    )
    assert "old_map = self._visible_map or {}" in source


class Feed(App[None]):
    """A panel beside a feed that follows its newest line."""

    CSS = "Horizontal { height: 1fr; } #side { width: 30; } #feed { width: 1fr; }"

    def compose(self) -> ComposeResult:
        from textual.containers import Horizontal

        with Horizontal():
            yield Static("\n".join(f"side {n}" for n in range(30)), id="side")
            with VerticalScroll(id="feed"):
                for n in range(40):
                    yield Static(f"line {n}")


async def test_a_line_added_to_a_following_feed_repaints_the_feed_not_the_screen() -> None:
    textual_fixes.apply()
    assert "scroll repaint" in textual_fixes.applied()
    app = Feed()
    async with app.run_test(size=(80, 20)) as pilot:
        feed = app.query_one("#feed", VerticalScroll)
        feed.scroll_end(animate=False)
        await pilot.pause()
        cells = Cells.watch(app)
        for n in range(40, 46):  # a layout (the new line), then a scroll to it
            await feed.mount(Static(f"line {n}"))
            await pilot.pause()
            feed.scroll_end(animate=False)
            await pilot.pause()
        assert "line 45" in "\n".join(cells.text())
        assert cells.whole == 0 and cells.partial
        assert await cells.stale(app, pilot) == []


async def test_what_two_streaming_steps_show_is_the_screen_as_it_is(rig: Rig) -> None:
    """The real app, two steps that start and stream side by side while the view follows:
    every update played onto a terminal's cells gives the screen the app has, and none of
    them is the whole screen (each card that mounted below a full view was a layout, then
    a scroll to follow it)."""
    first, second = parallel_flow(rig.brain)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        for n in range(40):  # what came before: the view is full and follows its end
            app.handler.local_note(f"earlier note {n}")
        await until(lambda: app.main.stream.max_scroll_y > 0, pilot)
        await pilot.pause()
        cells = Cells.watch(app)
        await send(app, pilot, "read the README and write a haiku about tests")
        await wait_event(first.reached, pilot)
        await wait_event(second.reached, pilot)
        await until(lambda: "Green checks" in "\n".join(cells.text()), pilot)
        assert await cells.stale(app, pilot) == []
        first.release.set()
        second.release.set()
        await settle(app, pilot)
        assert "7 model calls" in "\n".join(cells.text())
        assert await cells.stale(app, pilot) == []
        assert cells.whole == 0 and cells.partial


async def test_a_resize_while_the_pump_holds_the_screen_is_painted(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The event pump holds the screen while a step's card mounts; a resize in that time
    repaints the whole screen, which the held screen must not lose."""
    monkeypatch.setattr(handler, "MOUNT_HOLD", 10.0)  # held until the test lets go
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        cells = Cells.watch(app)
        held = asyncio.get_running_loop().create_future()  # a mount that has not finished
        app.main.stream.mounting.append((lambda: held, [Static("still mounting")]))
        hold = asyncio.create_task(app.handler._mounted())
        await asyncio.sleep(0)
        assert app._batch_count
        await pilot.resize_terminal(100, 30)
        for _ in range(3):
            await pilot.pause()
        assert not hold.done()  # resized while held
        held.set_result(None)
        await hold
        for _ in range(3):
            await pilot.pause()
        assert (cells.width, cells.height) == (100, 30)
        assert await cells.stale(app, pilot) == []
