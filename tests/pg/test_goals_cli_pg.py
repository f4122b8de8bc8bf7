"""``soothe goals VERB`` on PostgreSQL (issue 33 items 3 and 2 of the brief): every verb
on the shared store (the SQLite scenario of tests/runner/test_goals_cli.py, the same
outputs), and running workers see a change: ``goals cancel`` stops a worker's goal in
the middle of a step, ``goals suspend`` stops it and puts the step back."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from soothe.engine.context import ContextEngine
from soothe.engine.context.store_pg import PgStore
from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, Result, brain, env, soothe  # noqa: F401
from tests.fakes.ollama_server import FakeOllamaServer
from tests.faults.harness import quick_retries, wait_for  # noqa: F401
from tests.runner.test_goals_cli import every_verb, seed

Soothe = Callable[..., Result]


@pytest.fixture
def fake(brain: Brain) -> Iterator[FakeOllamaServer]:  # noqa: F811
    """A step's request hangs for a minute here: only a stop from outside ends it sooner."""
    server = FakeOllamaServer(responder=brain, hang_limit=60.0)
    with server:
        yield server


def _shared(monkeypatch: pytest.MonkeyPatch, dsn: str) -> dict[str, str]:
    variables = {"SOOTHE_STORAGE__BACKEND": "postgresql", "SOOTHE_STORAGE__DSN": dsn}
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return variables


def test_every_goals_verb_on_postgresql(
    soothe: Soothe,  # noqa: F811
    env: Env,  # noqa: F811
    pg_dsn: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _shared(monkeypatch, pg_dsn)

    async def open_engine() -> ContextEngine:
        return await ContextEngine.open(await PgStore.open(pg_dsn))

    asyncio.run(seed(open_engine))
    every_verb(soothe)
    assert not (env.data_dir / "soothe.db").exists(), "the verbs used the shared store"


def _worker_on_a_hanging_step(
    brain: Brain,  # noqa: F811
    env: Env,  # noqa: F811
    variables: dict[str, str],
) -> tuple[subprocess.Popen[str], threading.Event]:
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "read a.txt"}]})
    brain.step("S-01", FakeReply(hang=True))
    asked = threading.Event()
    brain.on("step:S-01", asked.set)
    model = ["--provider", "ollama", "--base-url", env.url, "--model", "llama3.2"]
    worker = subprocess.Popen(
        [sys.executable, "-m", "soothe", "worker", "--idle-exit", "1", *model],
        cwd=env.workspace,
        env=env.environ(**variables, SOOTHE_DATA_DIR=str(env.home / "worker-data")),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return worker, asked


def test_a_cancel_stops_the_worker_running_the_goal(
    brain: Brain,  # noqa: F811
    env: Env,  # noqa: F811
    soothe: Soothe,  # noqa: F811
    pg_dsn: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    variables = _shared(monkeypatch, pg_dsn)
    assert soothe("goals", "add", "read a.txt").out == "added G1\n"
    worker, asked = _worker_on_a_hanging_step(brain, env, variables)
    wait_for(asked, worker, timeout=60)  # the worker waits on the model, mid-step
    cancelled = soothe("goals", "cancel", "G1", "--reason", "not needed")
    assert (cancelled.code, cancelled.out) == (0, "G1 cancelled\n"), cancelled
    # Without the worker seeing it, the step's request would hang for 60 s (and the
    # worker would then move the goal from its stale copy).
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert out.splitlines()[0] == "G1 cancelled", (out, err)
    shown = json.loads(soothe("goals", "show", "G1", "--json").out)
    assert shown["status"] == "cancelled"
    assert brain.kinds().count("step:S-01") == 1, brain.kinds()


def test_a_suspend_stops_the_worker_and_puts_the_step_back(
    brain: Brain,  # noqa: F811
    env: Env,  # noqa: F811
    soothe: Soothe,  # noqa: F811
    pg_dsn: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    variables = _shared(monkeypatch, pg_dsn)
    assert soothe("goals", "add", "read a.txt").out == "added G1\n"
    worker, asked = _worker_on_a_hanging_step(brain, env, variables)
    wait_for(asked, worker, timeout=60)
    assert soothe("goals", "suspend", "G1").out == "G1 suspended\n"
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert out.splitlines()[0] == "G1 suspended", (out, err)
    shown = json.loads(soothe("goals", "show", "G1", "--json").out)
    assert shown["status"] == "suspended"
    assert [(s["id"], s["status"]) for s in shown["steps"]] == [("S-01", "pending")]
    assert soothe("goals", "resume", "G1").out == "G1 pending\n"  # claimable again


async def test_a_worker_claims_only_the_goals_of_its_folder(pg_dsn: str) -> None:
    """A goal tied to a folder (goals add --workspace) is claimed only by a worker whose
    workspace it is; a goal tied to none by any."""
    from soothe.engine.context.queue import GoalQueue

    engine = await ContextEngine.open(await PgStore.open(pg_dsn))
    try:
        tied = await engine.create_goal("tidy /srv/a", workspace="/srv/a", priority=90)
        free = await engine.create_goal("anywhere")
        elsewhere = GoalQueue(engine, "B", workspace="/srv/b")
        claim = await elsewhere.claim()
        assert claim is not None and claim.goal_id == free.id
        assert await elsewhere.claim() is None, "the other ready goal is /srv/a's"
        there = await GoalQueue(engine, "A", workspace="/srv/a").claim()
        assert there is not None and there.goal_id == tied.id
    finally:
        await engine.close()


def test_a_cancel_while_the_worker_verifies_the_goal_keeps_it_cancelled(
    brain: Brain,  # noqa: F811
    env: Env,  # noqa: F811
    soothe: Soothe,  # noqa: F811
    pg_dsn: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cancel that lands after the loop (while the verifier's call is out) is seen too:
    the goal is not validated and completed over it."""
    variables = _shared(monkeypatch, pg_dsn)
    added = soothe("goals", "add", "list the items", "--done-when", "names every item")
    assert added.out == "added G1\n", added
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "list them"}]})
    brain.step("S-01", "The items are: a, b.")
    brain.always["StatusAssessment"] = {
        "status": "done",
        "goal_progress": "complete",
        "require_goal_completion": True,
    }
    brain.always["complete"] = "The items are: a, b."
    brain.add("Verification", FakeReply(hang=True))
    verifying = threading.Event()
    brain.on("Verification", verifying.set)
    model = ["--provider", "ollama", "--base-url", env.url, "--model", "llama3.2"]
    worker = subprocess.Popen(
        [sys.executable, "-m", "soothe", "worker", "--idle-exit", "1", *model],
        cwd=env.workspace,
        env=env.environ(**variables, SOOTHE_DATA_DIR=str(env.home / "worker-data")),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(verifying, worker, timeout=60)
    assert soothe("goals", "cancel", "G1").out == "G1 cancelled\n"
    out, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    assert out.splitlines()[0] == "G1 cancelled", (out, err)
    assert json.loads(soothe("goals", "show", "G1", "--json").out)["status"] == "cancelled"
