"""A goal's budget in the goal view: one ``budget`` row, its spend against each cap
(``tokens 120k/200k · calls 12/40 · time 4m/30m``), and which cap it reached."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pydantic models: not imported for the first frame
    from soothe.engine.goal_contract import GoalBudget, GoalSpend


def budget_text(budget: GoalBudget, spent: GoalSpend) -> str:
    """The row's text ("" for a goal without a budget)."""
    from soothe.engine.goal_budget import has_budget, reached_cap, spend_line

    if not has_budget(budget):
        return ""
    cap = reached_cap(budget, spent)
    return spend_line(budget, spent) + (f" — reached {cap}" if cap else "")


def budget_rows(budget: GoalBudget, spent: GoalSpend) -> list[tuple[str, str]]:
    """``[("budget", text)]`` for the goal view's rows, or none."""
    text = budget_text(budget, spent)
    return [("budget", text)] if text else []
