"""Released views, without Textual: the view model keeps the blocks of at most
``max_views`` goal and step views of finished goals; a released one is rebuilt from the
real Session's stored transcript (demo model) exactly as it was."""

from __future__ import annotations

from pathlib import Path

from soothe.app.view_paging import LOADING, read_released
from soothe.app.view_state import CONVERSATION, ViewState
from soothe.engine import events as ev
from soothe.engine.session import Session
from soothe.widgets.transcript import Note
from tests.app.test_view_state import RecordingPort, demo_settings


def goal_run(goal: str, final: str) -> list[ev.EventBase]:
    def at(step: str | None = None) -> dict[str, str | None]:
        return {"thread_id": "t1", "goal_id": goal, "step_id": step}

    return [
        ev.RunStarted(text=f"do {goal}", thread_id="t1"),
        ev.GoalCreated(description=f"do {goal}", **at()),
        ev.GoalStatusChanged(from_status="pending", to_status="active", **at()),
        ev.StepStarted(description="work", **at("S1")),
        ev.StepToken(text="working", **at("S1")),
        ev.StepCompleted(summary="", duration_s=0.1, **at("S1")),
        ev.GoalStatusChanged(from_status="active", to_status="completed", **at()),
        ev.FinalAnswer(text=final, **at()),
        ev.RunFinished(duration_s=0.1, thread_id="t1"),
    ]


def test_only_finished_views_beyond_the_limit_are_released() -> None:
    state = ViewState(RecordingPort())
    state.max_views = 2
    for n in range(1, 4):
        for event in goal_run(f"G{n}", f"answer {n}"):
            state.feed(event)
    assert set(state.released) == {"G1", "G1/S1", "G2/S1"}
    assert set(state.views) == {CONVERSATION, "G2", "G3", "G3/S1"}
    # a running goal's views stay, however many there are
    for event in goal_run("G4", "answer 4")[:5]:
        state.feed(event)
    assert {"G4", "G4/S1"} <= set(state.views)
    # the conversation keeps every request's blocks (its own cap applies)
    said = [b.text for b in state.view(CONVERSATION).segments if hasattr(b, "text")]
    assert "answer 1" in said


def test_the_visible_view_is_never_released_and_a_revived_one_pages_back() -> None:
    port = RecordingPort()
    state = ViewState(port)
    state.max_views = 1
    for event in goal_run("G1", "answer 1"):
        state.feed(event)
    state.select("G1")
    for n in (2, 3):
        for event in goal_run(f"G{n}", f"answer {n}"):
            state.feed(event)
    assert "G1" in state.views and "G1" not in state.released
    assert "G2" in state.released
    # G2 runs again (a retry): its view holds the new blocks, the older page back
    state.feed(ev.GoalStatusChanged(from_status="completed", to_status="active", goal_id="G2"))
    assert "G2" not in state.released
    assert state.view("G2").earlier and state.earlier_cursor("G2") is not None


async def test_a_released_view_is_rebuilt_from_the_store_as_it_was(tmp_path: Path) -> None:
    settings = demo_settings(tmp_path)
    session = Session(settings)
    await session.start()
    full = ViewState(RecordingPort())
    port = RecordingPort()
    capped = ViewState(port)
    capped.max_views = 1
    session.bus.add_listener(full.feed)
    session.bus.add_listener(capped.feed)
    try:
        for text in ["Summarise README.md in one line", "List the files here"] * 2:
            await session.run(text)
        goal_keys = [key for key in full.views if key != CONVERSATION]
        assert len(goal_keys) > 3
        released = [key for key in goal_keys if key in capped.released]
        assert len(released) >= 2
        for key in released:
            capped.select(key)
            assert [b.dump() for b in capped.view(key).segments] == [Note(LOADING, "info").dump()]
            (asked,) = port.named("rebuild")[-1:]
            assert asked[0] == key
            records = await read_released(session, session.thread_id, asked[1], asked[2])
            capped.rebuilt(key, records)
            assert capped.blocks(key) == full.blocks(key), key
            assert port.shown[-1] == key
    finally:
        await session.close()
