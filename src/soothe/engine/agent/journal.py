"""The journal of the agent's mutating tool calls (write_file, edit_file, run_shell).

Before a file changes, its previous bytes (or its absence) and mode are written to
``journal.db`` in the data dir, keyed by thread, loop, goal, step and tool-call id, with
the state ``started``; after the change, the state becomes ``finished`` (with the new
content's hash and mode, and the tool's output) or ``failed``. So:

* a call that the journal saw start is never run again on resume: ``started`` means
  the process died in the middle of it (reported, not re-applied), ``finished`` that it
  completed but its checkpoint did not reach the disk (its recorded output is reused);
* ``soothe undo`` restores previous bytes exactly, newest first, and can tell whether
  someone changed a file since the agent wrote it (the hash).

run_shell calls are journaled as commands: they cannot be undone, and undo says so.
Plain sqlite3 (stdlib), one short transaction per record, committed before the write.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace
from pathlib import Path

from soothe.engine.atomic import write_atomic
from soothe.engine.bytesafe import escape, has_surrogates

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL,
    loop_id TEXT,
    goal_id TEXT,
    step_id TEXT,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    path TEXT,
    command TEXT,
    existed INTEGER NOT NULL DEFAULT 0,
    prev BLOB,
    prev_mode INTEGER,
    new_sha TEXT,
    new_mode INTEGER,
    state TEXT NOT NULL,
    output TEXT,
    undone INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_call ON entries (thread_id, goal_id, step_id, call_id);
"""


@dataclass(frozen=True)
class CallKey:
    thread_id: str
    loop_id: str | None
    goal_id: str | None
    step_id: str | None
    call_id: str = ""

    def at(self, *, call_id: str) -> CallKey:
        return replace(self, call_id=call_id)


@dataclass(frozen=True)
class Entry:
    id: int
    thread_id: str
    loop_id: str | None
    goal_id: str | None
    step_id: str | None
    call_id: str
    tool: str
    path: str | None
    command: str | None
    existed: bool
    prev: bytes | None
    prev_mode: int | None
    new_sha: str | None
    new_mode: int | None
    state: str
    output: str | None
    undone: bool
    created: float


CURRENT: ContextVar[tuple[Journal, CallKey] | None] = ContextVar("soothe_journal", default=None)
"""The journal and key of the tool call running now (set by the step graph's tools node)."""


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_state(path: Path) -> tuple[bytes | None, int | None]:
    """A file's bytes and permission bits, or (None, None) when it does not exist."""
    try:
        data = path.read_bytes()
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None, None
    return data, mode


class Journal:
    def __init__(self, path: str | Path) -> None:
        """Open (or create) the journal; StorageError naming the file when it cannot be
        used (corrupt, a directory, unreachable, a full disk)."""
        self.path = Path(path) if str(path) != ":memory:" else None
        self._lock = threading.Lock()
        db: sqlite3.Connection | None = None
        try:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            if db is not None:
                db.close()
            from soothe.engine.storage_errors import StorageError, storage_message

            raise StorageError(storage_message(path, exc), path) from exc
        self._db = db

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- recording ------------------------------------------------------------------------

    def begin(
        self, key: CallKey, tool: str, *, path: Path | None = None, command: str | None = None
    ) -> int:
        prev, mode = file_state(path) if path is not None else (None, None)
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO entries (thread_id, loop_id, goal_id, step_id, call_id, tool, path,"
                " command, existed, prev, prev_mode, state, created)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,'started',?)",
                (
                    key.thread_id,
                    key.loop_id,
                    key.goal_id,
                    key.step_id,
                    key.call_id,
                    tool,
                    _path_column(path) if path is not None else None,
                    escape(command) if command is not None else None,
                    int(prev is not None),
                    prev,
                    mode,
                    time.time(),
                ),
            )
            return int(cur.lastrowid or 0)

    def finish(self, entry_id: int, *, ok: bool, output: str = "") -> None:
        with self._lock:
            row = self._db.execute("SELECT path FROM entries WHERE id=?", (entry_id,)).fetchone()
        new_sha = new_mode = None
        if row and row[0]:
            data, new_mode = file_state(Path(os.fsdecode(row[0])))
            new_sha = sha(data) if data is not None else None
        with self._lock:
            self._db.execute(
                "UPDATE entries SET state=?, output=?, new_sha=?, new_mode=? WHERE id=?",
                ("finished" if ok else "failed", escape(output), new_sha, new_mode, entry_id),
            )

    def record_output(self, key: CallKey, output: str, ok: bool) -> None:
        """The tool's final output for the call's entries (what a resume reuses)."""
        with self._lock:
            self._db.execute(
                "UPDATE entries SET output=? WHERE thread_id=? AND goal_id IS ? AND step_id IS ?"
                " AND call_id=? AND state!='started'",
                (escape(output), key.thread_id, key.goal_id, key.step_id, key.call_id),
            )

    # --- reading --------------------------------------------------------------------------

    def _rows(self, where: str, args: tuple[object, ...]) -> list[Entry]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, thread_id, loop_id, goal_id, step_id, call_id, tool, path, command,"
                " existed, prev, prev_mode, new_sha, new_mode, state, output, undone, created"
                f" FROM entries WHERE {where} ORDER BY id",
                args,
            ).fetchall()
        names = [f.name for f in fields(Entry)]
        out = []
        for r in rows:
            values = dict(zip(names, r, strict=True))
            values["existed"], values["undone"] = bool(values["existed"]), bool(values["undone"])
            if isinstance(values["path"], bytes):  # a name that is not UTF-8 (_path_column)
                values["path"] = os.fsdecode(values["path"])
            out.append(Entry(**values))
        return out

    def call_state(self, key: CallKey) -> Entry | None:
        """The entry of this call when an earlier process already started it."""
        found = self._rows(
            "thread_id=? AND goal_id IS ? AND step_id IS ? AND call_id=?",
            (key.thread_id, key.goal_id, key.step_id, key.call_id),
        )
        if not found:
            return None
        started = [e for e in found if e.state == "started"]
        return started[0] if started else found[-1]

    def entries(self, thread_id: str) -> list[Entry]:
        return self._rows("thread_id=?", (thread_id,))

    def threads(self) -> list[str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT thread_id, MAX(id) FROM entries GROUP BY thread_id ORDER BY MAX(id) DESC"
            ).fetchall()
        return [r[0] for r in rows]

    def mark_undone(self, entry_id: int) -> None:
        with self._lock:
            self._db.execute("UPDATE entries SET undone=1 WHERE id=?", (entry_id,))

    def delete_thread(self, thread_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM entries WHERE thread_id=?", (thread_id,))


# --- hooks for the tools -------------------------------------------------------------------


@contextlib.contextmanager
def recording(tool: str, *, path: Path | None = None, command: str | None = None) -> Iterator[None]:
    """Around a mutating tool's effect: journaled when a step graph runs the call."""
    active = CURRENT.get()
    if active is None:
        yield
        return
    journal, key = active
    entry = journal.begin(key, tool, path=path, command=command)
    ok = False
    try:
        yield
        ok = True
    finally:
        journal.finish(entry, ok=ok)


def restore(path: Path, entry: Entry) -> None:
    """Put a file back as the entry found it: its bytes and mode, or absent. Written as
    the tools write (``atomic.write_atomic``): atomic, never through a link."""
    if not entry.existed:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return
    write_atomic(path, entry.prev or b"", mode=entry.prev_mode)


def _path_column(path: Path) -> str | bytes:
    """The path as stored: text, or its bytes when its name is not UTF-8 (SQLite
    refuses such text; the bytes come back exact, see ``_rows``)."""
    text = str(path)
    return text if not has_surrogates(text) else os.fsencode(path)


def prune_thread(checkpoint_path: str | Path, data_dir: Path, thread_id: str) -> None:
    """Delete a thread's step checkpoints (threads ``{thread}/...``) and its journal."""
    if str(checkpoint_path) != ":memory:" and Path(checkpoint_path).exists():
        db = sqlite3.connect(str(checkpoint_path), timeout=10)
        try:
            prefix = thread_id + "/"
            for table in ("checkpoints", "writes"):
                with contextlib.suppress(sqlite3.OperationalError):  # tables not made yet
                    db.execute(
                        f"DELETE FROM {table} WHERE substr(thread_id, 1, ?) = ?",
                        (len(prefix), prefix),
                    )
            db.commit()
        finally:
            db.close()
    path = data_dir / "journal.db"
    if path.exists():
        journal = Journal(path)
        try:
            journal.delete_thread(thread_id)
        finally:
            journal.close()
