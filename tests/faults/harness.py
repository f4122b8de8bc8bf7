"""The fault and abuse tests' harness: the CLI harness of tests/fakes/cli_harness.py
(isolated home, fake Ollama answered by a Brain, ``soothe`` in-process) plus quick
transport retries, the CLI as a subprocess, and a check that what was persisted is intact.
The fixtures are imported by tests/faults/conftest.py and by tests/security/test_abuse.py."""

from __future__ import annotations

import sqlite3
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.brain import Brain
from tests.fakes.cli_harness import (
    TRACEBACK,
    Env,
    Result,
    brain,
    env,
    fake,
    read_store,
    soothe,
    spawn,
)

__all__ = ["TRACEBACK", "Brain", "Env", "Result", "brain", "env", "fake", "soothe", "spawn"]

SIMPLE = {"label": "simple", "answer": "", "reason": "needs the files"}
ONE_STEP = {"steps": [{"id": "S-01", "description": "list the files"}]}


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub's transport retries back off 10 ms here, not 0.5 s."""
    monkeypatch.setattr("soothe.engine.llm.hub.ModelHub.backoff_s", 0.01)


def settings_for(env: Env, **model: Any) -> Any:
    """Settings like the CLI's for ``env`` (approval ask, clarify auto)."""
    from soothe.engine.config import load_settings

    return load_settings(
        overrides={
            "model": {"provider": "ollama", "base_url": env.url, "name": "llama3.2", **model},
            "storage": {"data_dir": str(env.data_dir)},
            "tools": {"workspace": str(env.workspace), "clarify": "auto"},
        }
    )


def wait_for(event: threading.Event, proc: subprocess.Popen[str], timeout: float = 20.0) -> None:
    """Wait for ``event`` (bounded); fail with the process output if it exits first."""
    if event.wait(timeout):
        return
    proc.kill()
    out, err = proc.communicate(timeout=10)
    raise AssertionError(f"the process never got there (rc={proc.returncode}):\n{out}\n{err}")


# --- what was persisted ------------------------------------------------------------------


@dataclass
class Persisted:
    threads: dict[str, str]
    goals: dict[str, Any]
    steps: dict[str, dict[str, str]]
    messages: dict[str, list[tuple[str, str]]]
    evidence: dict[str, int]


def integrity(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def check_persisted(
    data_dir: Path, *, idle: bool = True, files: tuple[str, ...] = ("soothe.db", "checkpoints.db")
) -> Persisted:
    """Reopen the data dir as the next process would and check it is whole.

    Both SQLite files pass ``PRAGMA integrity_check``; every goal belongs to a known
    thread, every step to its goal, step dependencies name steps of the same goal; with
    ``idle`` (no process running) no goal is left ``active``.
    """
    for name in files:
        if (data_dir / name).exists():
            assert integrity(data_dir / name) == "ok", name
    stored = read_store(data_dir / "soothe.db")
    threads = {t.id: t.title for t in stored.threads}
    steps: dict[str, dict[str, str]] = {}
    for goal in stored.goals:
        assert goal.thread_id in threads, f"{goal.id} names a missing thread"
        if idle:
            assert goal.status != "active", f"{goal.id} left active: {goal}"
        steps[goal.id] = stored.step_status(goal.id)
        for s in stored.steps[goal.id]:
            assert set(s.dependencies) <= set(steps[goal.id]), (goal.id, s.id, s.dependencies)
    return Persisted(
        threads,
        {g.id: g for g in stored.goals},
        steps,
        stored.messages,
        {goal_id: len(items) for goal_id, items in stored.evidence.items()},
    )
