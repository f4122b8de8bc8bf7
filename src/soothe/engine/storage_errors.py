"""What a store file that cannot be used looks like to the user: one line naming the file.

The three SQLite files of a data dir (``soothe.db``, ``checkpoints.db``, ``journal.db``)
can be corrupt, another program's, a directory, unreachable, or on a full disk. Every
opening path and every write that fails turns the error into ``StorageError``, whose text
is the one line the commands print (``error: ...``) and the app shows in its notice.
Cheap to import: the journal and the CLI use it without the engine.
"""

from __future__ import annotations

import errno
import inspect
import sqlite3
import traceback
from pathlib import Path

_FULL_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


class StorageError(RuntimeError):
    """A database could not be opened or written; the message says which file and what
    to do. ``user_facing``: the commands print it as it is, on one line."""

    user_facing = True

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        super().__init__(message)
        self.path = str(path) if path is not None else None


def disk_full(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) says the disk or the file size limit is full:
    SQLITE_FULL (``database or disk is full``; what SQLite reports for ENOSPC and for a
    short write) or an OSError ENOSPC/EFBIG/EDQUOT."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _FULL_ERRNOS:
            return True
        if isinstance(current, sqlite3.Error):
            if getattr(current, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
                return True
            if "disk is full" in str(current):
                return True
        current = current.__cause__ or current.__context__
    return False


def io_error(exc: BaseException) -> bool:
    """True for SQLite's disk I/O errors (SQLITE_IOERR and its extended codes): what a
    write refused by the system gives (e.g. EFBIG, or ENOSPC while growing the WAL index),
    as opposed to a file that is not a database."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_IOERR


def _no_space_at(path: Path) -> bool:
    """True when the file system holding ``path`` has (almost) no free space left."""
    import os

    folder = path if path.is_dir() else path.parent
    try:
        stats = os.statvfs(folder)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < 256 * 1024


def _os_reason(path: Path) -> str | None:
    """Why the file cannot be opened, in the system's words, when SQLite only says
    ``unable to open database file`` (a directory in its place, a parent that is a
    file, no permission)."""
    try:
        with open(path, "rb"):
            return None
    except FileNotFoundError:
        parent = path.parent
        if parent.exists() and not parent.is_dir():
            return f"{parent} is not a directory"
        return None
    except OSError as exc:
        return exc.strerror or str(exc)


def storage_message(path: str | Path, exc: BaseException, *, writing: bool = False) -> str:
    """The one line for a store file ``path`` that failed with ``exc``: opening it, or
    (``writing``) writing to it during a run."""
    detail = " ".join(str(exc).split()).removeprefix(f"{path}: ")[:160]
    what = "write to" if writing else "open"
    if disk_full(exc) or (io_error(exc) and _no_space_at(Path(path))):
        return (
            f"cannot {what} the database {path}: the disk is full ({detail}). "
            "What was stored before is kept; free some space and run again."
        )
    if io_error(exc):
        return (
            f"cannot {what} the database {path}: {detail} (is the disk full or failing?). "
            "What was stored before is kept; free some space or check the disk, then run again."
        )
    if writing:
        return (
            f"cannot write to the database {path}: {detail}. "
            "What was stored before is kept; check the file and the disk, then run again."
        )
    if isinstance(exc, sqlite3.Error | OSError) and str(path) != ":memory:":
        reason = _os_reason(Path(path))
        if reason:
            detail = f"{detail} ({reason})" if "unable to open" in detail else reason
    return (
        f"cannot open the database {path}: {detail}. The file was left untouched; "
        "move it away (or pass --data-dir) to start fresh."
    )


def failing_file(exc: BaseException) -> str | None:
    """The database file whose connection raised ``exc``, read from the frames it passed
    through: an aiosqlite connection (the store, the checkpointer) or the journal. None
    when no frame tells."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for frame, _ in traceback.walk_tb(current.__traceback__):
            path = _path_of(frame.f_locals.get("self"))
            if path:
                return path
        current = current.__cause__ or current.__context__
    return None


def _path_of(owner: object) -> str | None:
    connector = getattr(owner, "_connector", None)  # aiosqlite.Connection
    if callable(connector):
        try:
            database = inspect.getclosurevars(connector).nonlocals.get("database")
        except (TypeError, ValueError):
            database = None
        if isinstance(database, str | Path) and str(database) != ":memory:":
            return str(database)
    path = getattr(owner, "path", None)  # the journal (a sqlite3 connection of its own)
    if hasattr(owner, "_db") and isinstance(path, Path):
        return str(path)
    return None


def storage_problem(exc: BaseException, default: str | Path | None = None) -> str:
    """The one line for a storage error that reached a command or ended a run: the file
    whose connection failed (else ``default``); a write error when the disk is full or
    failing."""
    path = failing_file(exc) or (str(default) if default else "in the data dir")
    writing = disk_full(exc) or io_error(exc)
    return storage_message(path, exc, writing=writing)
