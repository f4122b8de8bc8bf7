"""Layouts of the screen while steps stream: each is a 20-40 ms frame that a key or a token
arriving meanwhile waits for, so the widgets that cause them are counted here.

The real widgets in a tiny App; a layout is one call of the screen's ``_refresh_layout``.
"""

from __future__ import annotations

from typing import Any

import pytest
from rich.style import Style
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Static

from soothe.app import handler
from soothe.engine.views import GoalView, StepView
from soothe.widgets.goal_tree import GoalTree
from soothe.widgets.step_card import StepCardView
from soothe.widgets.step_stream import StepStream
from soothe.widgets.stream_text import TAIL_FIRST, StreamText
from soothe.widgets.transcript import StepCard, Transcript
from tests.app.real_harness import (
    Rig,
    long_step_flow,
    ready,
    screen_text,
    send,
    settle,
    until,
    wait_event,
)
from tests.app.tiny_app import One, full_stream


@pytest.fixture
def layouts(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """One entry per layout of any screen from now on."""
    calls: list[float] = []
    real = Screen._refresh_layout

    def counted(self: Screen[Any], *args: Any, **kwargs: Any) -> None:
        calls.append(0.0)
        real(self, *args, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", counted)
    return calls


async def _quiet(pilot: Pilot[Any]) -> None:
    """Every frame asked for so far, and the ones those ask for, are done."""
    for _ in range(4):
        await pilot.pause()


async def test_a_live_box_that_grows_is_one_layout(layouts: list[float]) -> None:
    text = StreamText()
    text.set_tail(20)
    app = One(text)
    async with app.run_test(size=(40, 30)) as pilot:
        text.append("".join(f"r{i}\n" for i in range(TAIL_FIRST - 1)))
        await _quiet(pilot)
        layouts.clear()
        text.append("r8\nr9\n")  # past the first step: the box grows
        await _quiet(pilot)
        assert text.size.height == 20  # opened to its tail
        assert len(layouts) == 1


async def test_a_card_whose_text_grows_is_one_layout(layouts: list[float]) -> None:
    card = StepCard("G1", "S-01", "write it")
    view = StepCardView(card)
    app = One(view)
    async with app.run_test(size=(60, 30)) as pilot:
        view.set_live(20)
        card.add_text("".join(f"r{i}\n" for i in range(3)))
        view.sync()
        await _quiet(pilot)
        layouts.clear()
        card.add_text("".join(f"r{i}\n" for i in range(3, 12)))
        view.sync()
        await _quiet(pilot)
        assert len(layouts) == 1


def _goal(status: str = "active", steps: int = 1) -> GoalView:
    return GoalView(
        id="G1",
        description="write two replies",
        status=status,
        steps=[
            StepView(id=f"S-0{n}", description=f"part {n}", status=status)
            for n in range(1, steps + 1)
        ],
    )


async def test_a_step_added_to_the_tree_is_one_layout(layouts: list[float]) -> None:
    tree = GoalTree()
    tree.styles.height = "auto"  # as tall as its nodes: a new one resizes it
    app = One(tree)
    async with app.run_test(size=(40, 20)) as pilot:
        tree.upsert_goal(_goal(steps=1))
        await _quiet(pilot)
        layouts.clear()
        tree.upsert_goal(_goal(steps=2))  # its virtual size grows: Textual sends a Resize
        await _quiet(pilot)
        assert len(layouts) == 1


def _icon_style(tree: GoalTree, y: int) -> Style:
    strip = tree.render_line(y)
    segment = next(s for s in strip if s.text.strip())
    assert segment.style is not None
    return segment.style


async def test_tree_labels_follow_a_theme_change() -> None:
    """The tree keeps its label styles between frames: a new theme replaces them."""
    tree = GoalTree()
    app = One(tree)
    async with app.run_test(size=(40, 20)) as pilot:
        app.theme = "textual-dark"
        tree.upsert_goal(_goal(status="pending"))
        await _quiet(pilot)
        dark = _icon_style(tree, 1)
        app.theme = "textual-light"
        await _quiet(pilot)
        light = _icon_style(tree, 1)
        assert dark.color != light.color
        fresh = GoalTree._label_style(tree, "pending")  # what an uncached lookup gives
        assert light.color == fresh.color


async def test_a_step_that_starts_is_one_layout_on_the_real_session(
    rig: Rig, layouts: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its card is added, composed and mounted before the screen lays out (the pump holds
    the screen for the mount): Textual would lay out when the card is added and again when
    it has mounted."""
    reply = long_step_flow(rig.brain, rows=40, held_at=2)
    monkeypatch.setattr(handler, "MOUNT_HOLD", 10.0)  # a loaded machine: merging, not the cap
    app = rig.app()
    with_card: list[int] = []
    real = Screen._refresh_layout

    def counted(self: Screen[Any], *args: Any, **kwargs: Any) -> None:
        asked = {type(w) for w in self._layout_widgets}  # who asked for this layout
        if self.query(StepCardView) and asked & {StepCardView, StepStream, StreamText}:
            with_card.append(len(self.query(StepCardView)))
        real(self, *args, **kwargs)

    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        monkeypatch.setattr(Screen, "_refresh_layout", counted)
        await send(app, pilot, "Write many rows")
        await wait_event(reply.reached, pilot)
        await until(lambda: "row 001" in screen_text(app), pilot)
        await _quiet(pilot)
        assert with_card == [1]  # the card arrived in one layout; its tokens in none
        reply.release.set()
        await settle(app, pilot)


async def test_views_shown_while_nothing_runs_do_not_keep_their_widgets() -> None:
    """Each view shown keeps its mount for the pump's hold until it is done: a view shown
    again and again with no run (the tree's cursor moving) must not keep the old ones."""
    stream = StepStream()
    app = One(stream)
    async with app.run_test(size=(60, 20)) as pilot:
        for n in range(6):
            transcript = Transcript("conversation", "Conversation")
            transcript.add(StepCard("G1", f"S-0{n}", "done", status="completed"))
            stream.show(transcript)
            await _quiet(pilot)
        assert len(stream.mounting) <= 1  # only the last one may still be listed
        assert stream.take_mounting() == []  # mounted: nothing to hold for


class Panel(App[None]):
    """The tree as the app has it: as high as its nodes, at most the panel."""

    CSS = "#panel { height: 1fr; } GoalTree { height: auto; max-height: 100%; }"

    def compose(self) -> ComposeResult:
        with Vertical(id="panel"):
            yield GoalTree()


async def test_tree_labels_refit_when_a_scrollbar_comes_with_a_shorter_terminal() -> None:
    app = Panel()
    async with app.run_test(size=(40, 30)) as pilot:
        tree = app.query_one(GoalTree)
        steps = [
            StepView(id=f"S-{n:02d}", description="a long step description", status="active")
            for n in range(12)
        ]
        description = "a goal with a rather long description here"
        tree.upsert_goal(GoalView(id="G1", description=description, status="active", steps=steps))
        await _quiet(pilot)
        assert not tree.show_vertical_scrollbar
        await pilot.resize_terminal(40, 8)  # the same width, a scrollbar now
        await _quiet(pilot)
        assert tree.show_vertical_scrollbar
        shown = tree.render_line(1).text  # the goal (the conversation is row 0)
        tree._invalidate()  # what the label reads when fitted afresh
        await _quiet(pilot)
        assert shown == tree.render_line(1).text
        assert shown.rstrip().endswith("p50")  # the badge is not cut by the scrollbar


async def test_following_the_end_scrolls_in_the_layout_that_grew_the_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A block added at the end of a full view is placed and scrolled to in one pass:
    scrolled after the layout (``scroll_end`` once the virtual size grew), every growth
    was a second pass that repainted every row of the view."""
    passes: list[bool] = []
    real = Screen._refresh_layout

    def counted(self: Screen[Any], size: Any = None, scroll: bool = False) -> None:
        passes.append(scroll)
        real(self, size, scroll)

    app, view, transcript = full_stream()
    async with app.run_test(size=(60, 12)) as pilot:
        view.show(transcript)
        await _quiet(pilot)
        assert view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y
        monkeypatch.setattr(Screen, "_refresh_layout", counted)
        for i in range(3):
            view.touch([transcript.note(f"new note {i}")])
            await _quiet(pilot)
        assert view.scroll_y == view.max_scroll_y
        assert "new note 2" in screen_text(app)
        assert passes == [False, False, False]  # one layout per note, no scroll pass


class Bordered(One):
    CSS = """
    StepStream { border: round red; }
    StepStream:focus-within { border: round green; }
    """


async def test_blocks_mounted_in_the_view_do_not_redraw_its_border(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Textual asks for a layout with a repaint as blocks mount: the view's own rows
    (border, title, background) were drawn again each time, ~37 rows in every layout
    while steps stream. They are drawn again when they look different (focus, a style
    set that asks only for a layout)."""
    drawn: list[int] = []
    real = StepStream.render_line

    def counted(self: StepStream, y: int) -> Any:
        drawn.append(y)
        return real(self, y)

    monkeypatch.setattr(StepStream, "render_line", counted)
    view = StepStream()
    transcript = Transcript("conversation", "Conversation")
    for i in range(30):
        transcript.note(f"note {i}")
    app = Bordered(view)
    async with app.run_test(size=(60, 12)) as pilot:
        view.show(transcript)
        await _quiet(pilot)
        assert drawn  # the first frame draws them
        drawn.clear()
        for i in range(3):
            view.touch([transcript.note(f"new note {i}")])
            await _quiet(pilot)
        assert "new note 2" in screen_text(app)
        assert drawn == []
        top_before = app.screen._compositor.render_strips()[0]
        assert view.has_focus  # the only widget that can have it
        app.set_focus(None)
        await _quiet(pilot)
        assert drawn  # the border's colour changed: drawn again
        top_after = app.screen._compositor.render_strips()[0]
        assert top_after.text == top_before.text and top_after != top_before
        drawn.clear()
        view.set_styles("border: heavy blue;")  # Textual asks only for a layout
        await _quiet(pilot)
        assert drawn
        assert app.screen._compositor.render_strips()[0].text.startswith("┏")


async def test_a_running_cards_header_is_drawn_at_most_every_quarter_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The spinner and the token count change with every batch; drawing the header each
    time was ~0.4 ms a row, twice a frame with two steps streaming. While the step runs
    it is drawn at most every HEADER_EVERY_S, and what came meanwhile when that time is
    up; a step that ends has its header at once."""
    from soothe.widgets import step_card

    now = [100.0]
    monkeypatch.setattr(step_card, "monotonic", lambda: now[0])
    card = StepCard("G1", "S-01", "write it")
    view = StepCardView(card)
    app = One(view)
    async with app.run_test(size=(60, 30)) as pilot:
        await _quiet(pilot)
        for i in range(3):
            card.add_text(f"r{i}\n")
            view.sync()
        shown = view.query_one(".card-header", Static)
        assert "token" not in str(shown.render())  # drawn less than a quarter second ago
        now[0] += step_card.HEADER_EVERY_S
        await until(lambda: "3 tokens" in str(shown.render()), pilot)  # the time is up
        card.add_text("r3\n")
        card.status = "completed"
        view.sync()
        assert str(shown.render()).startswith("✓") and "4 tokens" in str(shown.render())
