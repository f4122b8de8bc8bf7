"""Fixtures for the end-to-end runner tests: the CLI harness of tests/fakes/cli_harness.py
(isolated home, fake Ollama answered by a Brain, ``soothe`` in-process) and ``stored``,
what a run left in the database."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli_harness import Env, brain, env, fake, soothe

__all__ = ["brain", "env", "fake", "soothe", "stored"]  # fixtures


@dataclass
class Stored:
    """What a run left in the database, read back through the ContextEngine."""

    threads: list[Any]
    goals: list[Any]
    steps: dict[str, list[Any]]
    evidence: dict[str, list[Any]]
    messages: dict[str, list[tuple[str, str]]]

    def goals_of(self, thread_id: str) -> list[Any]:
        return [g for g in self.goals if g.thread_id == thread_id]

    def step_status(self, goal_id: str) -> dict[str, str]:
        return {s.id: s.status for s in self.steps[goal_id]}


def read_store(db_path: Path) -> Stored:
    """Open the database the CLI wrote (in its own event loop) and snapshot it."""
    import asyncio

    from soothe.engine.context import ContextEngine

    async def load() -> Stored:
        context = await ContextEngine.open(db_path)
        try:
            threads = context.list_threads()
            goals = context.list_goals()
            return Stored(
                threads=threads,
                goals=goals,
                steps={g.id: list(context.step_dag(g.id).steps.values()) for g in goals},
                evidence={g.id: context.evidence(g.id) for g in goals},
                messages={
                    t.id: [(m.role, m.content) for m in await context.messages(t.id)]
                    for t in threads
                },
            )
        finally:
            await context.close()

    return asyncio.run(load())


@pytest.fixture
def stored(env: Env) -> Callable[[], Stored]:
    return lambda: read_store(env.db_path)
