"""tests/context/test_scheduler.py on PostgreSQL; the concurrent-writers test with the
ledger ids PostgreSQL hands out (this process's id block, not 1..n)."""

import asyncio

from soothe.engine.context import ContextEngine, GoalSpec
from soothe.engine.context.store_pg import BLOCK
from tests.context.test_scheduler import *  # noqa: F403

globals().pop("test_concurrent_writers_keep_memory_and_disk_equal", None)


async def test_concurrent_writers_keep_memory_and_disk_equal_pg(engine: ContextEngine) -> None:
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
    low = engine._store.block * BLOCK  # type: ignore[attr-defined]
    assert [e.id for e in engine.get_ledger_entries()] == list(range(low + 1, low + 21))
    async with engine.db.execute("SELECT id FROM ledger ORDER BY id") as cur:
        assert [r[0] for r in await cur.fetchall()] == list(range(low + 1, low + 21))
