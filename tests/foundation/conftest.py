"""Fixtures for the foundation tests: an isolated environment and a bus with a recorder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from soothe.engine.bus import EventBus
from soothe.engine.events import EventBase

_ENV_PREFIXES = ("SOOTHE_",)
_ENV_NAMES = (
    "OLLAMA_HOST",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
)


@pytest.fixture
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No Soothe/provider variables, and HOME plus XDG dirs inside tmp_path.

    Returns the fake home; XDG_CONFIG_HOME is ``home/xdg-config``, XDG_DATA_HOME
    ``home/xdg-data``.
    """
    for name in list(os.environ):
        if name.startswith(_ENV_PREFIXES) or name in _ENV_NAMES:
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg-data"))
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


@pytest.fixture
def recorded(bus: EventBus) -> list[EventBase]:
    """Every event published on ``bus``, in publish order."""
    events: list[EventBase] = []
    bus.add_listener(events.append)
    return events
