"""Goal moves the loop relies on: a goal whose dependency failed for good is blocked with
the reason (not pending forever) and unblocked when that dependency is retried; the plan
checks and their deterministic fallback."""

from __future__ import annotations

import pytest

from soothe.engine.context import ContextEngine, IllegalTransition
from soothe.engine.loop.planner import plan_problems, repair_plan
from soothe.engine.loop.schemas import PlanGeneration


async def test_a_failed_dependency_blocks_and_its_retry_unblocks() -> None:
    engine = await ContextEngine.open(":memory:")
    try:
        g1 = await engine.create_goal("first")
        g2 = await engine.create_goal("second", depends_on=[g1.id])
        g3 = await engine.create_goal("third", depends_on=[g2.id])
        await engine.activate_goal(g1.id)
        await engine.fail_goal(g1.id, error="boom", allow_retry=True)
        assert engine.get_goal(g1.id).status == "pending"  # a retry remained
        assert engine.get_goal(g2.id).status == "pending"
        for _ in range(2):
            await engine.activate_goal(g1.id)
            await engine.fail_goal(g1.id, error="boom", allow_retry=True)
        assert engine.get_goal(g1.id).status == "failed"  # max_retries (2) respected
        for g in (g2, g3):
            blocked = engine.get_goal(g.id)
            assert blocked.status == "blocked" and blocked.error == f"dependency {g1.id} failed"
        with pytest.raises(IllegalTransition, match=r"no retries left \(2/2\)"):
            await engine.retry_goal(g1.id)
        await engine.retry_goal_fresh(g1.id)
        assert engine.get_goal(g2.id).status == "pending" and engine.get_goal(g2.id).error == ""
        assert engine.get_goal(g3.id).status == "pending"  # it waits on G2 again
    finally:
        await engine.close()


def test_plan_problems_and_the_fallback() -> None:
    def plan(*steps: tuple[str, list[str]], desc: str = "do it") -> PlanGeneration:
        return PlanGeneration.model_validate(
            {"steps": [{"id": i, "description": desc, "dependencies": d} for i, d in steps]}
        )

    assert plan_problems(plan(("S-01", []))) == []
    assert plan_problems(plan(("S-01", ["S-01"]))) == ["step S-01 depends on itself"]
    assert plan_problems(plan(("S-01", ["S-09"]))) == [
        "step S-01 depends on S-09, which is not a step"
    ]
    assert plan_problems(plan(("S-01", ["S-02"]), ("S-02", ["1"]))) == [
        "step cycle S-01 -> S-02 -> S-01"
    ]
    copied = plan(("S-01", []), desc="Steps without dependencies on each other run in parallel.")
    assert plan_problems(copied) == ["step S-01 copies a rule of the prompt instead of a task"]

    fixed, notes = repair_plan(plan(("S-01", ["S-02"]), ("S-02", ["S-01"])), "the goal")
    assert [s.id for s in fixed.steps] == ["S-01", "S-02"] and plan_problems(fixed) == []
    assert notes == ["S-02: dropped dependency on S-01 (cycle)"]
    fixed, notes = repair_plan(copied, "the goal")
    assert [(s.id, s.description) for s in fixed.steps] == [("S-01", "the goal")]
    assert notes[-1] == "replaced the plan by one step that does the goal"
