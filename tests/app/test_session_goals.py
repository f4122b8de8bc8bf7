"""The real Session's goal facade the app relies on: the dependency picker's choices come
from the engine's one cycle check, and every goal command publishes the change it made
(the app draws goals from those events only, it never re-reads them after a command)."""

from __future__ import annotations

from pathlib import Path

from soothe.engine import events as ev
from soothe.engine.session import Session
from tests.fakes.brain import Brain
from tests.loop.helpers import make_settings


async def test_dependency_candidates_and_goal_command_events(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    settings = make_settings(tmp_path, ws)
    session = Session(
        settings,
        models={"default": Brain().model()},
        db_path=":memory:",
        checkpoint_path=":memory:",
    )
    await session.start()
    seen: list[ev.EventBase] = []
    session.bus.add_listener(seen.append)
    try:
        g1 = await session.add_goal("first")
        g2 = await session.add_goal("second")
        g3 = await session.add_goal("third")
        await session.add_dependency(g2, g1)
        await session.add_dependency(g3, g2)
        assert session.dependency_candidates(g1) == []  # g2 and g3 wait for it
        assert session.dependency_candidates(g2) == []  # g1 taken, g3 would cycle
        assert session.dependency_candidates(g3) == [g1]
        await session.set_priority(g3, 70)
        await session.toggle_suspend(g3)
        await session.toggle_suspend(g3)
        await session.cancel_goal(g1)
        kinds = [(type(e).__name__, e.goal_id) for e in seen]
        assert [k for k in kinds if k[0] == "GoalCreated"] == [
            ("GoalCreated", g) for g in (g1, g2, g3)
        ]
        updates = [e for e in seen if isinstance(e, ev.GoalUpdated)]
        assert [(e.goal_id, e.depends_on, e.priority) for e in updates] == [
            (g2, [g1], None),
            (g3, [g2], None),
            (g3, None, 70),
        ]
        moves = [(e.goal_id, e.to_status) for e in seen if isinstance(e, ev.GoalStatusChanged)]
        assert moves == [(g3, "suspended"), (g3, "pending"), (g1, "cancelled")]
    finally:
        await session.close()
