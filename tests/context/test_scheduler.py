"""The scheduler and concurrent writers."""

from __future__ import annotations

import asyncio
from typing import Any

from soothe.engine.context import ContextEngine, GoalSpec


async def test_next_goals_respects_limit_and_conflicts(bus: Any) -> None:
    engine = await ContextEngine.open(":memory:", bus=bus, max_parallel_goals=2)
    try:
        a = await engine.create_goal("a", priority=90)
        b = await engine.create_goal("b", priority=80, conflicts_with=[a.id])
        c = await engine.create_goal("c", priority=10)
        d = await engine.create_goal("d", priority=5)
        scheduler = engine.planning.scheduler
        assert [g.id for g in scheduler.next_goals()] == [a.id, c.id]
        started = await scheduler.activate_next(lambda g: f"loop-{g.id}")
        assert [(g.id, g.status, g.loop_id) for g in started] == [
            (a.id, "active", f"loop-{a.id}"),
            (c.id, "active", f"loop-{c.id}"),
        ]
        assert scheduler.free_slots() == 0 and scheduler.next_goals() == []
        await engine.complete_goal(a.id)
        assert [g.id for g in scheduler.next_goals()] == [b.id]
        await engine.complete_goal(c.id)
        assert [g.id for g in await scheduler.activate_next()] == [b.id, d.id]
    finally:
        await engine.close()


async def test_concurrent_claims_activate_once(engine: ContextEngine) -> None:
    goal = await engine.create_goal("contested")
    results = await asyncio.gather(*(engine.claim_goal(goal.id, f"L{i}") for i in range(8)))
    winners = [r for r in results if r is not None]
    assert len(winners) == 1 and engine.get_goal(goal.id).loop_id == winners[0].loop_id


async def test_concurrent_conflicting_claims(engine: ContextEngine) -> None:
    a, b = await engine.create_goals(
        [GoalSpec(description="a", ref="a"), GoalSpec(description="b", conflicts_with=["a"])]
    )
    results = await asyncio.gather(engine.claim_goal(a.id), engine.claim_goal(b.id))
    assert sum(r is not None for r in results) == 1
    assert len(engine.list_goals(status="active")) == 1


async def test_concurrent_writers_keep_memory_and_disk_equal(engine: ContextEngine) -> None:
    goals = await engine.create_goals([GoalSpec(description=f"g{i}") for i in range(20)])

    async def work(gid: str) -> None:
        await engine.activate_goal(gid)
        await engine.append_ledger(gid, "assistant", "x", "execute")
        await engine.set_priority(gid, 60)
        await engine.complete_goal(gid, findings=f"findings {gid}")

    await asyncio.gather(*(work(g.id) for g in goals))
    async with engine.db.execute("SELECT id, status, findings FROM goals ORDER BY seq") as cur:
        rows = await cur.fetchall()
    assert [tuple(r) for r in rows] == [(g.id, g.status, g.findings) for g in engine.list_goals()]
    assert {g.status for g in engine.list_goals()} == {"completed"}
    assert [e.id for e in engine.get_ledger_entries()] == list(range(1, 21))


async def test_scheduler_lists_paused_goals_whose_dependencies_are_met(
    engine: ContextEngine,
) -> None:
    """The seed's ``check_reactivatable_goals``: blocked or suspended goals whose every
    dependency is completed, oldest first; it moves nothing."""
    a = await engine.create_goal("a")
    b = await engine.create_goal("b", depends_on=[a.id])
    await engine.block_goal(b.id, "waiting for the user")
    c = await engine.create_goal("c", depends_on=[a.id])
    await engine.suspend_goal(c.id)
    d = await engine.create_goal("d")
    await engine.suspend_goal(d.id)
    await engine.create_goal("e", depends_on=[a.id])  # pending: not a paused goal
    doomed = await engine.create_goal("doomed")
    f = await engine.create_goal("f", depends_on=[doomed.id])
    scheduler = engine.planning.scheduler
    assert [g.id for g in scheduler.check_reactivatable_goals()] == [d.id]
    await engine.activate_goal(a.id)
    await engine.complete_goal(a.id)
    await engine.activate_goal(doomed.id)
    await engine.fail_goal(doomed.id, "gone", allow_retry=False)
    assert engine.get_goal(f.id).status == "blocked"  # on a failed dependency: stays out
    assert [g.id for g in scheduler.check_reactivatable_goals()] == [b.id, c.id, d.id]
    assert [engine.get_goal(g).status for g in (b.id, c.id, d.id)] == [
        "blocked",
        "suspended",
        "suspended",
    ]
