"""write_file and edit_file replace a file (a temp file renamed over it), never write
through it: a hard link inside the workspace to a file outside cannot carry a write out,
the old file's mode is kept, and undo still puts the old bytes back. The ``soothe`` CLI
as a subprocess against the fake Ollama."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.fakes._base import FakeReply
from tests.fakes.cli_harness import run_soothe
from tests.faults.harness import (
    ONE_STEP,
    SIMPLE,
    TRACEBACK,
    Brain,
    Env,
    brain,
    env,
    fake,
    quick_retries,
)

__all__ = ["brain", "env", "fake", "quick_retries"]  # fixtures used here

OUTSIDE = "outside: not the agent's to change\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file next to the workspace, never under it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    secret = folder / "secret.txt"
    secret.write_text(OUTSIDE)
    return secret


def tool_results(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return [e for e in events if e["type"] == "step.tool_result"]


def test_a_hard_link_to_a_file_outside_is_replaced_not_written_through(
    brain: Brain, env: Env, outside: Path
) -> None:
    before = os.stat(outside)
    os.link(outside, env.workspace / "link.txt")
    os.link(outside, env.workspace / "edit-me.txt")
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    calls = [
        {"name": "write_file", "args": {"path": "link.txt", "content": "new content\n"}},
        {"name": "edit_file", "args": {"path": "edit-me.txt", "old": "outside", "new": "in"}},
    ]
    brain.step("S-01", FakeReply(tool_calls=calls), "both changed")
    r = run_soothe(env, "-p", "rewrite link.txt and edit edit-me.txt", "--json", "--yes")
    assert TRACEBACK not in r.err
    assert (r.code, r.err) == (0, "")
    # The outside file: same inode, same bytes, same time, now with one link again.
    after = os.stat(outside)
    assert outside.read_text() == OUTSIDE
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    assert after.st_nlink == 1
    results = tool_results(r.json_lines())
    assert [e["ok"] for e in results] == [True, True], results
    assert all("hard link" in str(e["output"]) for e in results), results
    # The workspace paths: new files with the new content.
    link = env.workspace / "link.txt"
    edited = env.workspace / "edit-me.txt"
    assert link.read_text() == "new content\n"
    assert edited.read_text() == "in: not the agent's to change\n"
    assert os.stat(link).st_ino != before.st_ino != os.stat(edited).st_ino
    # Nothing left beside them (no temp file).
    assert sorted(p.name for p in env.workspace.iterdir()) == ["edit-me.txt", "link.txt"]


def test_a_write_keeps_the_mode_and_undo_restores_the_old_bytes(brain: Brain, env: Env) -> None:
    script = env.workspace / "run.sh"
    script.write_text("echo v1\n")
    script.chmod(0o750)
    notes = env.workspace / "notes.txt"
    notes.write_text("first\n")
    notes.chmod(0o600)
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    calls = [
        {"name": "write_file", "args": {"path": "run.sh", "content": "echo v2\n"}},
        {"name": "edit_file", "args": {"path": "notes.txt", "old": "first", "new": "second"}},
    ]
    brain.step("S-01", FakeReply(tool_calls=calls), "updated")
    r = run_soothe(env, "-p", "update run.sh and notes.txt", "--yes")
    assert (r.code, r.err) == (0, ""), r.err
    assert script.read_text() == "echo v2\n" and notes.read_text() == "second\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert stat.S_IMODE(notes.stat().st_mode) == 0o600

    undo = run_soothe(env, "undo")
    assert TRACEBACK not in undo.err
    assert (undo.code, undo.err) == (0, ""), undo.err
    assert sorted(undo.out.splitlines()) == [f"restored {notes}", f"restored {script}"]
    assert script.read_text() == "echo v1\n" and notes.read_text() == "first\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert stat.S_IMODE(notes.stat().st_mode) == 0o600
    assert sorted(p.name for p in env.workspace.iterdir()) == ["notes.txt", "run.sh"]


def test_a_write_that_fails_midway_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills (ENOSPC at fsync) after part of the new content went out: the
    target still holds all of its old bytes and no temp file is left beside it."""
    import errno

    from soothe.engine.atomic import write_atomic

    target = tmp_path / "data.txt"
    target.write_bytes(b"old content\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, b"new content that never lands\n" * 1000)
    assert target.read_bytes() == b"old content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["data.txt"]
