"""PostgreSQL tests (marker ``pg``, ``make test-pg``): one throwaway cluster per session.

Skipped, with the reason, only where no PostgreSQL binaries exist."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg import cluster as pg_cluster

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.pg)


@pytest.fixture(scope="session")
def pg() -> Iterator[pg_cluster.Cluster]:
    why = pg_cluster.missing()
    if why:
        pytest.skip(why)
    cluster = pg_cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_dsn(pg: pg_cluster.Cluster) -> str:
    """A fresh database for one test."""
    return pg.create_database()
