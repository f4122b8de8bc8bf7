"""The live box (issue 13): a running step's card ends with a StreamText in tail mode.

Widget tests mount the real widgets in a tiny App; the pump test and the long-stream
test run the real Session on the fake Ollama server (tests/app/real_harness.py). Waits
are on state (``until``, ``settle``, a `Pause` that holds the reply), never a sleep.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Markdown, Static

from soothe.app.main import SootheApp
from soothe.engine import events as ev
from soothe.engine.bus import EventBus
from soothe.widgets.step_card import WAITING, StepCardView
from soothe.widgets.step_stream import StepStream
from soothe.widgets.stream_text import TAIL_FIRST, StreamText
from soothe.widgets.tool_call import ToolCallBlock
from soothe.widgets.transcript import CardStatus, StepCard, ToolRun, Transcript
from tests.app.real_harness import (
    Pause,
    Rig,
    long_step_flow,
    panel,
    ready,
    screen_text,
    send,
    settle,
    until,
    wait_event,
)
from tests.app.tiny_app import One

# --- StreamText in tail mode -------------------------------------------------------------


def _lines(count: int, start: int = 0) -> str:
    return "".join(f"r{i:03d}\n" for i in range(start, start + count))


HINT = re.compile(r"^⋮ (\d+) earlier rows?\b")


def _hint(row: str) -> int | None:
    """The number of rows a box's hint row says are above it (None: not a hint)."""
    found = HINT.match(row.strip(" ▌│"))
    return int(found.group(1)) if found else None


def _shown(widget: StreamText) -> list[str]:
    """The rows the widget draws, as text."""
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]


async def test_a_tail_grows_once_and_shows_the_newest_rows() -> None:
    text = StreamText()
    text.set_tail(20)
    app = One(text)
    async with app.run_test(size=(40, 30)) as pilot:
        heights = []
        for count in range(1, 31):
            text.append(f"r{count - 1:03d}\n")
            await pilot.pause()
            heights.append(text.size.height)
        # 1-8 rows: 8 high; past that the tail (20), never more
        assert heights == [TAIL_FIRST] * TAIL_FIRST + [20] * (30 - TAIL_FIRST)
        assert text.line_count == 30
        shown = _shown(text)
        # the first row counts the rows above the newest 19: r000 .. r010 are 11 rows
        assert _hint(shown[0]) == 11
        assert shown[1:] == [f"r{i:03d}" for i in range(11, 30)]
        assert text.hidden_count == 30 - 19

        text.set_tail(None)  # not live any more: every row
        await pilot.pause()
        assert text.size.height == text.line_count == 30
        assert _shown(text) == [f"r{i:03d}" for i in range(30)]
        assert text.hidden_count == 0


async def test_a_short_text_in_a_tail_has_no_hint_and_blank_rows_below() -> None:
    text = StreamText(placeholder=WAITING[None])
    text.set_tail(12)
    app = One(text)
    async with app.run_test(size=(40, 30)) as pilot:
        await pilot.pause()
        assert _shown(text) == [WAITING[None]] + [""] * (TAIL_FIRST - 1)
        text.append(_lines(3))
        await pilot.pause()
        assert _shown(text) == ["r000", "r001", "r002"] + [""] * (TAIL_FIRST - 3)
        text.append(_lines(6, 3))  # 9 rows: grows to 12 (the tail), still no hint
        await pilot.pause()
        assert _shown(text) == [f"r{i:03d}" for i in range(9)] + [""] * 3
        text.append(_lines(2, 9) + "r011 and the open row")
        await pilot.pause()
        assert text.line_count == 12 and text.hidden_count == 0
        assert _shown(text)[0] == "r000" and _shown(text)[-1] == "r011 and the open row"
        text.append("\nr012")  # 13 rows in 12: the hint stands for two of them
        await pilot.pause()
        assert _hint(_shown(text)[0]) == 2
        assert _shown(text)[1:] == [
            *(f"r{i:03d}" for i in range(2, 11)),
            "r011 and the open row",
            "r012",
        ]


async def test_appending_to_a_full_box_is_no_layout_opening_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = StreamText()
    text.set_tail(20)
    app = One(text)
    async with app.run_test(size=(40, 30)) as pilot:
        text.append(_lines(5))
        await pilot.pause()
        layouts: list[bool] = []
        real = text.refresh

        def spy(*regions: Any, **kwargs: Any) -> Any:
            layouts.append(bool(kwargs.get("layout")))
            return real(*regions, **kwargs)

        monkeypatch.setattr(text, "refresh", spy)
        text.append(_lines(3, 5))  # 8 rows: still in the first step
        assert layouts == [False]
        text.append(_lines(1, 8))  # the 9th row: the box opens to the tail (20)
        assert layouts == [False, True]
        await pilot.pause()
        assert text.size.height == 20
        text.append(_lines(20, 9))  # the box is full: its rows move up
        assert layouts[-1] is False
        await pilot.pause()
        layouts.clear()
        for index in range(29, 60):  # full: every row is a repaint of the box
            text.append(f"r{index:03d} more")
            text.append(" and a token\n")
        assert layouts and not any(layouts)
        await pilot.pause()
        assert text.size.height == 20
        assert _shown(text)[-2:] == ["r058 more and a token", "r059 more and a token"]


# --- StepCardView in a following StepStream ----------------------------------------------


class Stream(App[None]):
    """A tiny app holding one StepStream (the whole 60x30 screen)."""

    def compose(self) -> ComposeResult:
        yield StepStream()


def _card(status: CardStatus = "active") -> StepCard:
    return StepCard("G1", "S-01", "Write the rows", status=status)


def _layout(view: StepCardView) -> list[str]:
    """The card's widgets in order: header, tool, text (with its tail), waiting, detail."""
    names = []
    for child in view.children:
        if isinstance(child, StreamText):
            tail = "" if child.tail_rows is None else f"/{child.tail_rows}"
            names.append(("waiting" if not child.line_count else "text") + tail)
        elif isinstance(child, ToolCallBlock):
            names.append("tool")
        elif isinstance(child, Markdown):
            names.append("markdown")
        elif isinstance(child, Static) and child.has_class("card-header"):
            names.append("header")
        elif isinstance(child, Static) and child.has_class("card-detail"):
            names.append("detail")
        else:  # pragma: no cover - a new kind of part
            names.append(type(child).__name__)
    return names


async def _shown_card(app: Stream, pilot: Pilot[Any], card: StepCard) -> StepCardView:
    stream = app.query_one(StepStream)
    transcript = Transcript("conversation", "Conversation")
    transcript.add(card)
    stream.show(transcript)
    await pilot.pause()
    view = stream.query_one(StepCardView)
    assert view.card is card
    return view


@contextlib.asynccontextmanager
async def _live_card(
    status: CardStatus = "active",
) -> AsyncIterator[tuple[Stream, Pilot[Any], StepCard, StepCardView]]:
    """A 60x30 app whose stream shows one card (``_card(status)``), mounted."""
    app = Stream()
    async with app.run_test(size=(60, 30)) as pilot:
        card = _card(status)
        yield app, pilot, card, await _shown_card(app, pilot, card)


async def _touch(app: Stream, pilot: Pilot[Any], card: StepCard) -> None:
    """What the handler does after a batch changed ``card``: touch it, then paint."""
    app.query_one(StepStream).touch([card])
    await pilot.pause()


def _tool(call_id: str = "c1") -> ToolRun:
    return ToolRun(call_id=call_id, tool="read_file", args={"path": "README.md"})


async def test_a_running_card_ends_with_the_waiting_box_and_the_text_fills_it() -> None:
    async with _live_card() as (app, pilot, card, view):
        rows = view.live_rows
        assert rows is not None
        assert _layout(view) == ["header", f"waiting/{rows}", "detail"]
        box = view.query_one(StreamText)
        assert box.render_line(0).text.rstrip() == WAITING[None]

        card.add_text("the first row\nthe second")
        await _touch(app, pilot, card)
        assert _layout(view) == ["header", f"text/{rows}", "detail"]
        assert list(view.query(StreamText)) == [box]  # the same widget: nothing mounted
        assert box.rows() == ["the first row", "the second"]
        assert box.render_line(0).text.rstrip() == "the first row"

        card.add_text(" row, longer")
        await _touch(app, pilot, card)
        assert list(view.query(StreamText)) == [box]
        assert box.rows() == ["the first row", "the second row, longer"]


async def test_a_tool_call_before_the_text_stays_above_it() -> None:
    async with _live_card() as (app, pilot, card, view):
        rows = view.live_rows
        card.add_tool(_tool())
        await _touch(app, pilot, card)
        assert _layout(view) == ["header", "tool", f"waiting/{rows}", "detail"]
        card.add_text("README.md says hello.")
        await _touch(app, pilot, card)
        assert _layout(view) == ["header", "tool", f"text/{rows}", "detail"]
        # a second tool call, then more text: a new box below it, the first text whole
        card.add_tool(_tool("c2"))
        await _touch(app, pilot, card)
        assert _layout(view) == [
            "header",
            "tool",
            "text",
            "tool",
            f"waiting/{rows}",
            "detail",
        ]


async def test_a_tool_call_and_text_in_one_batch_keep_their_order() -> None:
    """Bug 1: the tool call and the text that fills the box arrive in the same sync."""
    async with _live_card() as (app, pilot, card, view):
        rows = view.live_rows
        box = view.query_one(StreamText)
        card.add_tool(_tool())
        card.add_text("README.md says hello.")
        await _touch(app, pilot, card)
        assert _layout(view) == ["header", "tool", f"text/{rows}", "detail"]
        assert view.query_one(StreamText) is box
        # the same with text already shown: text, tool and text in one batch
        card.add_tool(_tool("c2"))
        card.add_text("It has one heading.")
        await _touch(app, pilot, card)
        assert _layout(view) == [
            "header",
            "tool",
            "text",
            "tool",
            f"text/{rows}",
            "detail",
        ]


async def _touched_in(app: Stream, pilot: Pilot[Any]) -> tuple[StepStream, StepCard]:
    """A running card with a tool call, touched into a following stream that shows an
    empty conversation: the card is mounted and has its live rows, not composed yet."""
    stream = app.query_one(StepStream)
    transcript = Transcript("conversation", "Conversation")
    stream.show(transcript)
    await pilot.pause()
    card = _card()
    card.add_tool(_tool())
    transcript.add(card)
    stream.touch([card])  # mounts the card and gives it its live rows, synchronously
    return stream, card


async def test_a_new_running_card_touched_into_a_following_stream_gets_its_box() -> None:
    """Bug 2: touch mounts the card and sets its live rows before it is composed (it is
    attached, its children are not): placing the box then raised MountError."""
    app = Stream()
    async with app.run_test(size=(60, 30)) as pilot:
        stream, _ = await _touched_in(app, pilot)
        await pilot.pause()
        view = stream.query_one(StepCardView)
        rows = view.live_rows
        assert rows is not None
        assert _layout(view) == ["header", "tool", f"waiting/{rows}", "detail"]


async def test_a_finished_card_shows_its_whole_text_after_one_more_frame() -> None:
    async with _live_card() as (app, pilot, card, view):
        rows = view.live_rows
        assert rows is not None
        card.add_text(_lines(rows + 20))
        await _touch(app, pilot, card)
        text = view.query_one(StreamText)
        assert text.tail_rows == rows and text.hidden_count == 21
        assert text.size.height == rows
        card.status = "completed"
        card.version += 1
        app.query_one(StepStream).touch([card])
        assert text.tail_rows == rows  # its last rows are painted first
        await pilot.pause()
        await until(lambda: text.tail_rows is None, pilot, timeout=5)
        await pilot.pause()
        assert _layout(view) == ["header", "text", "detail"]
        assert text.size.height == text.line_count == rows + 20
        assert text.render_line(0).text.rstrip() == "r000"


async def test_a_finished_card_without_text_drops_its_waiting_box() -> None:
    async with _live_card() as (app, pilot, card, view):
        card.add_tool(_tool())
        await _touch(app, pilot, card)
        assert "waiting" in _layout(view)[2]
        card.status = "completed"
        card.version += 1
        await _touch(app, pilot, card)
        await pilot.pause()
        assert _layout(view) == ["header", "tool", "detail"]


async def test_an_answer_card_shows_the_rendered_answer_and_no_box() -> None:
    async with _live_card() as (app, pilot, card, view):
        rows = view.live_rows
        card.add_text("The **answer** is 4.")
        card.add_tool(_tool())  # a tool call after the text: the box waits below it
        await _touch(app, pilot, card)
        assert _layout(view) == ["header", "text", "tool", f"waiting/{rows}", "detail"]
        card.status = "completed"
        card.answer = True
        card.version += 1
        await _touch(app, pilot, card)
        await pilot.pause()
        assert _layout(view) == ["header", "tool", "markdown", "detail"]
        assert not view.query(StreamText)


# --- the event pump survives a widget that fails ----------------------------------------


async def test_the_pump_survives_a_widget_that_fails_in_flush(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        real = StepCardView.set_live
        failures: list[StepCardView] = []

        def fails_once(self: StepCardView, rows: int | None, *, held: bool = False) -> None:
            if not failures:
                failures.append(self)
                raise RuntimeError("the card could not take its live rows")
            real(self, rows, held=held)

        monkeypatch.setattr(StepCardView, "set_live", fails_once)
        bus = app.require_session().bus
        applied = app.handler.applied
        for event in (
            ev.GoalCreated(goal_id="G7", description="Write the rows"),
            ev.StepStarted(goal_id="G7", step_id="S-01", description="Write the rows"),
            ev.StepToken(goal_id="G7", step_id="S-01", text="the first tokens"),
        ):
            bus.publish(event)
        await until(lambda: app.handler.applied >= applied + 3 and failures, pilot)
        await until(lambda: app.handler.errors, pilot)
        assert "RuntimeError('the card could not take its live rows')" in app.handler.errors[0]
        # the next events are still applied and shown
        bus.publish(ev.StepToken(goal_id="G7", step_id="S-01", text=" and the last ones"))
        bus.publish(ev.StepCompleted(goal_id="G7", step_id="S-01"))
        await until(lambda: app.handler.applied >= applied + 5, pilot)
        await app.handler.wait_idle()
        await pilot.pause()
        assert "the first tokens and the last ones" in screen_text(app)
        assert len(app.handler.errors) == 1, app.handler.errors


async def test_a_model_call_that_ended_has_its_last_tokens_shown_at_once(rig: Rig) -> None:
    """The pump batches events for an interval; the stream of a call that ended (its
    Usage) has no more tokens coming, so its last ones are not held for the rest of it."""
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        bus = app.require_session().bus
        fields = {"goal_id": "G7", "step_id": "S-01"}
        bus.publish(ev.GoalCreated(goal_id="G7", description="Write the rows"))
        bus.publish(ev.StepStarted(description="Write the rows", **fields))
        app.handler.interval = 60.0  # after the next batch, the next is a minute away...
        bus.publish(ev.StepToken(text="the first tokens", **fields))
        await until(lambda: "the first tokens" in screen_text(app), pilot)
        await app.handler.wait_idle()
        bus.publish(ev.StepToken(text=" and the last ones", **fields))
        await until(lambda: app.handler.pending == 0, pilot)  # taken: the pump waits
        assert "the last ones" not in screen_text(app)
        bus.publish(ev.Usage(model="m", output_tokens=9, **fields))  # ...but the call ended
        await until(lambda: "the first tokens and the last ones" in screen_text(app), pilot)


async def _a_minute_between_batches(app: SootheApp, pilot: Pilot[Any]) -> EventBus:
    """Goal G7 on screen, then a batch after which the next is a minute away."""
    await ready(app, pilot)
    bus = app.require_session().bus
    bus.publish(ev.GoalCreated(goal_id="G7", description="Write the rows"))
    await until(lambda: "G7" in screen_text(app), pilot)
    await app.handler.wait_idle()
    app.handler.interval = 60.0
    bus.publish(ev.GoalUpdated(goal_id="G7", priority=2))
    await until(lambda: app.handler.pending == 0, pilot)
    await app.handler.wait_idle()
    return bus


async def test_a_step_that_starts_has_its_card_mounted_at_once(rig: Rig) -> None:
    """A step's first tokens come 15-20 ms after it starts: its card is mounted without
    waiting out the batch interval, also when its start is the first event the pump
    reads after a batch (read, it can no longer cut the pause short)."""
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        bus = await _a_minute_between_batches(app, pilot)
        bus.publish(ev.StepStarted(goal_id="G7", step_id="S-01", description="First rows"))
        await until(lambda: app.main.stream.query(StepCardView), pilot)  # at once
        assert "S-01" in screen_text(app)


async def test_steps_that_start_one_after_another_are_still_paced(rig: Rig) -> None:
    """A start applied at once skips the batch interval once: the next start, if it is
    the first event of the next batch too, waits for the interval (or an urgent event
    that comes meanwhile), so a chain of steps is not a batch and a layout each."""
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        bus = await _a_minute_between_batches(app, pilot)
        cards = app.main.stream.query
        bus.publish(ev.StepStarted(goal_id="G7", step_id="S-01", description="First rows"))
        await until(lambda: len(cards(StepCardView)) == 1, pilot)  # at once
        await app.handler.wait_idle()
        bus.publish(ev.StepStarted(goal_id="G7", step_id="S-02", description="More rows"))
        await until(lambda: app.handler.pending == 0, pilot)  # taken: the pump waits
        for _ in range(5):
            await pilot.pause()
        assert len(cards(StepCardView)) == 1
        bus.publish(ev.Usage(model="m", output_tokens=9, goal_id="G7", step_id="S-01"))
        await until(lambda: len(cards(StepCardView)) == 2, pilot)


# --- a long stream on the real Session ---------------------------------------------------

ROWS = 200
HELD_AT = 150


def _live_text(app: SootheApp) -> StreamText:
    view = app.main.stream.query_one(StepCardView)
    texts = list(view.query(StreamText))
    assert len(texts) == 1, texts
    return texts[0]


def _conversation(app: SootheApp) -> list[str]:
    return panel(screen_text(app), "Conversation")


async def _held_mid_stream(app: SootheApp, pilot: Pilot[Any], reply: Pause) -> StreamText:
    """Send the request and wait until HELD_AT rows are on screen and the reply is held."""
    await ready(app, pilot)
    await send(app, pilot, "Write two hundred rows")
    await wait_event(reply.reached, pilot)
    await until(lambda: f"row {HELD_AT - 1:03d}" in screen_text(app), pilot)
    await app.handler.wait_idle()
    await pilot.pause()
    text = _live_text(app)
    assert text.line_count == HELD_AT
    return text


async def test_a_long_stream_shows_its_newest_rows_and_page_up_shows_them_all(rig: Rig) -> None:
    reply = long_step_flow(rig.brain, ROWS, HELD_AT)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        text = await _held_mid_stream(app, pilot, reply)
        stream = app.main.stream
        rows = text.tail_rows
        assert rows is not None and text.size.height == rows
        hidden = HELD_AT - rows + 1  # the hint row stands for one more
        conversation = _conversation(app)
        assert [_hint(row) for row in conversation].count(hidden) == 1, conversation
        assert any(f"row {HELD_AT - 1:03d}" in row for row in conversation)
        assert not any("row 000" in row for row in conversation)

        # page up: the view stops following, the box shows every row
        stream.action_page_up()
        assert not stream.follow
        await until(lambda: text.tail_rows is None, pilot, timeout=5)
        await until(lambda: text.size.height == text.line_count == HELD_AT, pilot, timeout=5)
        stream.scroll_home(animate=False)
        await until(lambda: any("row 000" in row for row in _conversation(app)), pilot)
        assert not any(_hint(row) for row in _conversation(app))

        # End resumes following, and the box
        stream.focus()
        await pilot.press("end")
        assert stream.follow
        await until(lambda: text.tail_rows == rows and text.size.height == rows, pilot)
        await until(stream._at_end, pilot)
        await pilot.pause()
        conversation = _conversation(app)
        assert [_hint(row) for row in conversation].count(hidden) == 1, conversation
        assert not any("row 000" in row for row in conversation)

        reply.release.set()
        await settle(app, pilot)
        assert not rig.brain.unscripted, rig.brain.kinds()
        # the step's text is the goal's answer: the finished card shows it rendered, whole
        view = stream.query_one(StepCardView)
        assert view.card.answer and not view.query(StreamText)
        assert "row 000" in view.card.text and "row 199" in view.card.text
        assert any("row 199" in row for row in _conversation(app))


async def test_pgup_from_the_prompt_stops_following_mid_stream(rig: Rig) -> None:
    """pgup in the prompt is pgup in the panel: the view stops following and the live box
    opens (it only scrolled, and the box kept its tail, before 5a07b60)."""
    reply = long_step_flow(rig.brain, ROWS, HELD_AT)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        text = await _held_mid_stream(app, pilot, reply)
        stream = app.main.stream
        assert app.focused is app.prompt and text.tail_rows is not None
        await pilot.press("pageup")
        await until(lambda: text.tail_rows is None, pilot, timeout=5)
        assert not stream.follow and app.focused is app.prompt
        await until(lambda: text.size.height == text.line_count, pilot, timeout=5)
        stream.scroll_home(animate=False)
        await until(lambda: any("row 000" in row for row in _conversation(app)), pilot)
        reply.release.set()
        await settle(app, pilot)
        assert not stream.follow  # the end of the run does not take the view back
        await send(app, pilot, "/goal Another one")  # sending something follows again
        await settle(app, pilot)
        assert stream.follow


async def test_a_step_that_ends_while_another_streams_keeps_its_box_until_both_end() -> None:
    """Laying out a finished step's whole text while another still streams would move
    the screen under it: the finished card keeps its box until no step in the view runs."""
    app = Stream()
    async with app.run_test(size=(60, 30)) as pilot:
        stream = app.query_one(StepStream)
        transcript = Transcript("conversation", "Conversation")
        first = StepCard("G1", "S-01", "Write rows")
        second = StepCard("G1", "S-02", "Write more rows")
        for card in (first, second):
            transcript.add(card)
            card.add_text(_lines(40))
        stream.show(transcript)
        await pilot.pause()
        stream.touch([first, second])
        await pilot.pause()
        views = {view.card.step_id: view for view in stream.query(StepCardView)}
        rows = views["S-01"].live_rows
        assert rows is not None and rows == views["S-02"].live_rows

        first.status = "completed"
        first.version += 1
        stream.touch([first])
        for _ in range(3):
            await pilot.pause()
        text = views["S-01"].query_one(StreamText)
        assert views["S-01"].held and text.tail_rows == rows  # still its box
        assert views["S-02"].live_rows == rows  # the other's box did not change

        second.status = "completed"
        second.version += 1
        stream.touch([second])
        for _ in range(3):
            await pilot.pause()
        for view in views.values():
            (text,) = view.query(StreamText)
            assert not view.held and text.tail_rows is None
            assert text.size.height == text.line_count == 40


async def test_when_one_running_box_opens_the_others_open_in_the_same_layout() -> None:
    app = Stream()
    async with app.run_test(size=(60, 40)) as pilot:
        stream = app.query_one(StepStream)
        transcript = Transcript("conversation", "Conversation")
        first, second = _card(), StepCard("G1", "S-02", "Write more rows")
        transcript.add(first)
        transcript.add(second)
        stream.show(transcript)
        await pilot.pause()
        views = list(stream.query(StepCardView))
        rows = views[0].live_rows
        assert rows is not None and rows > TAIL_FIRST  # two cards share 40 rows
        second.add_text(_lines(2))
        first.add_text(_lines(3))
        stream.touch([first, second])
        await pilot.pause()
        boxes = [view.live_box for view in views]
        assert all(box is not None and box.size.height == TAIL_FIRST for box in boxes)
        first.add_text(_lines(TAIL_FIRST, 3))  # the first needs more rows; the second not yet
        stream.touch([first])
        await pilot.pause()
        assert [box.size.height for box in boxes if box is not None] == [rows, rows]
        assert _shown(boxes[1])[:2] == ["r000", "r001"]  # blank rows below its text


async def test_a_resize_while_reading_keeps_the_view_where_the_user_is(rig: Rig) -> None:
    """Trial: scrolled up to read a running step, a resize of the terminal must not take
    the view back to the live tail (the boxes stay open, the view does not follow)."""
    reply = long_step_flow(rig.brain, ROWS, HELD_AT)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        text = await _held_mid_stream(app, pilot, reply)
        stream = app.main.stream
        stream.action_page_up()
        await until(lambda: text.tail_rows is None, pilot, timeout=5)
        await until(lambda: text.size.height == HELD_AT, pilot, timeout=5)
        stream.scroll_to(y=stream.max_scroll_y // 2, animate=False)
        await pilot.pause()
        card = stream.query_one(StepCardView).card
        fields = {
            "thread_id": app.session.thread_id,
            "goal_id": card.goal_id,
            "step_id": card.step_id,
        }
        for n, size in enumerate(((90, 30), (120, 40))):
            await pilot.resize_terminal(*size)
            for i in range(3):  # the step still streams meanwhile
                app.session.bus.publish(ev.StepToken(text=f"more {n}{i}\n", **fields))
                await pilot.pause()
            await app.handler.wait_idle()
            await pilot.pause()
            assert not stream.follow, size
            assert text.tail_rows is None and not stream._at_end(), size
        reply.release.set()
        await settle(app, pilot)


async def test_a_card_synced_before_it_is_composed_gets_its_parts_from_compose() -> None:
    """CI: a view shown while a step streams, then a token batch before the new card's
    compose, mounted the new part before a child not mounted yet (MountError)."""
    app = Stream()
    async with app.run_test(size=(60, 30)) as pilot:
        stream, card = await _touched_in(app, pilot)  # its compose has not run yet
        card.add_text(_lines(3))
        stream.touch([card])  # a token batch at once: the card syncs before compose
        await pilot.pause()
        view = stream.query_one(StepCardView)
        rows = view.live_rows
        assert _layout(view) == ["header", "tool", f"text/{rows}", "detail"]
        assert view.query_one(StreamText).line_count == 3


async def _reading_far_below_earlier_notes(
    app: Stream, pilot: Pilot[Any]
) -> tuple[StepStream, StepCardView]:
    """A following stream: 30 notes, then a running card of 150 rows in a capped box."""
    stream = app.query_one(StepStream)
    transcript = Transcript("conversation", "Conversation")
    for n in range(30):
        transcript.note(f"earlier note {n}")
    card = _card()
    card.add_text(_lines(150))
    transcript.add(card)
    stream.show(transcript)
    await pilot.pause()
    await until(stream._at_end, pilot)
    view = stream.query_one(StepCardView)
    assert view.live_box is not None and view.live_box.hidden_count
    return stream, view


async def _header_at_top(stream: StepStream, view: StepCardView, pilot: Pilot[Any]) -> None:
    text = view.query_one(StreamText)
    await until(lambda: text.tail_rows is None and text.size.height == 150, pilot)
    for _ in range(4):
        await pilot.pause()
    assert 0 <= view.region.y - stream.region.y <= 2  # its header at the top of the view
    assert not stream.follow


async def test_pgup_from_the_live_view_shows_the_running_card_from_its_first_rows() -> None:
    """Trial: with what came before this request above, pgup opened the boxes, then paged
    up from where the view was before they opened: far above the running step."""
    app = Stream()
    async with app.run_test(size=(60, 30)) as pilot:
        stream, view = await _reading_far_below_earlier_notes(app, pilot)
        stream.action_page_up()
        await _header_at_top(stream, view, pilot)


async def test_pgup_shows_the_running_card_even_when_its_scroll_runs_before_the_box_opens() -> None:
    """CI, a busy machine: the scroll page up asked for ran before the layout that placed
    the open box, when the view could not reach the card's header yet (4 rows short). A
    held screen (the event pump holds it while cards mount) runs it so every time."""
    app = Stream()
    async with app.run_test(size=(60, 30)) as pilot:
        stream, view = await _reading_far_below_earlier_notes(app, pilot)
        with app.batch_update():
            stream.action_page_up()
            for _ in range(3):
                await pilot.pause()
            assert view.virtual_region.y > stream.max_scroll_y  # short of the header
        await _header_at_top(stream, view, pilot)
