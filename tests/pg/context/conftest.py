"""The ContextEngine suite (tests/context) again, on PostgreSQL.

Every ``ContextEngine.open`` of a test opens a PgStore instead: ``":memory:"`` a fresh
schema, a file path the schema of that path (so a test that reopens its file reopens its
database). The test modules here import the tests of tests/context unchanged.

Speed: migrating a fresh schema costs more than emptying one, so a ``":memory:"`` store's
schema is emptied when its engine closes (tables truncated, module tables dropped) and
handed to the next ``":memory:"`` open. The tests that read the database through
``engine.db.execute(sql)`` (aiosqlite's shape) get a small reader that runs the same
statement on PostgreSQL."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from soothe.engine.bus import EventBus
from soothe.engine.context import ContextEngine
from soothe.engine.context.store_pg import PgStore, translate
from tests.context.conftest import db_path, events, recorder  # noqa: F401

_original_open = ContextEngine.open.__func__  # type: ignore[attr-defined]

_CLEAN: list[str] = []
"""Migrated ``":memory:"`` schemas emptied by their engine's close, ready again."""

_BASE_TABLES = (
    "goals, goal_edges, steps, evidence, ledger, threads, thread_messages, "
    "module_versions, transcript, memory, meta"
)


async def _empty(store: PgStore) -> None:
    """Back to a just-migrated schema: base tables empty, other modules' tables gone."""
    base = {t.strip() for t in _BASE_TABLES.split(",")} | {"soothe_schema"}
    async with store.pool.connection() as conn:
        rows = await (
            await conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        ).fetchall()
        for row in rows:
            name = row["table_name"]
            if name not in base:
                await conn.execute(f"DROP TABLE {name} CASCADE")
        await conn.execute(f"TRUNCATE {_BASE_TABLES} RESTART IDENTITY")
        await conn.execute("ALTER SEQUENCE soothe_id_block RESTART WITH 1")


class _Cursor:
    def __init__(self, store: PgStore, sql: str, params: Any) -> None:
        self._run = store.execute(translate(sql), tuple(params))
        self._rows: list[Any] | None = None

    async def _go(self) -> _Cursor:
        self._rows = await self._run
        return self

    def __await__(self) -> Any:
        return self._go().__await__()

    async def __aenter__(self) -> _Cursor:
        return await self._go()

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def fetchall(self) -> list[Any]:
        return list(self._rows or [])

    async def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None


class SqliteLikeDb:
    """``engine.db`` for the SQLite suite's reads: ``execute(sql, params)`` as aiosqlite
    has it; everything else is the pool's."""

    def __init__(self, store: PgStore) -> None:
        self._store = store

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _Cursor:
        return _Cursor(self._store, sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store.pool, name)


@pytest.fixture(scope="session")
def suite_dsn(pg: Any) -> str:
    return pg.create_database("context_suite")


@pytest.fixture(autouse=True)
def on_postgres(suite_dsn: str, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    import psycopg

    made: set[str] = set(_CLEAN)

    def schema_for(path: Any) -> str:
        if isinstance(path, str | Path) and str(path) != ":memory:":
            name = "f_" + hashlib.sha1(str(path).encode()).hexdigest()[:16]
        elif _CLEAN:
            return _CLEAN.pop()
        else:
            name = "m_" + uuid.uuid4().hex[:16]
        if name not in made:
            with psycopg.connect(suite_dsn, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {name}")
            made.add(name)
        return name

    async def open_on_pg(cls: type[ContextEngine], path: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(path, str | Path):
            return await _original_open(cls, path, *args, **kwargs)
        name = schema_for(path)
        store = await PgStore.open(suite_dsn, schema=name)
        if name.startswith("m_"):
            close = store.close

            async def close_and_recycle() -> None:
                try:
                    await _empty(store)
                finally:
                    await close()
                _CLEAN.append(name)

            store.close = close_and_recycle  # type: ignore[method-assign]
        return await _original_open(cls, store, *args, **kwargs)

    monkeypatch.setattr(ContextEngine, "open", classmethod(open_on_pg))
    monkeypatch.setattr(PgStore, "db", property(SqliteLikeDb))
    return schema_for


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


@pytest.fixture
async def engine(bus: EventBus, on_postgres: Any) -> AsyncIterator[ContextEngine]:
    """An engine on a fresh PostgreSQL schema."""
    eng = await ContextEngine.open(":memory:", bus=bus)
    yield eng
    await eng.close()
