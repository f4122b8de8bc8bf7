"""Fixtures for the app tests: isolated XDG dirs, a deterministic app; ``rig`` for the real
Session on the fake Ollama server (tests/app/real_harness.py), ``session`` / ``make_app``
for the FakeSession, kept for states the engine cannot reach."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from soothe.app.main import SootheApp
from soothe.engine.config import Settings
from soothe.widgets.goal_tree import GoalTree
from tests.app.fake_session import FakeSession
from tests.app.real_harness import brain, ollama, rig  # noqa: F401  # fixtures: the real engine


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    yield


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(tools={"workspace": tmp_path}, storage={"data_dir": tmp_path / "data"})


@pytest.fixture
def session(settings: Settings) -> FakeSession:
    return FakeSession(settings=settings)


@pytest.fixture
def make_app(settings: Settings, session: FakeSession) -> Callable[..., SootheApp]:
    """A SootheApp on the fake session with a still clock and no animation."""

    def make(**kwargs: Any) -> SootheApp:
        kwargs.setdefault("session", session)
        kwargs.setdefault("clock", lambda: 100.0)
        kwargs.setdefault("animate", False)
        return SootheApp(kwargs.pop("settings", settings), **kwargs)

    return make


async def settle(app: SootheApp, pilot: Pilot[Any]) -> None:
    """Wait for workers, then for the handler to apply every published event, then paint."""
    await pilot.pause()
    await app.workers.wait_for_complete()
    await app.handler.wait_idle()
    await pilot.pause()
    assert not app.handler.errors, app.handler.errors


async def type_text(pilot: Pilot[Any], text: str) -> None:
    """Type like a user, one key event per character."""
    await pilot.press(*text)


async def submit(app: SootheApp, pilot: Pilot[Any], text: str) -> None:
    """Put ``text`` in the prompt and press enter (typing long texts key by key is slow)."""
    app.prompt.focus()
    app.prompt.value = text
    await pilot.press("enter")


def top_goals(tree: GoalTree) -> list[str]:
    """The goals at the top of the goal tree, in the order shown."""
    return [n.data.goal_id or "" for n in tree.root.children if n.data and n.data.kind == "goal"]
