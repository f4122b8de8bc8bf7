"""Fixtures for the agent tests: a small workspace, a bus and a broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from soothe.engine.bus import EventBus
from soothe.engine.interact import InteractBroker


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "README.md").write_text("# Demo\nA small project.\nTODO: write docs\n")
    (root / "src" / "pkg" / "__init__.py").write_text("")
    (root / "src" / "pkg" / "core.py").write_text(
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    # TODO: test\n    return a - b\n"
    )
    (root / "docs" / "guide.md").write_text("Guide\nTODO later\n")
    return root


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


@pytest.fixture
def broker(bus: EventBus) -> InteractBroker:
    return InteractBroker(bus)
