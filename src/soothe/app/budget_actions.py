"""The goal tree's budget keys (GoalActions calls these): ``b`` edits a goal's caps, and
resuming a goal suspended at a cap (``s``) offers the cap raised first."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from soothe.app.goal_actions import GoalActions
    from soothe.engine.goal_contract import GoalBudget
    from soothe.engine.views import GoalView

TERMINAL = ("completed", "failed", "cancelled")


def ask_budget(app: GoalActions, goal: GoalView) -> None:
    """b: the goal's budget in a small dialog, prefilled with its caps."""
    from soothe.app.screens.budget import BudgetDialog

    if goal.status in TERMINAL:
        app.notify(f"{goal.id} is {goal.status}: its budget no longer applies.", severity="warning")
        return

    def chosen(budget: GoalBudget | None) -> None:
        if budget is not None:
            app.call_session(lambda s: s.set_budget(goal.id, budget), what=f"budget {goal.id}")

    lead = "Caps: calls, tokens (prompt + reply), time running. Leave one out: no cap."
    app.push_screen(BudgetDialog(f"Budget of {goal.id}", lead, goal.budget), chosen)


def resume_at_cap(app: GoalActions, goal: GoalView) -> bool:
    """Resuming a goal suspended at one of its caps: a dialog offers the budget with that
    cap raised (doubled); enter resumes with it. False for any other goal (the caller
    resumes it as usual)."""
    from soothe.app.screens.budget import BudgetDialog
    from soothe.engine.goal_budget import raised_budget, reached_cap

    cap = reached_cap(goal.budget, goal.spent)
    if goal.status != "suspended" or not cap:
        return False

    def chosen(budget: GoalBudget | None) -> None:
        if budget is not None:
            app.call_session(
                lambda s: s.resume_with_budget(goal.id, budget), what=f"resume {goal.id}"
            )

    lead = f"{goal.id} stopped at its {cap}. Raise the cap to resume it:"
    offer = raised_budget(goal.budget, goal.spent)
    app.push_screen(BudgetDialog(f"Resume {goal.id}", lead, offer, enter="resumes"), chosen)
    return True
