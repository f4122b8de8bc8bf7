"""The PostgreSQL store's own behaviour: schema version and refusals, ids across
processes, memory search, the DSN never printed."""

from __future__ import annotations

import psycopg
import pytest

from soothe.engine.config import Settings
from soothe.engine.context import ContextEngine
from soothe.engine.context.errors import StoreError
from soothe.engine.context.store_pg import PG_SCHEMA_VERSION, PgStore, redact_dsn
from soothe.engine.memory import PgMemory, memory_for


async def test_schema_version_recorded_and_newer_refused(pg_dsn: str) -> None:
    engine = await ContextEngine.open(await PgStore.open(pg_dsn))
    await engine.create_goal("kept")
    await engine.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM soothe_schema").fetchone() == (PG_SCHEMA_VERSION,)
        conn.execute("UPDATE soothe_schema SET version = %s", (PG_SCHEMA_VERSION + 1,))
    newer = rf"schema v{PG_SCHEMA_VERSION + 1} is newer than this soothe \(v{PG_SCHEMA_VERSION}\)"
    with pytest.raises(StoreError, match=newer):
        await PgStore.open(pg_dsn)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM goals").fetchone() == (1,)


async def test_foreign_database_refused_untouched(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(StoreError, match=r"not a soothe database .*invoices"):
        await PgStore.open(pg_dsn)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    assert tables == [("invoices",)]


async def test_two_processes_never_share_an_id(pg_dsn: str) -> None:
    """Two engines open on one database at once (as two workers are): goal ids, ledger and
    message ids stay distinct, and each sees the other's goals after refresh."""
    a = await ContextEngine.open(await PgStore.open(pg_dsn))
    b = await ContextEngine.open(await PgStore.open(pg_dsn))
    try:
        thread = await a.create_thread("shared")
        await b.refresh()
        ga = [await a.create_goal(f"a{i}", thread_id=thread.id) for i in range(3)]
        gb = [await b.create_goal(f"b{i}", thread_id=thread.id) for i in range(3)]
        assert len({g.id for g in ga + gb}) == 6
        for eng, goals in ((a, ga), (b, gb)):
            for g in goals:
                await eng.append_ledger(g.id, "assistant", g.description, "execute", thread.id)
            await eng.add_message(thread.id, "user", "hi")
        await a.refresh()
        assert {g.description for g in a.list_goals()} == {"a0", "a1", "a2", "b0", "b1", "b2"}
        ids = [e.id for e in a.get_ledger_entries()]
        assert len(ids) == len(set(ids)) == 6
        assert len({m.id for m in await a.messages(thread.id)}) == 2
    finally:
        await a.close()
        await b.close()


async def test_memory_full_text_search(pg_dsn: str) -> None:
    engine = await ContextEngine.open(await PgStore.open(pg_dsn))
    try:
        memory = memory_for(engine)
        assert isinstance(memory, PgMemory)
        await memory.store("The capital of France is Paris.", thread_id="t1", kind="finding")
        await memory.store("Bananas are yellow when ripe.", thread_id="t2", kind="finding")
        found = await memory.recall("what is the capital city of France?", thread_id="t3")
        assert [r.text for r in found] == ["The capital of France is Paris."]
        memory.cross_thread = False
        assert await memory.recall("France", thread_id="t3") == []
        await memory.delete_thread("t1")
        memory.cross_thread = True
        assert await memory.recall("France", thread_id="t3") == []
    finally:
        await engine.close()


def test_dsn_password_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOOTHE_STORAGE__BACKEND", "postgresql")
    monkeypatch.setenv("SOOTHE_STORAGE__DSN", "postgresql://bob:s3cret@db.example:5432/soothe")
    settings = Settings()
    assert settings.storage.backend == "postgresql"
    shown = settings.masked()["storage"]["dsn"]
    assert shown == "postgresql://bob:***@db.example:5432/soothe"
    assert "s3cret" not in redact_dsn("host=db password=s3cret dbname=x")


async def test_a_write_touches_only_what_it_changes(pg_dsn: str) -> None:
    """A worker blocking a failed goal's dependent writes that goal's status and error,
    not its stale copy of the rest: another worker's new priority for it stays."""
    a = await ContextEngine.open(await PgStore.open(pg_dsn))
    b = await ContextEngine.open(await PgStore.open(pg_dsn))
    try:
        first = await a.create_goal("first", max_retries=0)
        later = await a.create_goal("later", depends_on=[first.id], max_retries=0)
        await b.refresh()
        await b.set_priority(later.id, 90)  # a's copy of `later` still says 50
        await a.activate_goal(first.id)
        await a.fail_goal(first.id, "broken", allow_retry=False)
        assert a.get_goal(later.id).status == "blocked"
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            row = conn.execute(
                "SELECT status, priority FROM goals WHERE id = %s", (later.id,)
            ).fetchone()
        assert row == ("blocked", 90)
    finally:
        await a.close()
        await b.close()
