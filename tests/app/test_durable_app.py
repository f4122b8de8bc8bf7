"""Durable steps on the real Session and the fake Ollama (issue 14): Esc
pauses the running step (its card says so, the store has it pending), and resuming the
goal (s, then ctrl+r) continues the step from its checkpoint: the model's first request
after the resume already holds the earlier tool result, and that tool does not run again.
A pending approval survives a restart of the Session: asked again, approved, written once.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from soothe.app.view_state import CONVERSATION
from soothe.engine import events as ev
from soothe.engine.agent.journal import Journal
from soothe.engine.interact import ApprovalResponse
from soothe.widgets.transcript import StepCard
from tests.app.real_harness import (
    Pause,
    Rig,
    classify,
    plan,
    ready,
    send,
    settle,
    step,
    until,
    wait_event,
)
from tests.fakes import FakeReply


def cards(app: Any) -> list[StepCard]:
    return [c for c in app.handler.state.cards.values() if c.step_id == "S-01"]


async def test_escape_pauses_the_step_and_resume_continues_it_from_its_checkpoint(
    rig: Rig,
) -> None:
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Read the README, then summarise it")))
    streaming = Pause(text="The README says " + "more words " * 40, after=3)
    rig.brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "README.md"}}]),
        streaming,
    )
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        called: list[str] = []
        app.session.bus.add_listener(
            lambda e: called.append(e.tool) if e.type == "step.tool_call" else None
        )
        await send(app, pilot, "Summarise the README")
        await wait_event(streaming.reached, pilot)
        await until(lambda: any(c.text for c in cards(app)), pilot)
        await pilot.press("escape")
        streaming.release.set()  # the server thread may go on: the client has hung up
        await settle(app, pilot)

        [card] = cards(app)
        assert card.status == "suspended" and card.detail.startswith("paused")
        [goal] = app.handler.goals.values()
        assert goal.status == "suspended"
        assert [s.status for s in goal.steps] == ["pending"]  # suspended, not failed
        assert app.session.context.step_dag(goal.id).get("S-01").status == "pending"
        assert rig.brain.count("step:S-01") == 2

        rig.brain.step("S-01", "The README calls Soothe a terminal workbench.")
        before = len(rig.brain.calls)
        await pilot.press("ctrl+g", "down")
        assert app.main.goal_tree.selected_ref.goal_id == goal.id
        await pilot.press("s")  # resume the goal under the cursor: pending again
        await until(lambda: app.handler.goals[goal.id].status == "pending", pilot)
        await pilot.press("ctrl+r")
        await until(lambda: app.handler.goals[goal.id].status == "completed", pilot)
        await settle(app, pilot)

    kinds = rig.brain.kinds()[before:]
    assert kinds[0] == "step:S-01" and kinds.count("step:S-01") == 1  # continued, once
    sent = rig.brain.calls[before].body["messages"]
    [result] = [m for m in sent if m["role"] == "tool"]
    assert "A terminal workbench for goal-driven agents." in result["content"]
    assert app.handler.state.tools == {}  # every call shown got its result
    assert called == ["read_file"]  # before Esc only: it did not run again
    shown = app.handler.state.view(CONVERSATION).segments
    statuses = [b.status for b in shown if isinstance(b, StepCard) and b.step_id == "S-01"]
    assert statuses == ["suspended", "completed"]  # the paused card, then the resumed one


async def _until_async(check: Any, timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.02)


async def test_a_pending_approval_survives_a_restart_of_the_session(rig: Rig) -> None:
    """A step asks to write_file; the Session goes away with the question open (the run
    interrupted, then the Session closed: what ctrl+q does). A new Session on the same
    data dir resumes: the same question comes again, and approving it writes the file
    once."""
    rig.configure(tools={"approval": "ask"})
    args = {"path": "notes.txt", "content": "kept\n"}
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Write notes.txt")))
    rig.brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "write_file", "args": args}]),
        "Wrote notes.txt.",
    )
    first = rig.session()
    await first.start()
    asked: list[ev.ApprovalRequested] = []
    first.bus.add_listener(lambda e: asked.append(e) if e.type == "approval.requested" else None)
    first_calls: list[ev.ToolCalled] = []
    first.bus.add_listener(
        lambda e: first_calls.append(e) if isinstance(e, ev.ToolCalled) else None
    )
    task = asyncio.create_task(first.run("Write notes.txt"))
    try:
        await _until_async(lambda: asked)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    finally:
        await first.close()
    thread_id = first.thread_id
    assert not (rig.workspace / "notes.txt").exists()
    calls_before = rig.brain.count("step:S-01")

    second = rig.session(thread_id)
    await second.start()
    again: list[ev.ApprovalRequested] = []

    def approve(event: ev.EventBase) -> None:
        if isinstance(event, ev.ApprovalRequested):
            again.append(event)
            second.broker.answer(event.request_id, ApprovalResponse(outcome="approve_once"))

    second.bus.add_listener(approve)
    called: list[ev.ToolCalled] = []
    second.bus.add_listener(lambda e: called.append(e) if isinstance(e, ev.ToolCalled) else None)
    try:
        async with asyncio.timeout(30):
            outcome = await second.resume()
    finally:
        await second.close()
    [before] = asked
    [before_call] = first_calls
    [after] = again
    assert (after.tool, after.args) == (before.tool, before.args) == ("write_file", args)
    assert (after.goal_id, after.step_id) == (before.goal_id, before.step_id)
    assert outcome.ok
    assert (rig.workspace / "notes.txt").read_text() == "kept\n"
    # the same call as before the restart (the node that asked runs again: only its
    # ToolCalled event repeats), not a new one from the model
    assert [c.call_id for c in called] == [before_call.call_id]
    assert rig.brain.count("step:S-01") == calls_before + 1  # the answer, not a new plan
    journal = Journal(rig.data_dir / "journal.db")
    try:
        writes = [e for e in journal.entries(thread_id) if e.tool == "write_file"]
    finally:
        journal.close()
    assert [w.state for w in writes] == ["finished"]  # written once
