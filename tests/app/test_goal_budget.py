"""Per-goal budgets in the app (issue 33 item 2), on the real Session against the fake
Ollama: the status line shows the running goal's spend against its budget, a goal that
reaches its token cap is suspended naming it, its view shows the spend, ``s`` (resume)
offers the cap raised and enter resumes it, ctrl+r completes it; ``b`` edits the caps."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from soothe.app.screens.budget import BudgetDialog
from soothe.app.screens.goals import GoalDetailDialog
from soothe.engine.goal_contract import GoalBudget
from soothe.widgets.goal_tree import NodeRef
from tests.app.real_harness import (
    Rig,
    assess,
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

LOOPING = FakeReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}], usage=(3000, 20))


def status_text(app: Any) -> str:
    return str(app.main.status.render())


async def on_goal(app: Any, pilot: Any, goal_id: str) -> None:
    tree = app.main.goal_tree
    tree.focus()
    node = tree.node_for(NodeRef("goal", goal_id))
    assert node is not None
    tree.move_cursor(node)
    await pilot.pause()


async def test_a_goal_at_its_token_cap_is_suspended_and_resumes_with_the_cap_raised(
    rig: Rig,
) -> None:
    rig.configure(goals={"budget": "tokens=10k"})
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "List the files")))
    rig.brain.always["step:S-01"] = LOOPING
    gate = rig.brain.hold("step:S-01")  # the step's calls wait until the test opens it
    app = rig.app()
    async with app.run_test(size=(160, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "List the files")
        await wait_event(rig.brain.seen("step:S-01"), pilot)
        # running: the status line holds its spend so far (the plan call) against the cap
        await until(lambda: "G1 tokens" in status_text(app), pilot)
        assert "/10k" in status_text(app)
        gate.set()
        await until(lambda: app.handler.goals["G1"].status == "suspended", pilot)
        await until(lambda: not app._run_going(), pilot)
        await settle(app, pilot)
        goal = app.handler.goals["G1"]
        assert goal.budget == GoalBudget(tokens=10_000)
        assert goal.spent.tokens >= 10_000
        assert "G1 tokens" not in status_text(app)  # it no longer runs
        notes = [b.get("note", "") for b in app.handler.state.blocks("conversation")]
        assert any("G1 suspended: budget: tokens 10k" in n for n in notes), notes

        # its view: the spend against the budget, and the cap it reached
        await on_goal(app, pilot, "G1")
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, GoalDetailDialog), pilot)
        shown = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "budget" in shown and "/10k — reached tokens 10k" in shown, shown
        await pilot.press("escape")

        # s on it: resume offers the cap raised; enter resumes, ctrl+r runs it to the end
        rig.brain.always.pop("step:S-01")
        rig.brain.always["step"] = "a.txt"
        rig.brain.add("StatusAssessment", assess("done", progress="complete"))
        rig.brain.add("complete", "The folder holds a.txt.")
        await on_goal(app, pilot, "G1")
        await pilot.press("r")  # r (make it ready again) makes the same offer
        await until(lambda: isinstance(app.screen, BudgetDialog), pilot)
        await pilot.press("escape")  # cancelled: nothing changes
        await until(lambda: not isinstance(app.screen, BudgetDialog), pilot)
        assert app.handler.goals["G1"].status == "suspended"
        await pilot.press("s")
        await until(lambda: isinstance(app.screen, BudgetDialog), pilot)
        offered = app.screen.query_one("#budget-text").value
        assert offered.startswith("tokens=") and offered != "tokens=10k", offered
        await pilot.press("enter")
        await until(lambda: app.handler.goals["G1"].status == "pending", pilot)
        assert app.handler.goals["G1"].budget.tokens > 10_000
        await pilot.press("ctrl+r")
        await until(lambda: app.handler.goals["G1"].status == "completed", pilot, timeout=20)
        await settle(app, pilot)


async def test_b_on_a_goal_edits_its_budget(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "/goal Summarise the README --budget calls=40,tokens=200k")
        await until(lambda: "G1" in app.handler.goals, pilot)
        await settle(app, pilot)
        await on_goal(app, pilot, "G1")
        await pilot.press("b")
        await until(lambda: isinstance(app.screen, BudgetDialog), pilot)
        field = app.screen.query_one("#budget-text")
        assert field.value == "calls=40,tokens=200k"
        field.value = "tokens=bad"
        await pilot.press("enter")  # refused in the dialog, with the reason
        assert isinstance(app.screen, BudgetDialog)
        problem = str(app.screen.query_one("#budget-problem").render())
        assert "tokens takes a number" in problem, problem
        field.value = "calls=60,time=30m"
        await pilot.press("enter")
        await until(
            lambda: app.handler.goals["G1"].budget == GoalBudget(calls=60, time_s=1800), pilot
        )
        await settle(app, pilot)
        notes = [b.get("note", "") for b in app.handler.state.blocks("conversation")]
        assert "G1 budget: calls=60,time=30m" in notes
