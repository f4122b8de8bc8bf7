"""Crash and cancel: a killed run resumes from its checkpoint; a cancelled one too."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from soothe.engine.llm.scripted import ScriptedReply
from soothe.engine.session import Session
from tests.fakes.brain import Brain
from tests.loop.conftest import SessionFactory
from tests.loop.helpers import (
    assess,
    classify,
    collect,
    make_settings,
    of_type,
    one,
    plan,
    run_all,
    step,
)

REPO = Path(__file__).resolve().parents[2]


async def _run_child_until_s02(root: Path) -> tuple[str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.loop.crash_child",
        str(root),
        cwd=REPO,
        env=dict(os.environ),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    lines: dict[str, str] = {}
    try:
        async with asyncio.timeout(30):
            while True:
                raw = await proc.stdout.readline()  # type: ignore[union-attr]
                if not raw:
                    err = await proc.stderr.read()  # type: ignore[union-attr]
                    raise AssertionError(f"child ended early: {err.decode()[-2000:]}")
                key, _, value = raw.decode().strip().partition(" ")
                lines[key] = value
                if key == "S-02":
                    break
    finally:
        proc.kill()  # SIGKILL: no cleanup code runs in the child
        await proc.wait()
    return lines["THREAD"], lines["GOAL"]


async def test_resume_after_a_crash_between_steps(tmp_path: Path, ws: Path) -> None:
    thread_id, goal_id = await _run_child_until_s02(tmp_path)
    loop_id = f"{goal_id}-L1"

    brain = Brain()
    brain.add("step:S-02", "S-02 used 42")
    brain.add("StatusAssessment", assess("done", completion=False))
    settings = make_settings(tmp_path, ws)
    session = Session(settings, thread_id, models={"default": brain.model()})
    recorded: list = []
    session.bus.add_listener(recorded.append)
    await session.start()  # recover(): the goal and S-02 were left active by the crash
    try:
        s1 = session.context.step_dag(goal_id).get("S-01")
        assert s1.status == "completed" and s1.result_summary == "S-01 found the answer 42"
        assert session.context.step_dag(goal_id).get("S-02").status == "pending"
        assert [g.id for g in session.unfinished_goals()] == [goal_id]

        events = await collect(session, session.resume())

        # S-01 is not run again; S-02 is; the same loop (checkpoint) continues.
        assert brain.kinds() == ["step:S-02", "StatusAssessment"]
        assert "S-01 found the answer 42" in brain.step_prompts("S-02")[0]
        assert {e.loop_id for e in of_type(events, "step.started")} == {loop_id}
        assert one(events, "step.completed", step_id="S-02").loop_id == loop_id
        assert [e.step_id for e in of_type(events, "step.started")] == ["S-02"]
        goal = session.context.get_goal(goal_id)
        assert goal.status == "completed" and goal.findings == "S-02 used 42"
        assert one(events, "answer.final").text == "S-02 used 42"
    finally:
        await session.close()


async def test_checkpoint_is_on_disk_before_the_steps_run(
    make_session: SessionFactory, tmp_path: Path
) -> None:
    """A kill during the execute node must find the plan's checkpoint already written."""
    seen: list[list[int]] = []

    def read_checkpoints() -> None:
        db = sqlite3.connect(tmp_path / "data" / "checkpoints.db")
        try:
            rows = db.execute("SELECT metadata FROM checkpoints WHERE thread_id = 'G1-L1'")
            seen.append(sorted(json.loads(r[0])["step"] for r in rows))
        finally:
            db.close()

    brain = Brain()
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01")))
    brain.add("step:S-01", "done")
    brain.on("step:S-01", read_checkpoints)
    session = await make_session(brain, files=True)
    await run_all(session, "one step")
    # -1: the input, 0: after routing, 1: after plan_generate (leads into execute).
    assert seen == [[-1, 0, 1]]


async def test_cancel_during_a_streaming_step_then_resume_continues_it(
    make_session: SessionFactory,
) -> None:
    """Esc suspends the running step (pending, not failed), and resume continues it from
    its checkpoint: no replan, the first request after the resume already holds the
    earlier tool result, and that tool call does not run again (issue 14)."""
    brain = Brain()
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01", "read the readme, write a long text")))
    read = {"name": "read_file", "args": {"path": "README.md"}, "id": "r1"}
    brain.add(
        "step:S-01",
        ScriptedReply(tool_calls=[read]),
        ScriptedReply(stream_chunks=["word "] * 200, chunk_delay=0.05),
    )
    session = await make_session(brain)
    streaming = asyncio.Event()

    def watch(event: Any) -> None:
        if event.type == "step.token" and event.step_id == "S-01":
            streaming.set()

    session.bus.add_listener(watch)

    async def consume() -> None:
        await session.run("write a long text")

    task = asyncio.create_task(consume())
    async with asyncio.timeout(5):
        await streaming.wait()
    started = time.perf_counter()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        async with asyncio.timeout(1.0):  # stops within 1 s or the test fails
            await task
    assert time.perf_counter() - started < 1.0
    assert task.cancelled()

    events = session.recorded  # type: ignore[attr-defined]
    assert of_type(events, "step.failed") == []  # suspended, not failed
    [paused] = of_type(events, "step.suspended")  # one event: the card says paused
    assert (paused.step_id, paused.reason) == ("S-01", "interrupted by the user")
    [called] = of_type(events, "step.tool_call", step_id="S-01")
    goal_id = called.goal_id
    assert session.context.get_goal(goal_id).status == "suspended"
    assert [g.id for g in session.unfinished_goals()] == [goal_id]
    assert session.context.step_dag(goal_id).get("S-01").status == "pending"

    # Resume: the same step continues from its checkpoint; nothing is planned again.
    brain.add("step:S-01", "the long text")
    before = len(brain.calls)
    resumed = await collect(session, session.resume())

    assert brain.kinds()[before:] == ["step:S-01"]  # a simple goal's one step ends it
    sent = brain.calls[before].body["messages"]
    [result] = [m for m in sent if m["role"] == "tool"]
    assert "A small demo project." in result["content"]
    assert of_type(resumed, "step.tool_call") == []  # read_file did not run again
    assert [e.step_id for e in of_type(resumed, "step.started")] == ["S-01"]
    assert {e.loop_id for e in of_type(resumed, "step.started")} == {f"{goal_id}-L1"}
    assert session.context.get_goal(goal_id).status == "completed"
    assert session.context.step_dag(goal_id).get("S-01").status == "completed"
    assert one(resumed, "answer.final").text == "the long text"


async def test_two_goals_loops_keep_separate_checkpoints(make_session: SessionFactory) -> None:
    """Goal 1 is interrupted, goal 2 runs in the same thread; goal 1 then resumes from
    its own checkpoint (its plan, its steps), untouched by goal 2's loop."""
    brain = Brain()
    brain.always["Classification"] = classify("complex")
    brain.add(
        "PlanGeneration",
        plan(step("A-01", "first goal's work")),
        plan(step("B-01", "second goal's work")),
    )
    brain.add("step:A-01", ScriptedReply(stream_chunks=["a "] * 200, chunk_delay=0.05))
    brain.add("step:B-01", "b done")
    brain.add("step:A-01", "a done")  # goal 1 resumed: its suspended step continues
    brain.add(
        "StatusAssessment",
        assess("done", completion=False),  # goal 2
        assess("done", completion=False),  # goal 1, resumed
    )
    session = await make_session(brain)
    streaming = asyncio.Event()
    session.bus.add_listener(lambda e: e.type == "step.token" and streaming.set())

    async def consume() -> None:
        await session.run("goal one")

    task = asyncio.create_task(consume())
    async with asyncio.timeout(5):
        await streaming.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task

    second = await run_all(session, "goal two")
    g2 = one(second, "answer.final").goal_id
    g1 = next(g.id for g in session.unfinished_goals())
    assert g1 != g2

    graph = session.runner.loop._graph
    s1 = await graph.aget_state({"configurable": {"thread_id": f"{g1}-L1"}})
    s2 = await graph.aget_state({"configurable": {"thread_id": f"{g2}-L1"}})
    assert s1.values["goal_id"] == g1 and s2.values["goal_id"] == g2
    assert s1.next == ("execute",) and s2.next == ()
    assert [s["id"] for s in s1.values["plan"]["steps"]] == ["A-01"]
    assert [s["id"] for s in s2.values["plan"]["steps"]] == ["B-01"]
    # The loop state is keyed by loop id, never by the conversation thread.
    no_thread = await graph.aget_state({"configurable": {"thread_id": session.thread_id}})
    assert not no_thread.values

    resumed = await collect(session, session.resume())
    assert {e.goal_id for e in of_type(resumed, "step.started")} == {g1}
    assert [e.step_id for e in of_type(resumed, "step.started")] == ["A-01"]
    assert session.context.get_goal(g1).status == "completed"
    assert brain.count("step:B-01") == 1
    assert set(session.context.step_dag(g1).steps) == {"A-01"}
    assert set(session.context.step_dag(g2).steps) == {"B-01"}


async def test_resume_leaves_a_goal_that_is_not_ready_pending(tmp_path: Path, ws: Path) -> None:
    """A started goal whose conflicting goal is active elsewhere is not activated by
    resume (no raw GoalNotReady): it stays pending for later, and no model is called."""
    brain = Brain()
    session = Session(
        make_settings(tmp_path, ws),
        models={"default": brain.model()},
        db_path=":memory:",
        checkpoint_path=":memory:",
    )
    await session.start()
    try:
        goal_id = await session.add_goal("edit config.toml")
        await session.context.activate_goal(goal_id, loop_id=f"{goal_id}-L1")
        await session.context.fail_goal(goal_id, "interrupted")  # retries left: pending
        rival = await session.context.create_goal(
            "edit config.toml elsewhere", conflicts_with=[goal_id], thread_id="other"
        )
        await session.context.activate_goal(rival.id)
        outcome = await session.resume()
        assert outcome.ok, outcome.error
        assert session.context.get_goal(goal_id).status == "pending"
        assert brain.calls == []
    finally:
        await session.close()
