"""A scroll right after a layout repaints what moved, not the whole screen (and what the
user sees stays the screen as it is): ``textual_fixes``' scroll repaint."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

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


def test_textual_still_renders_every_widget_of_an_updates_bounding_box() -> None:
    """The changed-rows fix is for these lines of the pinned Textual: re-check on an
    upgrade (the partial update crops to the regions' union; a widget in that crop renders
    its whole visible region)."""
    partial = inspect.getsource(
        getattr(Compositor.render_partial_update, "__wrapped__", Compositor.render_partial_update)
    )
    assert "crop = Region.from_union(update_regions)" in partial
    renders = inspect.getsource(
        getattr(Compositor._get_renders, "__wrapped__", Compositor._get_renders)
    )
    assert "if crop_overlaps(clip)" in renders


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


class Corners(App[None]):
    """Two lines that change at opposite corners, a tall panel between them."""

    CSS = """
    #top { height: 1; width: 20; }
    #middle { height: 1fr; }
    #panel { width: 30; height: 1fr; }
    #bottom { height: 1; dock: bottom; }
    """

    def compose(self) -> ComposeResult:
        from textual.containers import Horizontal

        yield Static("top 0", id="top")
        with Horizontal(id="middle"):
            yield Static("\n".join(f"row {n}" for n in range(30)), id="panel")
            yield Static("\n".join(f"feed {n}" for n in range(30)), id="feed")
        yield Static("bottom 0", id="bottom")


async def test_a_frame_renders_only_the_rows_that_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A frame that changes a line at the top and one at the bottom: the panel between
    them is in the bounding box of the two, but none of its rows changed, so it renders
    none (Textual had it render all of them); what the terminal shows is the screen."""
    textual_fixes.apply()
    assert "changed rows" in textual_fixes.applied()
    rendered: list[tuple[str, int]] = []
    real = Static.render_lines

    def counted(self: Static, crop: Any) -> Any:
        rendered.append((self.id or "", crop.height))
        return real(self, crop)

    app = Corners()
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        cells = Cells.watch(app)
        monkeypatch.setattr(Static, "render_lines", counted)
        for n in range(1, 4):
            app.query_one("#top", Static).update(f"top {n}")
            app.query_one("#bottom", Static).update(f"bottom {n}")
            await pilot.pause()
        assert {name for name, _ in rendered} == {"top", "bottom"}
        assert all(rows == 1 for _, rows in rendered)
        assert "top 3" in "\n".join(cells.text()) and "bottom 3" in "\n".join(cells.text())
        assert cells.whole == 0 and cells.partial
        assert await cells.stale(app, pilot) == []
