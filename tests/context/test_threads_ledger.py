"""Threads, thread messages and the ledger cap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from soothe.engine.context import ContextEngine, GoalInUse, ThreadNotFound


async def test_threads_lifecycle(engine: ContextEngine) -> None:
    first = await engine.create_thread("first")
    second = await engine.create_thread("second")
    assert len(first.id) == 12 and first.id != second.id
    assert engine.list_threads()[0].id in {first.id, second.id}
    touched = await engine.touch_thread(first.id, title="renamed")
    assert touched.title == "renamed" and touched.last_active >= first.last_active
    await engine.add_message(second.id, "user", "hi")
    assert engine.list_threads()[0].id == second.id
    assert engine.get_thread(first.id) == touched
    assert engine.get_thread("nope") is None
    with pytest.raises(ThreadNotFound):
        await engine.add_message("nope", "user", "x")
    with pytest.raises(ThreadNotFound):
        await engine.messages("nope")


async def test_delete_thread_removes_its_goals_and_history(engine: ContextEngine) -> None:
    keep = await engine.create_thread("keep")
    drop = await engine.create_thread("drop")
    stays = await engine.create_goal("stays", thread_id=keep.id)
    root = await engine.create_goal("root", thread_id=drop.id)
    child = await engine.create_goal(
        "child", parent_id=root.id, thread_id=drop.id, informs=[stays.id]
    )
    await engine.add_informs(stays.id, child.id)
    await engine.add_conflict(stays.id, root.id)
    await engine.add_evidence(child.id, kind="tool", summary="s")
    await engine.append_ledger(child.id, "assistant", "goal entry", "plan")
    await engine.append_ledger(None, "user", "thread entry", "chat", thread_id=drop.id)
    await engine.append_ledger(stays.id, "assistant", "kept", "plan")
    await engine.add_message(drop.id, "user", "bye")
    await engine.delete_thread(drop.id)
    assert [g.id for g in engine.list_goals()] == [stays.id]
    left = engine.get_goal(stays.id)
    assert left.informs == () and left.conflicts_with == ()
    assert [e.content for e in engine.get_ledger_entries()] == ["kept"]
    assert engine.get_thread(drop.id) is None
    for table in ("goals", "steps", "evidence", "ledger", "thread_messages", "goal_edges"):
        async with engine.db.execute(f"SELECT count(*) FROM {table}") as cur:
            count = (await cur.fetchone())[0]
        assert count == (1 if table in ("goals", "ledger") else 0), table


async def test_delete_thread_refusals(engine: ContextEngine) -> None:
    a = await engine.create_thread("a")
    b = await engine.create_thread("b")
    goal = await engine.create_goal("in a", thread_id=a.id)
    await engine.create_goal("in b", thread_id=b.id, depends_on=[goal.id])
    with pytest.raises(GoalInUse, match="another thread"):
        await engine.delete_thread(a.id)
    running = await engine.create_goal("running", thread_id=b.id)
    await engine.activate_goal(running.id)
    with pytest.raises(GoalInUse, match="active"):
        await engine.delete_thread(b.id)
    with pytest.raises(ThreadNotFound):
        await engine.delete_thread("zzz")


async def test_ledger_keeps_everything_by_default(engine: ContextEngine) -> None:
    goal = await engine.create_goal("g", thread_id="t")
    for n in range(50):
        await engine.append_ledger(goal.id, "assistant", f"m{n}", "plan" if n % 2 else "act")
    entries = engine.get_ledger_entries(goal.id)
    assert len(entries) == 50 and entries[0].thread_id == "t"
    assert [e.content for e in engine.get_ledger_entries(phases=["plan"])][:2] == ["m1", "m3"]


async def test_ledger_cap(db_path: Path, bus: Any) -> None:
    engine = await ContextEngine.open(db_path, bus=bus, ledger_max_entries=5)
    goal = await engine.create_goal("g")
    for n in range(12):
        await engine.append_ledger(goal.id if n % 3 else None, "a", f"m{n}", "p", thread_id="t")
    assert [e.content for e in engine.get_ledger_entries()] == [f"m{n}" for n in range(7, 12)]
    await engine.close()
    again = await ContextEngine.open(db_path, ledger_max_entries=5)
    assert [e.content for e in again.get_ledger_entries()] == [f"m{n}" for n in range(7, 12)]
    await again.close()
    smaller = await ContextEngine.open(db_path, ledger_max_entries=2)
    assert [e.content for e in smaller.get_ledger_entries()] == ["m10", "m11"]
    await smaller.close()
    everything = await ContextEngine.open(db_path)
    assert len(everything.get_ledger_entries()) == 2
    await everything.close()
