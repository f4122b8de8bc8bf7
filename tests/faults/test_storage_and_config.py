"""Files that are not what soothe expects: a corrupt or foreign database, a newer schema,
a corrupt checkpoint file, a bad config file. One clear line, the file left exactly as it
was, and nothing else written."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from soothe.engine.context.store import SCHEMA_VERSION
from tests.fakes.ollama_server import FakeOllamaServer
from tests.faults.harness import Brain, Env, Result, check_persisted

Soothe = Callable[..., Result]
QUIZ = {"label": "quiz", "answer": "4", "reason": "math"}


def foreign_db(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO photos (name) VALUES ('cat.jpg')")
    conn.commit()
    conn.close()


def newer_db(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE goals (id TEXT PRIMARY KEY, shiny_new_column TEXT)")
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()


def corrupt_db(path: Path) -> None:
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(4080))


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (corrupt_db, "file is not a database"),
        (foreign_db, "not a soothe database (it has other tables: photos)"),
        (newer_db, f"database schema v99 is newer than this soothe (v{SCHEMA_VERSION})"),
    ],
    ids=["corrupt", "foreign", "newer"],
)
def test_a_database_that_is_not_ours_is_refused_and_left_untouched(
    soothe: Soothe,
    brain: Brain,
    fake: FakeOllamaServer,
    env: Env,
    make: Callable[[Path], None],
    needle: str,
) -> None:
    env.data_dir.mkdir()
    db = env.data_dir / "soothe.db"
    make(db)
    before = db.read_bytes()
    brain.add("Classification", QUIZ)
    for args in (["-p", "what is 2+2?"], ["threads"], ["threads", "export", "abc"]):
        r = soothe(*args)
        assert r.code == 1 and r.out == "", args
        line = r.one_error()
        assert f"cannot open the database {db}: {needle}" in line, line
        assert "left untouched; move it away (or pass --data-dir)" in line
    assert db.read_bytes() == before
    assert sorted(p.name for p in env.data_dir.iterdir()) == ["soothe.db", "soothe.lock"]
    assert brain.calls == []  # refused before any model call
    # Moved away, soothe starts fresh and the old file is still there, intact.
    db.rename(env.data_dir / "old.db")
    r = soothe("-p", "what is 2+2?")
    assert (r.code, r.out) == (0, "4\n")
    assert (env.data_dir / "old.db").read_bytes() == before
    check_persisted(env.data_dir)


def test_a_corrupt_checkpoint_file_is_refused_before_anything_changes(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    brain.add("Classification", QUIZ)
    assert soothe("-p", "what is 2+2?").code == 0
    before = check_persisted(env.data_dir, files=("soothe.db",))
    checkpoints = env.data_dir / "checkpoints.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{checkpoints}{suffix}").unlink(missing_ok=True)
    corrupt_db(checkpoints)
    garbage = checkpoints.read_bytes()
    r = soothe("-p", "and 3+3?")
    assert r.code == 1
    line = r.one_error()
    assert f"cannot open the database {checkpoints}: file is not a database" in line
    assert checkpoints.read_bytes() == garbage
    after = check_persisted(env.data_dir, files=("soothe.db",))
    assert after.messages == before.messages and after.threads == before.threads


SECRET = "sk-config-secret-0123456789"


@pytest.mark.parametrize(
    ("content", "key", "problem"),
    [
        ('[loop]\nmax_iterations = "lots"\n', "loop.max_iterations", "valid integer"),
        ("[model]\ncolour = 'blue'\n", "model.colour", "unknown key"),
        ("[tools]\napproval = 'sometimes'\n", "tools.approval", "'ask', 'auto' or 'deny'"),
        ("[memory]\ncross_thread = 'maybe'\n", "memory.cross_thread", "valid boolean"),
        (f"[model]\napi_key = ['{SECRET}']\n", "model.api_key", "valid string"),
    ],
    ids=["wrong-type", "unknown-key", "bad-choice", "bad-bool", "secret-wrong-type"],
)
def test_a_bad_config_file_is_one_line_and_exit_2_for_every_command(
    soothe: Soothe, env: Env, content: str, key: str, problem: str
) -> None:
    config = env.home / "soothe.toml"
    config.write_text(content, encoding="utf-8")
    for args in (["-p", "hi"], ["threads"], ["config", "show"], ["doctor"], ["skills"]):
        r = soothe(*args, "--config", str(config))
        assert r.code == 2 and r.out == "", (args, r)
        line = r.one_error()
        assert line.startswith(f"error: config: {config}: {key}: "), line
        assert problem in line and SECRET not in line
    assert not env.data_dir.exists()
