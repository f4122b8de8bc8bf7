"""SQLite persistence: round trip, crash recovery, migrations, atomic writes."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from soothe.engine.context import ContextEngine, GoalNotFound, GoalSpec, StepSpec, StoreError
from soothe.engine.context import store as store_module


def _everything(engine: ContextEngine) -> dict[str, Any]:
    goals = engine.list_goals()
    return {
        "goals": [g.model_dump() for g in goals],
        "steps": {g.id: [s.model_dump() for s in engine.step_dag(g.id)] for g in goals},
        "evidence": {g.id: [e.model_dump() for e in engine.evidence(g.id)] for g in goals},
        "ledger": [e.model_dump() for e in engine.get_ledger_entries()],
        "threads": [t.model_dump() for t in engine.list_threads()],
        "ready": [g.id for g in engine.ready_goals()],
    }


async def _populate(engine: ContextEngine) -> str:
    thread = await engine.create_thread("first chat")
    t = thread.id
    root = await engine.create_goal("root goal", priority=70, thread_id=t, topic="docs")
    a = await engine.create_goal("a", parent_id=root.id, thread_id=t, source="decomposition")
    b = await engine.create_goal("b", depends_on=[a.id], informs=[root.id], thread_id=t)
    c = await engine.create_goal("c", conflicts_with=[b.id], max_retries=5)
    await engine.add_dependency(root.id, b.id)
    await engine.add_dependency(root.id, a.id)
    await engine.remove_dependency(root.id, b.id)
    await engine.add_dependency(root.id, b.id)  # order of edges must survive: a, b
    await engine.activate_goal(a.id, loop_id="loop-a")
    await engine.set_plan(
        a.id,
        [
            StepSpec(id="KFA-01", description="look", expected_output="a listing"),
            StepSpec(id="KFA-02", description="ask", kind="ask_user", questions=["which?"]),
            StepSpec(id="KFA-03", description="use", dependencies=["1", "KFA-02", "zz"]),
        ],
        1,
        unknown_deps="drop",
    )
    await engine.complete_step(a.id, "KFA-01", "3 files", tokens=40, duration_s=1.25)
    await engine.start_step(a.id, "KFA-02")
    await engine.fail_step(a.id, "KFA-02", "no answer", cancelled=True)
    await engine.add_evidence(a.id, kind="tool", summary="ls", content="x\ny", step_id="KFA-01")
    await engine.fail_goal(a.id, "step failed")
    await engine.fail_goal(c.id, "nope", allow_retry=False)
    await engine.set_priority(b.id, 5)
    await engine.append_ledger(a.id, "assistant", "plan text", "plan")
    await engine.append_ledger(None, "user", "hello", "chat", thread_id=t)
    await engine.add_message(t, "user", "hello")
    await engine.add_message(t, "assistant", "hi there")
    return t


async def test_round_trip_restores_everything(db_path: Path) -> None:
    engine = await ContextEngine.open(db_path)
    thread_id = await _populate(engine)
    before = _everything(engine)
    await engine.close()
    assert (db_path.parent / "soothe.db").exists()

    again = await ContextEngine.open(db_path)
    try:
        assert _everything(again) == before
        assert again.get_goal("G1").depends_on == ("G2", "G3")
        assert again.get_goal("G4").conflicts_with == ("G3",)
        assert again.get_goal("G3").conflicts_with == ("G4",)
        step = again.step_dag("G2").steps["KFA-03"]
        assert step.dropped_dependencies == ("zz",) and step.status == "skipped"
        assert [m.content for m in await again.messages(thread_id)] == ["hello", "hi there"]
        assert [m.content for m in await again.messages(thread_id, limit=1)] == ["hi there"]
        message = await again.add_message(thread_id, "user", "back again")
        assert message.id == 3
        created = await again.create_goal("after reopen")
        assert created.id == "G5"
        ev = await again.add_evidence("G2", kind="ledger", summary="more")
        assert ev.id == "E-G2-2"
        entry = await again.append_ledger("G2", "assistant", "more", "execute")
        assert entry.id == 3
    finally:
        await again.close()


async def test_goal_counter_survives_removal_of_the_newest_goal(db_path: Path) -> None:
    engine = await ContextEngine.open(db_path)
    await engine.create_goal("a")
    b = await engine.create_goal("b")
    await engine.remove_goal(b.id)
    await engine.close()
    again = await ContextEngine.open(db_path)
    assert (await again.create_goal("c")).id == "G3"
    await again.close()


CRASHING_WRITER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from soothe.engine.context import ContextEngine, StepSpec

    async def main():
        engine = await ContextEngine.open(sys.argv[1])
        a = await engine.create_goal("running when we crash")
        b = await engine.create_goal("waiting", depends_on=[a.id])
        c = await engine.create_goal("done")
        await engine.complete_goal(c.id, findings="kept")
        await engine.activate_goal(a.id, loop_id="L1")
        await engine.set_plan(a.id, [StepSpec(id="S-1", description="x"),
                                     StepSpec(id="S-2", description="y")], 1)
        await engine.complete_step(a.id, "S-1", "half way")
        await engine.start_step(a.id, "S-2")
        await engine.append_ledger(a.id, "assistant", "working", "execute")
        print("written", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no checkpoint

    asyncio.run(main())
    """
)


def _crash_write(path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip() == "written", result.stderr
    assert result.returncode == -9


async def test_crash_recovery(db_path: Path, events: list[Any], bus: Any) -> None:
    _crash_write(db_path)
    assert Path(str(db_path) + "-wal").exists(), "the crash left the WAL un-checkpointed"
    engine = await ContextEngine.open(db_path, bus=bus)
    try:
        a = engine.get_goal("G1")
        assert (a.status, a.loop_id) == ("active", "L1")
        assert engine.get_goal("G3").findings == "kept"
        assert engine.step_dag("G1").steps["S-2"].status == "active"
        assert [e.content for e in engine.get_ledger_entries("G1")] == ["working"]
        moved = await engine.recover()
        assert moved == ["G1"]
        a = engine.get_goal("G1")
        assert (a.status, a.attempts_after_crash, a.loop_id) == ("pending", 1, None)
        assert {s.id: s.status for s in engine.step_dag("G1")} == {
            "S-1": "completed",
            "S-2": "pending",
        }
        changed = [e for e in events if e.type == "goal.status_changed"]
        assert [(e.goal_id, e.from_status, e.to_status) for e in changed] == [
            ("G1", "active", "pending")
        ]
        assert await engine.recover() == []
    finally:
        await engine.close()
    again = await ContextEngine.open(db_path)
    assert again.get_goal("G1").attempts_after_crash == 1
    assert again.step_dag("G1").steps["S-2"].status == "pending"
    await again.close()


async def test_recover_fails_a_goal_that_keeps_crashing(engine: ContextEngine) -> None:
    goal = await engine.create_goal("crashes every time")
    for _ in range(3):
        await engine.activate_goal(goal.id)
        assert await engine.recover(max_crash_attempts=3) == [goal.id]
    await engine.activate_goal(goal.id)
    assert await engine.recover(max_crash_attempts=3) == []
    final = engine.get_goal(goal.id)
    assert final.status == "failed" and final.attempts_after_crash == 4


def _sql(path: Path, query: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(query).fetchall()


async def test_schema_version_and_wal(db_path: Path) -> None:
    engine = await ContextEngine.open(db_path)
    await engine.create_goal("x")
    assert _sql(db_path, "PRAGMA user_version") == [(store_module.SCHEMA_VERSION,)]
    assert _sql(db_path, "PRAGMA journal_mode") == [("wal",)]
    tables = {r[0] for r in _sql(db_path, "SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"goals", "goal_edges", "steps", "evidence", "ledger", "threads"} <= tables
    assert {"thread_messages", "module_versions", "meta"} <= tables
    await engine.close()


async def test_newer_schema_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with sqlite3.connect(db_path) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="v99 is newer"):
        await ContextEngine.open(db_path)


async def test_forward_migration_keeps_data(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = await ContextEngine.open(db_path)
    await engine.create_goal("from v1", priority=80)
    await engine.close()
    v2 = [*store_module.MIGRATIONS, ["CREATE TABLE goal_notes (goal_id TEXT, note TEXT)"]]
    monkeypatch.setattr(store_module, "MIGRATIONS", v2)
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", len(v2))
    again = await ContextEngine.open(db_path)
    assert again.get_goal("G1").priority == 80
    await again.close()
    assert _sql(db_path, "PRAGMA user_version") == [(len(v2),)]
    assert _sql(db_path, "SELECT count(*) FROM goal_notes") == [(0,)]


async def test_failed_write_changes_nothing(engine: ContextEngine, events: list[Any]) -> None:
    a = await engine.create_goal("a")
    await engine.db.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON goal_edges WHEN NEW.dst = 'G1' "
        "BEGIN SELECT RAISE(ABORT, 'boom'); END"
    )
    before = len(events)
    with pytest.raises(sqlite3.IntegrityError, match="boom"):
        await engine.create_goals(
            [GoalSpec(description="b"), GoalSpec(description="c", depends_on=[a.id])]
        )
    assert [g.id for g in engine.list_goals()] == [a.id]
    assert len(events) == before
    async with engine.db.execute("SELECT id FROM goals") as cursor:
        assert await cursor.fetchall() == [(a.id,)]
    await engine.db.execute("DROP TRIGGER boom")
    assert (await engine.create_goal("b")).id == "G2"


async def test_cancelled_caller_still_gets_its_commit_applied(
    engine: ContextEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    goal = await engine.create_goal("x")
    real_write = engine._store.write
    entered = asyncio.Event()
    release = asyncio.Event()

    async def slow_write(ops: Any) -> None:
        entered.set()
        await release.wait()
        await real_write(ops)

    monkeypatch.setattr(engine._store, "write", slow_write)
    task = asyncio.create_task(engine.complete_goal(goal.id, findings="done"))
    await asyncio.wait_for(entered.wait(), 5)
    task.cancel()
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert engine.get_goal(goal.id).status == "completed"
    async with engine.db.execute("SELECT status FROM goals WHERE id = ?", (goal.id,)) as cur:
        assert await cur.fetchone() == ("completed",)


async def test_module_migrations(engine: ContextEngine) -> None:
    version = await engine.migrate_module(
        "memory", [["CREATE TABLE memory_notes (id INTEGER PRIMARY KEY, text TEXT)"]]
    )
    assert version == 1
    assert await engine.migrate_module("memory", [["CREATE TABLE memory_notes (x)"]]) == 1


async def test_closed_engine_refuses_writes(db_path: Path) -> None:
    engine = await ContextEngine.open(db_path)
    await engine.close()
    await engine.close()
    with pytest.raises(Exception, match="closed"):
        await engine.create_goal("late")


async def test_memory_database_only_on_request(engine: ContextEngine) -> None:
    assert engine.path == ":memory:"
    with pytest.raises(GoalNotFound):
        engine.get_goal("G1")
