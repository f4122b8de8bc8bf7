"""Snapshot fixtures: no user config, no colour override, deterministic apps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.real_harness import brain, ollama, rig  # noqa: F401  # fixtures: the real engine


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    yield
