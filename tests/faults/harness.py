"""The fault and abuse tests' harness: an isolated home, a fake model server that answers
by request kind, the ``soothe`` CLI in-process or as a subprocess, and a check that what
was persisted is intact. The fixtures are imported by tests/faults/conftest.py and by
tests/security/test_abuse.py."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.brain import Brain
from tests.fakes.ollama_server import FakeOllamaServer

_ENV_NAMES = ("OLLAMA_HOST", "OPENAI_BASE_URL", "OPENAI_API_KEY")
TRACEBACK = "Traceback (most recent call last)"

SIMPLE = {"label": "simple", "answer": "", "reason": "needs the files"}
ONE_STEP = {"steps": [{"id": "S-01", "description": "list the files"}]}


@dataclass
class Env:
    home: Path
    workspace: Path
    data_dir: Path
    url: str

    def base_args(self, url: str | None = None) -> list[str]:
        return [
            "--provider",
            "ollama",
            "--base-url",
            url or self.url,
            "--model",
            "llama3.2",
            "--data-dir",
            str(self.data_dir),
            "--workspace",
            str(self.workspace),
        ]

    def environ(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SOOTHE_", "XDG_")) and k not in _ENV_NAMES
        }
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / "xdg-config"),
            XDG_DATA_HOME=str(self.home / "xdg-data"),
            PYTHONUNBUFFERED="1",
            **extra,
        )
        return env


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]

    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]

    def one_error(self) -> str:
        """The single ``error:`` line of a failed run (asserting there is exactly one)."""
        assert TRACEBACK not in self.err + self.out, self.err
        lines = self.error_lines()
        assert len(lines) == 1 and lines[0].startswith("error: "), lines
        return lines[0]


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


@pytest.fixture
def brain() -> Brain:
    return Brain()


@pytest.fixture
def fake(brain: Brain) -> Iterator[FakeOllamaServer]:
    server = FakeOllamaServer(responder=brain, hang_limit=5.0)
    with server:
        yield server
    assert not server.errors, "fake Ollama server crashed:\n" + "\n".join(server.errors)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeOllamaServer) -> Env:
    """HOME/XDG under tmp_path, provider variables cleared, cwd = an empty workspace."""
    for name in list(os.environ):
        if name.startswith("SOOTHE_") or name in _ENV_NAMES:
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg-data"))
    monkeypatch.chdir(workspace)
    return Env(home=home, workspace=workspace, data_dir=tmp_path / "data", url=fake.url)


@pytest.fixture
def soothe(env: Env, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """``soothe(*args)``: ``soothe.cli.main`` in-process against the fake server.

    The model/storage/workspace options are appended unless ``raw=True`` (subcommands
    get ``--data-dir`` only).
    """
    from soothe.cli import SUBCOMMANDS, main

    def run(*args: str, raw: bool = False) -> Result:
        capsys.readouterr()
        argv = list(args)
        if not raw:
            if argv and argv[0] in SUBCOMMANDS:
                argv = [*argv, "--data-dir", str(env.data_dir)]
            else:
                argv = [*argv, *env.base_args()]
        code = main(argv)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def spawn(env: Env, *args: str, url: str | None = None) -> subprocess.Popen[str]:
    """``python -m soothe ARGS`` with the model/storage options, in the isolated env."""
    return subprocess.Popen(
        [sys.executable, "-m", "soothe", *args, *env.base_args(url)],
        cwd=env.workspace,
        env=env.environ(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
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
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_read(data_dir, idle))
    with ThreadPoolExecutor(1) as pool:  # called from an async test
        return pool.submit(asyncio.run, _read(data_dir, idle)).result()


async def _read(data_dir: Path, idle: bool) -> Persisted:
    from soothe.engine.context import ContextEngine

    ctx = await ContextEngine.open(data_dir / "soothe.db")
    try:
        threads = {t.id: t.title for t in ctx.list_threads()}
        goals = {g.id: g for g in ctx.list_goals()}
        steps: dict[str, dict[str, str]] = {}
        evidence: dict[str, int] = {}
        for goal in goals.values():
            assert goal.thread_id in threads, f"{goal.id} names a missing thread"
            if idle:
                assert goal.status != "active", f"{goal.id} left active: {goal}"
            dag = ctx.step_dag(goal.id)
            steps[goal.id] = {s.id: s.status for s in dag.steps.values()}
            for s in dag.steps.values():
                assert set(s.dependencies) <= set(dag.steps), (goal.id, s.id, s.dependencies)
            evidence[goal.id] = len(ctx.evidence(goal.id))
        messages = {tid: [(m.role, m.content) for m in await ctx.messages(tid)] for tid in threads}
    finally:
        await ctx.close()
    return Persisted(threads, goals, steps, messages, evidence)
