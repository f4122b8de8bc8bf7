"""A goal's spend (issue 33 item 2): calls and tokens charged per model request, time
counted only while the goal is active (not queued, waiting for the user, or suspended),
stored through the one write path with one goal.spent event; caps named when reached;
the default budget stamped at creation; a budget change is one goal.budget event."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from soothe.engine.context import ContextEngine, GoalBudget, GoalSpend
from soothe.engine.events import GoalBudgetSet, GoalSpent
from soothe.engine.goal_budget import budget_reason, raised_budget, reached_cap, spend_line


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    for module in ("soothe.engine.context.spend", "soothe.engine.context.goals"):
        monkeypatch.setattr(f"{module}.time", SimpleNamespace(monotonic=clock.monotonic))
    return clock


async def test_time_counts_only_while_active_and_the_spend_is_stored(
    db_path: Path, clock: Clock
) -> None:
    engine = await ContextEngine.open(db_path)
    seen: list[object] = []
    engine.bus.add_listener(seen.append)
    goal = await engine.create_goal("count", budget=GoalBudget(calls=5, tokens=1000))
    clock.now += 50  # queued: not counted
    await engine.activate_goal(goal.id)
    clock.now += 10
    engine.charge_goal(goal.id, 1, 300)
    engine.charge_goal(goal.id, 1, 200)
    assert engine.goal_spend(goal.id) == GoalSpend(calls=2, tokens=500, time_s=10)
    assert engine.get_goal(goal.id).spent == GoalSpend()  # not stored yet
    assert await engine.admit_goal(goal.id) == ""  # stores it, under every cap
    assert engine.get_goal(goal.id).spent == GoalSpend(calls=2, tokens=500, time_s=10)
    clock.now += 5
    await engine.await_clarification(goal.id)  # out of active: the clock stops
    assert engine.get_goal(goal.id).spent.time_s == 15
    clock.now += 300  # the user thinks it over: not counted
    await engine.resume_goal(goal.id)
    await engine.activate_goal(goal.id)
    clock.now += 2
    engine.charge_goal(goal.id, 1, 600)  # past the token cap
    assert await engine.admit_goal(goal.id) == "budget: tokens 1k"
    await engine.suspend_goal(goal.id, reason="budget: tokens 1k")
    clock.now += 100  # suspended: not counted
    stored = engine.get_goal(goal.id).spent
    assert stored == GoalSpend(calls=3, tokens=1100, time_s=17)
    await engine.close()

    again = await ContextEngine.open(db_path)  # what a reopen (or a kill) finds
    try:
        assert again.get_goal(goal.id).spent == stored
        assert again.over_budget(goal.id) == "budget: tokens 1k"
        await again.set_budget(goal.id, GoalBudget(calls=5, tokens=5000))
        assert again.over_budget(goal.id) == ""
    finally:
        await again.close()
    spends = [e for e in seen if isinstance(e, GoalSpent)]
    assert [e.spent for e in spends] == [
        GoalSpend(calls=2, tokens=500, time_s=10),
        GoalSpend(calls=3, tokens=1100, time_s=17),
    ]


async def test_default_budget_and_budget_events(db_path: Path) -> None:
    engine = await ContextEngine.open(db_path)
    seen: list[object] = []
    engine.bus.add_listener(seen.append)
    try:
        engine.default_budget = GoalBudget(tokens=200_000)
        plain = await engine.create_goal("default caps")
        own = await engine.create_goal("its own", budget=GoalBudget(calls=3))
        lifted = await engine.create_goal("no caps", budget=GoalBudget())
        assert plain.budget == GoalBudget(tokens=200_000)
        assert own.budget == GoalBudget(calls=3)
        assert lifted.budget == GoalBudget()
        await engine.set_budget(own.id, GoalBudget(calls=3))  # the same: no event
        await engine.set_budget(own.id, GoalBudget(calls=6))
        changes = [e for e in seen if isinstance(e, GoalBudgetSet)]
        assert [(e.goal_id, e.budget) for e in changes] == [(own.id, GoalBudget(calls=6))]
    finally:
        await engine.close()


def test_caps_in_words() -> None:
    budget = GoalBudget(calls=40, tokens=200_000, time_s=1800)
    spent = GoalSpend(calls=12, tokens=120_000, time_s=240)
    assert spend_line(budget, spent) == "tokens 120k/200k · calls 12/40 · time 4m/30m"
    assert reached_cap(budget, spent) == ""
    over = GoalSpend(calls=12, tokens=201_000, time_s=240)
    assert budget_reason(budget, over) == "budget: tokens 200k"
    assert raised_budget(budget, over) == GoalBudget(calls=40, tokens=401_000, time_s=1800)
    at_calls = GoalSpend(calls=40)
    assert budget_reason(budget, at_calls) == "budget: calls 40"
    assert raised_budget(budget, at_calls).calls == 80
    assert budget_reason(budget, GoalSpend(time_s=1800)) == "budget: time 30m"
    assert spend_line(GoalBudget(), spent) == ""
