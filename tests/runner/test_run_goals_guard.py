"""ctrl+r (Session.run_goals) ends like a request or a resume: a run that raised says so
(one RunFailed) and pauses the goals it left active; an interrupted one says
"interrupted" once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from soothe.engine.llm.scripted import ScriptedReply
from soothe.engine.session import Session
from tests.fakes.brain import Brain
from tests.loop.helpers import collect, make_settings, of_type, plan, step


def session_of(tmp_path: Path, brain: Brain) -> Session:
    ws = tmp_path / "ws"
    ws.mkdir()
    settings = make_settings(tmp_path, ws)
    return Session(
        settings, models={"default": brain.model()}, db_path=":memory:", checkpoint_path=":memory:"
    )


async def test_a_failing_run_of_ready_goals_says_so_and_leaves_no_goal_active(
    tmp_path: Path,
) -> None:
    brain = Brain()
    brain.add("PlanGeneration", plan(step("S-01", "do the goal")))
    brain.step("S-01", RuntimeError("the model broke"))
    brain.add("StatusAssessment", RuntimeError("the model broke"))
    session = session_of(tmp_path, brain)
    await session.start()
    try:
        goal_id = await session.add_goal("do the goal")
        outcome = None

        async def run() -> None:
            nonlocal outcome
            outcome = await session.run_goals()

        events = await collect(session, run())

        assert outcome is not None and outcome.status == "failed"
        assert "the model broke" in outcome.error
        (failed,) = of_type(events, "run.failed")
        assert "the model broke" in failed.error
        statuses = [g.status for g in session.context.list_goals(thread_id=session.thread_id)]
        assert "active" not in statuses
        assert session.context.get_goal(goal_id).status == "suspended"
    finally:
        await session.close()


async def test_an_interrupted_run_of_ready_goals_says_interrupted_once(tmp_path: Path) -> None:
    brain = Brain()
    brain.add("PlanGeneration", plan(step("S-01", "do the goal")))
    brain.step("S-01", ScriptedReply(text="never sent", delay=30))
    session = session_of(tmp_path, brain)
    await session.start()
    try:
        goal_id = await session.add_goal("do the goal")
        sub = session.bus.subscribe("*", maxsize=1_000_000)
        task = asyncio.ensure_future(session.run_goals())
        reached = brain.seen("step:S-01")
        for _ in range(500):
            if reached.is_set():
                break
            await asyncio.sleep(0.01)
        assert reached.is_set()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await session.runner.wait_settled()
        sub.close()
        events = [e for e in sub.drain() if e.thread_id == session.thread_id]

        assert [e.kind for e in of_type(events, "run.failed")] == ["interrupted"]
        assert session.context.get_goal(goal_id).status == "suspended"
    finally:
        await session.close()
