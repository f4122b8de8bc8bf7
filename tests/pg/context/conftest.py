"""The ContextEngine suite (tests/context) again, on PostgreSQL.

Every ``ContextEngine.open`` of a test opens a PgStore instead: ``":memory:"`` a fresh
schema, a file path the schema of that path (so a test that reopens its file reopens its
database). The test modules here import the tests of tests/context unchanged."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from soothe.engine.bus import EventBus
from soothe.engine.context import ContextEngine
from soothe.engine.context.store_pg import PgStore
from tests.context.conftest import db_path, events, recorder  # noqa: F401

_original_open = ContextEngine.open.__func__  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def suite_dsn(pg: Any) -> str:
    return pg.create_database("context_suite")


@pytest.fixture(autouse=True)
def on_postgres(suite_dsn: str, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    import psycopg

    made: set[str] = set()

    def schema_for(path: Any) -> str:
        if isinstance(path, str | Path) and str(path) != ":memory:":
            name = "f_" + hashlib.sha1(str(path).encode()).hexdigest()[:16]
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
        store = await PgStore.open(suite_dsn, schema=schema_for(path))
        return await _original_open(cls, store, *args, **kwargs)

    monkeypatch.setattr(ContextEngine, "open", classmethod(open_on_pg))
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
