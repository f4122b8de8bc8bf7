"""Fixtures for the end-to-end runner tests: the CLI harness of tests/fakes/cli_harness.py
(isolated home, fake Ollama answered by a Brain, ``soothe`` in-process) and ``stored``,
what a run left in the database."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.fakes.cli_harness import Env, Stored, brain, env, fake, read_store, soothe

__all__ = ["brain", "env", "fake", "soothe", "stored"]  # fixtures


@pytest.fixture
def stored(env: Env) -> Callable[[], Stored]:
    return lambda: read_store(env.db_path)
