"""tests/context/test_persistence.py on PostgreSQL, less what is SQLite's own: the file,
WAL and ``PRAGMA user_version``, run_in_transaction's sqlite3 connection, a crash in a
child process opening the file (tests/pg/test_workers.py kills workers on PostgreSQL), a
trigger in SQLite's syntax (below in PostgreSQL's)."""

from typing import Any

import psycopg
import pytest

import tests.context.test_persistence as _sqlite_suite
from soothe.engine.context import ContextEngine, GoalSpec
from tests.context.test_persistence import *  # noqa: F403

_SQLITE_ONLY = {
    "test_round_trip_restores_everything",  # asserts the file exists
    "test_schema_version_and_wal",
    "test_newer_schema_is_refused",
    "test_forward_migration_keeps_data",
    "test_module_migrations_and_shared_transactions",
    "test_memory_database_only_on_request",
    "test_crash_recovery",  # the child process opens a file
    "test_failed_write_changes_nothing",  # a SQLite trigger
}
for _name in _SQLITE_ONLY:
    globals().pop(_name, None)
del _sqlite_suite


async def test_failed_write_changes_nothing_pg(engine: ContextEngine, events: list[Any]) -> None:
    a = await engine.create_goal("a")
    async with engine.db.connection() as conn:
        await conn.execute(
            "CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN "
            "IF NEW.dst = 'G1' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$ "
            "LANGUAGE plpgsql"
        )
        await conn.execute(
            "CREATE TRIGGER boom BEFORE INSERT ON goal_edges FOR EACH ROW EXECUTE FUNCTION boom()"
        )
    before = len(events)
    with pytest.raises(psycopg.errors.RaiseException, match="boom"):
        await engine.create_goals(
            [GoalSpec(description="b"), GoalSpec(description="c", depends_on=[a.id])]
        )
    assert [g.id for g in engine.list_goals()] == [a.id]
    assert len(events) == before
    async with engine.db.execute("SELECT id FROM goals") as cursor:
        assert await cursor.fetchall() == [(a.id,)]
    async with engine.db.connection() as conn:
        await conn.execute("DROP TRIGGER boom ON goal_edges")
        await conn.execute("DROP FUNCTION boom()")
    # The goal numbers the failed write reserved are spent on a shared store (another
    # process may have taken the next ones meanwhile): the next goal is G4, not G2.
    assert (await engine.create_goal("b")).id == "G4"
