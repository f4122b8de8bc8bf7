"""Durable steps in the app, on the real Session and the fake Ollama (issue 14): Esc
pauses the running step (its card says so, the store has it pending), and resuming the
goal (s, then ctrl+r) continues the step from its checkpoint: the model's first request
after the resume already holds the earlier tool result, and that tool does not run again.
"""

from __future__ import annotations

from typing import Any

from soothe.app.view_state import CONVERSATION
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
        assert app.session.context.get_step(goal.id, "S-01").status == "pending"
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
