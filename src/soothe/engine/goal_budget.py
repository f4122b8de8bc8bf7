"""A goal's budget against its spend, in words: which cap it reached, the spend line the
screen shows, and the raised budget a resume offers. Pure functions over the light
contract models (no heavy imports: widgets and the CLI read them before the engine loads).
"""

from __future__ import annotations

from soothe.engine.goal_args import short_count, short_time
from soothe.engine.goal_contract import GoalBudget, GoalSpend

BUDGET_REASON = "budget: "
"""How the reason of a goal suspended at a cap begins (``budget: tokens 200k``)."""


def reached_cap(budget: GoalBudget, spent: GoalSpend) -> str:
    """The first cap ``spent`` has reached, named with its value (``tokens 200k``,
    ``calls 40``, ``time 30m``), or "" when it is under every cap."""
    if budget.tokens is not None and spent.tokens >= budget.tokens:
        return f"tokens {short_count(budget.tokens)}"
    if budget.calls is not None and spent.calls >= budget.calls:
        return f"calls {budget.calls}"
    if budget.time_s is not None and spent.time_s >= budget.time_s:
        return f"time {short_time(budget.time_s)}"
    return ""


def budget_reason(budget: GoalBudget, spent: GoalSpend) -> str:
    """The suspend reason for a goal at a cap (``budget: tokens 200k``), or ""."""
    cap = reached_cap(budget, spent)
    return f"{BUDGET_REASON}{cap}" if cap else ""


def has_budget(budget: GoalBudget) -> bool:
    return budget.calls is not None or budget.tokens is not None or budget.time_s is not None


def raised_budget(budget: GoalBudget, spent: GoalSpend) -> GoalBudget:
    """What a resume offers: every cap the spend has reached, doubled (and at least past
    the spend, so the goal can make one more call); the caps not reached stay."""
    values = budget.model_dump()
    if budget.tokens is not None and spent.tokens >= budget.tokens:
        values["tokens"] = max(budget.tokens * 2, spent.tokens + budget.tokens)
    if budget.calls is not None and spent.calls >= budget.calls:
        values["calls"] = max(budget.calls * 2, spent.calls + 1)
    if budget.time_s is not None and spent.time_s >= budget.time_s:
        values["time_s"] = max(budget.time_s * 2, spent.time_s + budget.time_s)
    return GoalBudget(**values)


def _clock(seconds: float) -> str:
    """Spent time, short: 45s, 4m, 1h05m."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def spend_line(budget: GoalBudget, spent: GoalSpend) -> str:
    """``tokens 120k/200k · calls 12/40 · time 4m/30m``: each capped measure against its
    cap; "" for a goal with no budget."""
    parts: list[str] = []
    if budget.tokens is not None:
        parts.append(f"tokens {short_count(spent.tokens)}/{short_count(budget.tokens)}")
    if budget.calls is not None:
        parts.append(f"calls {spent.calls}/{budget.calls}")
    if budget.time_s is not None:
        parts.append(f"time {_clock(spent.time_s)}/{short_time(budget.time_s)}")
    return " · ".join(parts)
