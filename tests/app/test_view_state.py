"""The view model without Textual: recorded events in, blocks out; a reopened thread on
the real Session rebuilds the same blocks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from soothe.app.view_state import CONVERSATION, ViewState, records_of
from soothe.engine import events as ev
from soothe.engine.config import Settings
from soothe.engine.session import Session
from soothe.engine.views import ThreadSnapshot
from soothe.widgets.transcript import Answer, StepCard, ToolRun


class RecordingPort:
    """The screen's side of the port, recording each call (a real app draws instead)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.shown: list[str] = []
        self.touched: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            self.calls.append((name, args + tuple(kwargs.items())))

        return record

    def show(self, transcript: Any) -> None:
        self.shown.append(transcript.key)

    def touch(self, blocks: list[Any]) -> None:
        self.touched.extend(blocks)

    def named(self, name: str) -> list[tuple[Any, ...]]:
        return [args for call, args in self.calls if call == name]


def scope(step: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"thread_id": "t1", "goal_id": "G1", "step_id": step, **fields}


def two_parallel_steps() -> list[ev.EventBase]:
    """Two steps streaming at once, tokens alternating, S1's tool call in the middle."""
    events: list[ev.EventBase] = [
        ev.RunStarted(text="compare two files", thread_id="t1"),
        ev.GoalCreated(description="compare two files", **scope()),
        ev.StepStarted(description="Read a", **scope("S1")),
        ev.StepStarted(description="Read b", **scope("S2")),
    ]
    for n in range(20):
        events.append(ev.StepToken(text=f"a{n} ", **scope("S1")))
        events.append(ev.StepToken(text=f"b{n} ", **scope("S2")))
        if n == 10:
            events.append(ev.ToolCalled(call_id="c1", tool="read_file", **scope("S1")))
            events.append(ev.ToolResult(call_id="c1", tool="read_file", output="A", **scope("S1")))
    events += [
        ev.StepCompleted(summary="a0 a1 …", duration_s=1.0, **scope("S1")),
        ev.StepCompleted(summary="b0 b1 …", duration_s=1.0, **scope("S2")),
        ev.FinalAnswer(text=" ".join(f"b{n}" for n in range(20)), **scope()),
        ev.RunFinished(duration_s=2.0, thread_id="t1"),
    ]
    return events


def demo_settings(tmp_path: Path) -> Settings:
    """The built-in demo model over a one-file workspace in ``tmp_path``."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Kettle\nA tool that boils water.\n")
    return Settings(
        model={"provider": "demo"},
        tools={"workspace": workspace},
        storage={"data_dir": tmp_path / "data"},
    )


def test_parallel_steps_each_fill_one_card_and_never_interleave() -> None:
    port = RecordingPort()
    state = ViewState(port)
    for event in two_parallel_steps():
        state.feed(event)
    blocks = list(state.view(CONVERSATION).segments)
    cards = [b for b in blocks if isinstance(b, StepCard)]
    assert [c.key for c in cards] == ["G1/S1", "G1/S2"]
    s1, s2 = cards
    assert s1.text == "".join(f"a{n} " for n in range(20))
    assert s2.text == "".join(f"b{n} " for n in range(20))
    assert [type(p).__name__ for p in s1.parts] == ["TextRun", "ToolRun", "TextRun"]
    assert all(not isinstance(p, ToolRun) for p in s2.parts)  # S1's tool stays under S1
    assert (s1.tokens, s2.tokens, s1.status, s2.status) == (20, 20, "completed", "completed")
    # the step view and the goal view hold the very same card objects
    assert list(state.view("G1/S1").segments) == [s1]
    assert [b for b in state.view("G1").segments if isinstance(b, StepCard)] == cards


def test_a_suspended_step_card_says_paused_and_a_resume_opens_a_new_one() -> None:
    state = ViewState(RecordingPort())
    for event in [
        ev.RunStarted(text="write it", thread_id="t1"),
        ev.GoalCreated(description="write it", **scope()),
        ev.StepStarted(description="Write it", **scope("S1")),
        ev.StepToken(text="half ", **scope("S1")),
        ev.StepSuspended(reason="interrupted by the user", **scope("S1")),
    ]:
        state.feed(event)
    [card] = [b for b in state.view(CONVERSATION).segments if isinstance(b, StepCard)]
    assert (card.status, card.detail) == ("suspended", "paused: interrupted by the user")
    assert state.goals["G1"].steps[0].status == "pending"  # what the store holds
    state.feed(ev.StepStarted(description="Write it", **scope("S1")))
    cards = [b for b in state.view(CONVERSATION).segments if isinstance(b, StepCard)]
    assert [c.status for c in cards] == ["suspended", "active"]


def test_an_answer_is_shown_once() -> None:
    state = ViewState(RecordingPort())
    for event in two_parallel_steps():
        state.feed(event)
    blocks = list(state.view(CONVERSATION).segments)
    s2 = next(b for b in blocks if isinstance(b, StepCard) and b.step_id == "S2")
    # S2's text is the answer: its card shows it, no answer block repeats it ...
    assert s2.answer and not [b for b in blocks if isinstance(b, Answer)]
    # ... and "done" does not repeat the streamed text either
    assert s2.detail == "" and not any("b0 b1" in str(b.dump()) for b in blocks if b is not s2)
    assert state.answers["G1"].startswith("b0 b1")


def test_toasts_and_dialogs_only_live_not_when_replayed() -> None:
    failing = [
        ev.RunStarted(text="x", thread_id="t1"),
        ev.StepStarted(description="Write", **scope("S1")),
        ev.StepFailed(error="disk full", **scope("S1")),
        ev.ApprovalRequested(request_id="r1", tool="write_file", **scope("S1")),
    ]
    live = RecordingPort()
    state = ViewState(live)
    for event in failing:
        state.feed(event)
    assert [args[1] for args in live.named("notify")] == ["Step G1/S1 failed"]
    assert len(live.named("open_approval")) == 1 and live.named("run_started")
    assert live.named("take_panel") == [()] and not live.named("follow")

    replayed = RecordingPort()
    again = ViewState(replayed)
    again.replay((event, 1) for event in failing)
    assert not replayed.named("notify") and not replayed.named("open_approval")
    assert again.blocks() == state.blocks()


def test_a_step_card_says_what_it_waits_for_from_the_user() -> None:
    state = ViewState(RecordingPort())
    asked = [
        ev.StepStarted(description="Write", **scope("S1")),
        ev.ToolCalled(call_id="c1", tool="write_file", **scope("S1")),
        ev.ApprovalRequested(request_id="r1", tool="write_file", **scope("S1")),
    ]
    for event in asked:
        state.feed(event)
    card = state.cards["G1/S1"]
    assert card.awaiting == "approval"
    version = card.version
    state.feed(
        ev.ApprovalAnswered(
            request_id="r1", tool="write_file", outcome="approve_once", **scope("S1")
        )
    )
    assert card.awaiting is None and card.version > version
    state.feed(ev.ClarificationRequested(request_id="r2", questions=["Which?"], **scope("S1")))
    assert card.awaiting == "clarification"
    state.feed(ev.StepFailed(error="stopped", **scope("S1")))
    assert card.awaiting is None  # an ended step waits for nothing

    replayed = ViewState(RecordingPort())
    replayed.replay((event, 1) for event in asked)
    assert replayed.cards["G1/S1"].awaiting == "approval"


def test_a_goal_created_outside_a_run_says_how_to_run_it() -> None:
    state = ViewState(RecordingPort())
    state.feed(ev.GoalCreated(description="later", **scope()))
    assert "ctrl+r runs ready goals" in state.blocks()[0]["note"]


def test_flush_hands_over_only_the_visible_views_changes() -> None:
    port = RecordingPort()
    state = ViewState(port)
    state.select("G1/S2")
    for event in two_parallel_steps()[:6]:
        state.feed(event)
    state.flush()
    assert {b.key for b in port.touched if isinstance(b, StepCard)} == {"G1/S2"}


async def test_a_reopened_thread_shows_the_same_blocks(tmp_path: Path) -> None:
    """A request on the real Session (demo model), quit, reopen in a new Session."""
    settings = demo_settings(tmp_path)
    first = Session(settings)
    await first.start()
    live = ViewState(RecordingPort())
    first.bus.add_listener(live.feed)
    try:
        await first.run("Summarise README.md in one line")
        await first.run("What is 2+2?")
    finally:
        await first.close()
    thread = first.thread_id
    keys = [key for key in live.views if live.views[key].segments]
    before = {key: live.blocks(key) for key in keys}
    assert any(isinstance(b, StepCard) for b in live.view(CONVERSATION).segments)
    assert [b["note"] for b in before[CONVERSATION] if b.get("kind") == "user"] == [
        "Summarise README.md in one line",
        "What is 2+2?",
    ]

    second = Session(settings)
    await second.start()
    try:
        snapshot = await second.open_thread(thread)
    finally:
        await second.close()
    reopened = ViewState(RecordingPort())
    reopened.restore(snapshot, records_of(snapshot))
    assert {key: reopened.blocks(key) for key in keys} == before


async def test_released_blocks_page_back_from_the_store(tmp_path: Path) -> None:
    """A small cap releases the oldest blocks; paging back from the store (by the live
    events' seq, then by record id) brings the same blocks back, oldest first."""
    from soothe.app.view_port import parse_records
    from soothe.widgets import transcript as tr

    settings = demo_settings(tmp_path)
    session = Session(settings)
    await session.start()
    full = ViewState(RecordingPort())
    capped = ViewState(RecordingPort())
    capped.view(CONVERSATION).max_segments = 4
    session.bus.add_listener(full.feed)
    session.bus.add_listener(capped.feed)
    try:
        for text in ["What is 2+2?", "Summarise README.md in one line", "What is 3+3?"]:
            await session.run(text)
        conversation = capped.view(CONVERSATION)
        assert conversation.released and conversation.earlier
        assert capped.blocks() == full.blocks()[-4:]
        pages = 0
        while (cursor := capped.earlier_cursor(CONVERSATION)) is not None:
            where = {"before": cursor} if cursor > 0 else {"before_seq": -cursor}
            rows = await session.transcript(session.thread_id, limit=5, **where)
            after = max((int(r["id"]) for r in rows), default=0)
            following = await session.transcript(session.thread_id, after=after, limit=40)
            capped.page_back(
                CONVERSATION,
                parse_records(rows),
                more=len(rows) >= 5,
                following=parse_records(following),
            )
            pages += 1
            assert pages < 50
        assert pages > 1  # the first page by seq, the next ones by record id
        assert capped.blocks() == full.blocks()
        conversation.trim()
        assert len(conversation) == 4 and conversation.earlier
    finally:
        await session.close()
    assert tr.MAX_SEGMENTS >= 100


def test_an_interrupted_run_is_a_fact_the_transcript_keeps() -> None:
    port = RecordingPort()
    state = ViewState(port)
    state.feed(ev.RunStarted(text="long job", thread_id="t1"))
    state.feed(ev.RunFailed(error="interrupted by the user", kind="interrupted", thread_id="t1"))
    assert state.blocks()[-1] == {"note": "interrupted", "kind": "warn"}
    assert not port.named("notify")  # the user did it: no error toast
    again = ViewState(RecordingPort())
    again.replay([(ev.RunFailed(error="x", kind="interrupted"), 1, 7)])
    assert again.blocks() == [{"note": "interrupted", "kind": "warn"}]


def test_status_names_the_thread_at_run_start_and_a_reopened_threads_iteration() -> None:
    from soothe.engine.views import ThreadSnapshot

    port = RecordingPort()
    state = ViewState(port)
    state.feed(ev.RunStarted(text="hi", thread_id="t-new"))
    assert ("thread", "t-new") in [f for args in port.named("status") for f in args]
    stored = [
        ev.RunStarted(text="hi", thread_id="t1"),
        ev.IterationStarted(iteration=2, max_iterations=8, **scope()),
        ev.Usage(input_tokens=120, output_tokens=30, thread_id="t1"),
        ev.RunFinished(duration_s=1.0, thread_id="t1"),
    ]
    reopened = RecordingPort()
    ViewState(reopened).restore(ThreadSnapshot(thread_id="t1"), [(e, 1, 0) for e in stored])
    # the iteration, the stored token totals and the last run's time, as they were shown
    assert reopened.named("status")[-1] == (
        ("iteration", 2),
        ("max_iterations", 8),
        ("tokens_in", 120),
        ("tokens_out", 30),
        ("elapsed", 1.0),
    )


def _approval(request_id: str, step: str, outcome: str | None = None) -> ev.EventBase:
    if outcome is None:
        return ev.ApprovalRequested(request_id=request_id, tool="write_file", **scope(step))
    return ev.ApprovalAnswered(
        request_id=request_id,
        tool="write_file",
        outcome=outcome,  # type: ignore[arg-type]
        **scope(step),
    )


def test_the_approval_is_told_on_its_calls_row_not_in_a_note_after_the_card() -> None:
    """A note after the card read as if the call was asked about once done (a trial)."""
    state = ViewState(RecordingPort())
    for event in [
        ev.StepStarted(description="Write", **scope("S1")),
        ev.ToolCalled(call_id="c1", tool="write_file", args={"path": "a"}, **scope("S1")),
        _approval("r1", "S1"),
    ]:
        state.feed(event)
    [row] = [p for p in state.cards["G1/S1"].parts if isinstance(p, ToolRun)]
    assert row.approval == "waiting for approval"
    state.feed(_approval("r1", "S1", "approve_once"))
    state.feed(ev.ToolCalled(call_id="c1", tool="write_file", args={"path": "a"}, **scope("S1")))
    state.feed(ev.ToolResult(call_id="c1", tool="write_file", output="ok", **scope("S1")))
    [row] = [p for p in state.cards["G1/S1"].parts if isinstance(p, ToolRun)]
    assert (row.approval, row.ok) == ("approved once", True)
    notes = [b for b in state.view(CONVERSATION).segments if not isinstance(b, StepCard)]
    assert not [n for n in notes if "approv" in str(n.dump())]


def test_a_step_resumed_after_a_pause_shows_its_call_in_its_new_card() -> None:
    """Esc while the approval is open pauses the step; resumed, it asks again before the
    call is published again with the same id: the call is the new card's, and the paused
    card keeps what it showed (a review found it moved into the paused card)."""
    state = ViewState(RecordingPort())
    for event in [
        ev.StepStarted(description="Write", **scope("S1")),
        ev.ToolCalled(call_id="X", tool="write_file", args={"path": "a"}, **scope("S1")),
        _approval("r1", "S1"),
        _approval("r1", "S1", "cancelled"),
        ev.StepSuspended(reason="interrupted by the user", **scope("S1")),
        ev.StepStarted(description="Write", **scope("S1")),
        _approval("r2", "S1"),
        _approval("r2", "S1", "approve_once"),
        ev.ToolCalled(call_id="X", tool="write_file", args={"path": "a"}, **scope("S1")),
        ev.ToolResult(call_id="X", tool="write_file", output="ok", **scope("S1")),
        ev.StepCompleted(summary="wrote a", duration_s=1.0, **scope("S1")),
    ]:
        state.feed(event)
    cards = [b for b in state.view(CONVERSATION).segments if isinstance(b, StepCard)]
    rows = [[(p.ok, p.approval) for p in c.parts if isinstance(p, ToolRun)] for c in cards]
    assert [c.status for c in cards] == ["suspended", "completed"]
    assert rows == [[(None, "approval cancelled")], [(True, "approved once")]]


def test_one_answer_clears_only_the_step_it_answers() -> None:
    """Parallel steps ask at once: the tree and the cards keep the other step's mark."""
    port = RecordingPort()
    state = ViewState(port)
    for event in [
        ev.StepStarted(description="Write a", **scope("S1")),
        ev.StepStarted(description="Write b", **scope("S2")),
        _approval("r1", "S1"),
        _approval("r2", "S2"),
        _approval("r2", "S2", "approve_once"),
    ]:
        state.feed(event)
    assert (state.cards["G1/S1"].awaiting, state.cards["G1/S2"].awaiting) == ("approval", None)
    assert port.named("set_awaiting")[-1] == ("G1", {"S1": "approval"})
    state.feed(_approval("r1", "S1", "deny"))
    assert port.named("set_awaiting")[-1] == ("G1", {})


def test_a_reopened_threads_interrupted_card_waits_for_nothing() -> None:
    """The process ended while a step waited for approval: reopened, the card is
    interrupted and no longer marked as waiting (nor kept as an open request)."""
    state = ViewState(RecordingPort())
    snapshot = ThreadSnapshot(thread_id="t1", goals=[], evidence=[], answers={})
    records = [
        (ev.StepStarted(description="Write", **scope("S1")), 1, 1),
        (ev.ToolCalled(call_id="c1", tool="write_file", **scope("S1")), 1, 2),
        (_approval("r1", "S1"), 1, 3),
    ]
    state.restore(snapshot, records)
    card = state.cards["G1/S1"]
    assert (card.status, card.awaiting, state.requests) == ("suspended", None, {})
    [row] = [p for p in card.parts if isinstance(p, ToolRun)]
    assert row.approval == "not answered"  # not "waiting for approval" for ever


def test_a_step_resumed_after_a_crash_shows_the_same_live_and_replayed() -> None:
    """Process 1 died while its step waited for approval; process 2 reopened the thread,
    the step asked again and ran the call. Replayed later, nothing in the transcript ended
    process 1's card: its StepStarted again does (a review found the replay put process
    2's call on process 1's row, and left the answered row pending)."""
    first = [
        ev.StepStarted(description="Write", **scope("S1")),
        ev.ToolCalled(call_id="X", tool="write_file", **scope("S1")),
        _approval("r1", "S1"),
    ]
    second = [
        ev.StepStarted(description="Write", **scope("S1")),
        _approval("r2", "S1"),
        _approval("r2", "S1", "approve_once"),
        ev.ToolCalled(call_id="X", tool="write_file", **scope("S1")),
        ev.ToolResult(call_id="X", tool="write_file", output="ok", **scope("S1")),
        ev.StepCompleted(summary="wrote", duration_s=1.0, **scope("S1")),
    ]
    empty = ThreadSnapshot(thread_id="t1", goals=[], evidence=[], answers={})
    live = ViewState(RecordingPort())
    live.restore(empty, [(e, 1, n) for n, e in enumerate(first, 1)])  # process 2 opens
    for event in second:
        live.feed(event)
    replayed = ViewState(RecordingPort())
    replayed.restore(empty, [(e, 1, n) for n, e in enumerate(first + second, 1)])

    def rows(state: ViewState) -> list[tuple[str, list[tuple[bool | None, str]]]]:
        cards = [b for b in state.view(CONVERSATION).segments if isinstance(b, StepCard)]
        return [
            (c.status, [(p.ok, p.approval) for p in c.parts if isinstance(p, ToolRun)])
            for c in cards
        ]

    assert rows(live) == [
        ("suspended", [(None, "not answered")]),
        ("completed", [(True, "approved once")]),
    ]
    assert rows(replayed) == rows(live)


def test_goal_lines_in_the_conversation_name_their_goal_while_several_run() -> None:
    """Issue 32 item 9: with one goal running its plan line is as it was; with two, each
    goal's lines in the conversation start with its id (its own view needs none) until no
    goal runs, and a reopened thread shows the same."""

    def goal(gid: str, **fields: Any) -> dict[str, Any]:
        return {"thread_id": "t1", "goal_id": gid, **fields}

    def planned(gid: str) -> ev.PlanCreated:
        step = ev.PlannedStep(id="S-01", description=f"work on {gid}")
        return ev.PlanCreated(iteration=1, steps=[step], reasoning="", **goal(gid))

    events: list[ev.EventBase] = [
        ev.GoalCreated(description="first", **goal("G1")),
        ev.GoalCreated(description="second", **goal("G2")),
        ev.GoalStatusChanged(from_status="pending", to_status="active", **goal("G1")),
        planned("G1"),  # alone: no name
        ev.GoalStatusChanged(from_status="pending", to_status="active", **goal("G2")),
        planned("G2"),
        ev.PlanAssessed(status="done", goal_progress="complete", **goal("G1")),
        ev.ErrorEvent(message="disk full", **goal("G2")),
        ev.GoalStatusChanged(from_status="active", to_status="completed", **goal("G1")),
        ev.PlanAssessed(status="done", goal_progress="complete", **goal("G2")),  # still named
        ev.GoalStatusChanged(from_status="active", to_status="completed", **goal("G2")),
        ev.GoalCreated(description="third", **goal("G3")),
        ev.GoalStatusChanged(from_status="pending", to_status="active", **goal("G3")),
        planned("G3"),  # alone again: no name
    ]
    state = ViewState(RecordingPort())
    for event in events:
        state.feed(event)
    notes = [b["note"].splitlines()[0] for b in state.blocks() if "note" in b]
    assert notes == [
        "G1 new goal: first — ctrl+r runs ready goals",
        "G2 new goal: second — ctrl+r runs ready goals",
        "G1 active",
        "plan · iteration 1 · 1 step",
        "G2 active",
        "G2 plan · iteration 1 · 1 step",
        "G1 assessment: done, progress complete",
        "G2 disk full",
        "G1 completed",
        "G2 assessment: done, progress complete",
        "G2 completed",
        "G3 new goal: third — ctrl+r runs ready goals",
        "G3 active",
        "plan · iteration 1 · 1 step",
    ]
    g2 = [b["note"].splitlines()[0] for b in state.blocks("G2") if "note" in b]
    assert "plan · iteration 1 · 1 step" in g2 and "disk full" in g2
    again = ViewState(RecordingPort())
    again.replay((event, 1) for event in events)
    assert again.blocks() == state.blocks()
