"""Fixtures for the loop tests: an isolated environment, a workspace, started sessions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from soothe.engine.config import Settings
from soothe.engine.events import EventBase
from soothe.engine.session import Session
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import isolate_home
from tests.loop.helpers import make_settings

# --- environment and settings -----------------------------------------------------------------


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_home(monkeypatch, tmp_path / "home")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Demo\nA small demo project.\n")
    (root / "notes.txt").write_text("alpha\nbeta\n")
    return root


SessionFactory = Callable[..., Awaitable[Session]]


@pytest.fixture
async def make_session(tmp_path: Path, ws: Path) -> AsyncIterator[SessionFactory]:
    """``await make_session(model_or_brain, files=False, **settings_sections)``: a started
    Session (in memory unless ``files``), closed after the test. Every published event is
    in ``session.recorded``."""
    async with AsyncExitStack() as stack:

        async def make(
            model: Any = None,
            *,
            files: bool = False,
            settings: Settings | None = None,
            **sections: Any,
        ) -> Session:
            settings = settings or make_settings(tmp_path, ws, **sections)
            models = None
            if isinstance(model, Brain):
                models = {"default": model.model()}
            elif model is not None:
                models = {"default": model}
            where = {} if files else {"db_path": ":memory:", "checkpoint_path": ":memory:"}
            session = Session(settings, models=models, **where)
            recorded: list[EventBase] = []
            session.bus.add_listener(recorded.append)
            session.recorded = recorded  # type: ignore[attr-defined]
            await session.start()
            stack.push_async_callback(session.close)
            return session

        yield make
