"""The ``soothe`` CLI against a fake Ollama in an isolated home, for end-to-end tests.

Fixtures (import them into a conftest): ``brain`` (a `Brain`), ``fake`` (a
`FakeOllamaServer` answering with it), ``env`` (an `Env`: HOME/XDG under tmp_path,
provider variables cleared, cwd an empty workspace) and ``soothe`` (``soothe(*args)``
runs ``soothe.cli.main`` in-process and returns a `Result`); ``spawn(env, *args)`` starts
it as a subprocess in the same isolation, ``run_soothe(env, *args)`` runs one to its end;
``read_store(db_path)`` snapshots what a run
left in the database.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.brain import Brain
from tests.fakes.ollama_server import FakeOllamaServer

PROVIDER_VARIABLES = ("OLLAMA_HOST", "OPENAI_BASE_URL", "OPENAI_API_KEY")
TRACEBACK = "Traceback (most recent call last)"


def isolate_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Clear SOOTHE_* and provider variables; HOME and the XDG dirs under ``home``."""
    for name in list(os.environ):
        if name.startswith("SOOTHE_") or name in PROVIDER_VARIABLES:
            monkeypatch.delenv(name)
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "xdg-data"))


@dataclass
class Env:
    home: Path
    workspace: Path
    data_dir: Path
    url: str

    def base_args(self, given: Sequence[str] = (), url: str | None = None) -> list[str]:
        """Provider, model, storage and workspace options not already in ``given``."""
        defaults = {
            "--provider": "ollama",
            "--base-url": url or self.url,
            "--model": "llama3.2",
            "--data-dir": str(self.data_dir),
            "--workspace": str(self.workspace),
        }
        out: list[str] = []
        for option, value in defaults.items():
            if option not in given:
                out += [option, value]
        return out

    @property
    def db_path(self) -> Path:
        return self.data_dir / "soothe.db"

    def environ(self, **extra: str) -> dict[str, str]:
        """An environment for a subprocess: the same isolation as the in-process tests."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SOOTHE_", "XDG_")) and k not in PROVIDER_VARIABLES
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


def spawn(env: Env, *args: str, url: str | None = None, **variables: str) -> subprocess.Popen[str]:
    """``python -m soothe ARGS`` with the model/storage options, in the isolated env
    (plus the environment ``variables``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "soothe", *args, *env.base_args(url=url)],
        cwd=env.workspace,
        env=env.environ(**variables),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_soothe(
    env: Env,
    *args: str,
    config: str | None = None,
    timeout: float = 60.0,
    stdin: str | None = None,
    preexec_fn: Callable[[], None] | None = None,
    **variables: str,
) -> Result:
    """``soothe ARGS`` as a subprocess in the isolated env, to its end.

    A run gets the model/storage/workspace options not given in ``args`` (given ones
    win); a subcommand (threads, undo...) gets only ``--data-dir``. ``config`` is written
    to a config file passed with ``--config``; ``variables`` are added to the
    environment; ``stdin`` is sent as its input. A process still going after
    ``timeout`` seconds is killed and the test fails with its output.
    """
    from soothe.cli import SUBCOMMANDS, flag_refusal

    argv = list(args)
    if config is not None:
        path = env.home / "config.toml"
        path.write_text(config, encoding="utf-8")
        argv += ["--config", str(path)]
    if args and args[0] in SUBCOMMANDS:
        if flag_refusal(args[0], "--data-dir") is None:  # skills and mcp refuse it
            argv += ["--data-dir", str(env.data_dir)]
    else:
        argv += env.base_args(args)
    proc = subprocess.Popen(
        [sys.executable, "-m", "soothe", *argv],
        cwd=env.workspace,
        env=env.environ(**variables),
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(
            f"soothe {' '.join(args)} did not exit within {timeout} s (killed):\n"
            f"{out[-2000:]}\n{err[-2000:]}"
        ) from None
    return Result(proc.returncode, out, err)


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


async def _load(db_path: Path) -> Stored:
    from soothe.engine.context import ContextEngine

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
                t.id: [(m.role, m.content) for m in await context.messages(t.id)] for t in threads
            },
        )
    finally:
        await context.close()


def read_store(db_path: Path) -> Stored:
    """Open the database the CLI wrote, in an event loop of its own (on a worker thread
    when called from an async test), and snapshot it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_load(db_path))
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _load(db_path)).result()


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
    home = tmp_path / "home"
    isolate_home(monkeypatch, home)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    return Env(home=home, workspace=workspace, data_dir=tmp_path / "data", url=fake.url)


@pytest.fixture
def soothe(env: Env, capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """``soothe(*args)`` runs ``soothe.cli.main`` in-process against the fake server.

    The model/storage/workspace options not given are appended; subcommands (threads,
    skills...) get ``--data-dir`` (and ``skills`` ``--workspace``); ``raw=True`` passes
    the arguments untouched.
    """
    from soothe.cli import SUBCOMMANDS, flag_refusal, main

    def run(*args: str, raw: bool = False) -> Result:
        capsys.readouterr()
        argv = list(args)
        if not raw:
            if argv and argv[0] in SUBCOMMANDS:
                extra = []
                if flag_refusal(argv[0], "--data-dir") is None:  # skills and mcp refuse it
                    extra += ["--data-dir", str(env.data_dir)]
                if argv[0] == "skills":
                    extra += ["--workspace", str(env.workspace)]
                argv = [*argv, *extra]
            else:
                argv = [*argv, *env.base_args(argv)]
        code = main(argv)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run
