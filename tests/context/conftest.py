"""Fixtures for the ContextEngine tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from soothe.engine.bus import EventBus
from soothe.engine.context import ContextEngine
from soothe.engine.events import EventBase


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


@pytest.fixture
def events(bus: EventBus) -> list[EventBase]:
    """Every event published on ``bus``, in order."""
    seen: list[EventBase] = []
    bus.add_listener(seen.append)
    return seen


@pytest.fixture
async def engine(bus: EventBus) -> AsyncIterator[ContextEngine]:
    """An in-memory engine (tests only)."""
    eng = await ContextEngine.open(":memory:", bus=bus)
    yield eng
    await eng.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "soothe.db"


@pytest.fixture
def recorder() -> Callable[..., Any]:
    """``rec = recorder(); engine.on(name, rec)``; ``rec.calls`` lists the argument tuples."""

    class Recorder:
        def __init__(self) -> None:
            self.calls: list[tuple[Any, ...]] = []

        def __call__(self, *args: Any) -> None:
            self.calls.append(args)

    return Recorder
