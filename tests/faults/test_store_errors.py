"""A store file of the data dir that cannot be used: one ``error:`` line naming that file,
exit 1, and the process ends (within the test's timeout), for every command that opens
it. And a disk that fills in the middle of a run: one line, no traceback, nothing stored
before it lost.

The faults, made without privileges (the tests run as root, so chmod 000 would not stop
anything):

- corrupt: the file holds garbage bytes after a SQLite header;
- directory: a directory stands where the file should be;
- unreachable: the file is a symlink to a path under a regular file (ENOTDIR), as a
  file under a directory one cannot search would be;
- full: the process runs with RLIMIT_FSIZE (SIGXFSZ ignored), so a write past the limit
  fails with EFBIG, as one fails with ENOSPC on a full disk: SQLite reports either as
  SQLITE_FULL (a short write) or SQLITE_IOERR, the store and the run get the same error
  either way, and nothing is committed past it.

Before: a bad journal.db was reported as soothe.db and the process never exited (the
store's aiosqlite threads were left open); soothe.db as a directory printed a thread
traceback after the error line; the worker printed ``StorageError: ...``; a disk that
filled mid-run printed a 20-line traceback and then ``cannot open the database``."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, Result, read_store, run_soothe
from tests.fakes.ollama_server import FakeOllamaServer

QUIZ = {"label": "quiz", "answer": "4", "reason": "math"}
TWO_STEPS = {
    "steps": [
        {"id": "S-01", "description": "Collect the facts"},
        {"id": "S-02", "description": "Write the summary", "dependencies": ["S-01"]},
    ]
}


def file_size_limit(limit: int) -> Callable[[], None]:
    """A pre-exec hook: writes past ``limit`` bytes fail with EFBIG (a full disk)."""

    def hook() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return hook


def run(env: Env, *args: str, limit: int | None = None, timeout: float = 40.0) -> Result:
    """``soothe ARGS`` as a process (``worker`` gets the model options too)."""
    if args[0] == "worker":
        args = (*args, "--provider", "ollama", "--base-url", env.url, "--model", "llama3.2")
    hook = file_size_limit(limit) if limit is not None else None
    return run_soothe(env, *args, timeout=timeout, preexec_fn=hook)


def corrupt(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(8176))


def directory(path: Path) -> None:
    path.mkdir()
    (path / "inside").write_text("x", encoding="utf-8")


def unreachable(path: Path) -> None:
    blocker = path.parent.parent / "a-regular-file"
    blocker.write_text("not a directory", encoding="utf-8")
    path.symlink_to(blocker / path.name)


REASONS = {
    "corrupt": "file is not a database",
    "directory": "Is a directory",
    "unreachable": "Not a directory",
}
MAKERS = {"corrupt": corrupt, "directory": directory, "unreachable": unreachable}
COMMANDS = {
    "run": ("-p", "what is 2+2?"),
    "threads": ("threads",),
    "goals": ("goals",),
    "undo": ("undo", "--list"),
    "worker": ("worker", "--idle-exit", "1"),
}
# Which commands open which file: threads and goals read soothe.db only; undo reads
# journal.db only.
CASES = [
    (store, command)
    for store, commands in {
        "soothe.db": ("run", "threads", "goals", "worker"),
        "checkpoints.db": ("run", "worker"),
        "journal.db": ("run", "undo", "worker"),
    }.items()
    for command in commands
]


@pytest.mark.parametrize("fault", list(MAKERS))
@pytest.mark.parametrize(("store", "command"), CASES, ids=[f"{s}-{c}" for s, c in CASES])
def test_a_store_that_cannot_be_used_is_one_line_naming_it_and_the_process_exits(
    brain: Brain, fake: FakeOllamaServer, env: Env, store: str, command: str, fault: str
) -> None:
    env.data_dir.mkdir()
    path = env.data_dir / store
    MAKERS[fault](path)
    brain.add("Classification", QUIZ)

    r = run(env, *COMMANDS[command])

    assert r.code == 1, r
    line = r.one_error()
    assert line.startswith(f"error: cannot open the database {path}: "), line
    assert REASONS[fault] in line, line
    assert brain.calls == []  # refused before any model call


@pytest.mark.parametrize("command", ["run", "threads", "goals", "worker"])
def test_a_full_disk_when_the_store_is_created_is_one_line(
    brain: Brain, fake: FakeOllamaServer, env: Env, command: str
) -> None:
    brain.add("Classification", QUIZ)

    r = run(env, *COMMANDS[command], limit=64)

    assert r.code == 1, r
    line = r.one_error()
    assert line.startswith(f"error: cannot open the database {env.data_dir / 'soothe.db'}: ")
    assert "disk I/O error" in line or "disk is full" in line, line
    assert brain.calls == []


def test_a_disk_that_fills_mid_run_is_one_line_and_loses_nothing_stored(
    brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    brain.add("Classification", QUIZ)
    first = run(env, "-p", "what is 2+2?")
    assert (first.code, first.out) == (0, "4\n"), first
    before = read_store(env.db_path)

    brain.add("Classification", {"label": "complex"})
    brain.add("PlanGeneration", TWO_STEPS)
    brain.step("S-01", "Three facts collected.")
    brain.step("S-02", "Summary: three facts.")
    # The WAL index (32 KiB) fits; the store's WAL cannot grow past 40 KB: some write of
    # the run fails, not the opening.
    r = run(env, "-p", "Summarise the facts", "--json", limit=40_000)

    assert r.code == 1, r
    line = r.one_error()
    assert line.startswith("error: cannot write to the database "), line
    named = line.removeprefix("error: cannot write to the database ").split(":")[0]
    assert Path(named).parent == env.data_dir, line
    last = json.loads(r.out.splitlines()[-1])
    assert last["type"] == "run.failed" and last["kind"] == "storage", r.out
    assert brain.calls  # it did fail mid-run, after model calls

    # Nothing stored before is lost, and the files are sound.
    for name in ("soothe.db", "checkpoints.db", "journal.db"):
        conn = sqlite3.connect(env.data_dir / name)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",), name
        finally:
            conn.close()
    after = read_store(env.db_path)
    old = before.threads[0].id
    assert old in [t.id for t in after.threads]
    assert after.messages[old] == before.messages[old]
