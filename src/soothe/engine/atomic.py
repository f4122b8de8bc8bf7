"""The one way soothe replaces a file: a temp file next to it, renamed over it.

``write_atomic`` writes the bytes to a new file in the target's directory (a unique
name, created exclusively, never through a link), syncs it, gives it the old file's
permission bits (and owner, where allowed), and ``os.replace``-s it over the target.
So a reader sees the old content or the new, never a mix; a process killed mid-write
leaves the old file whole (and at worst a ``.soothe-tmp`` file beside it); and a target
that is one of several hard links is replaced by a new file: the other links keep the
old content, never written through.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

__all__ = ["TMP_SUFFIX", "write_atomic"]

TMP_SUFFIX = ".soothe-tmp"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NEW_FILE_MODE = 0o644  # before the umask, as an editor creates a file


def _temp_name(target: Path) -> str:
    # A short stem keeps the name under NAME_MAX whatever the target's length.
    return f".{target.name[:40]}.{secrets.token_hex(6)}{TMP_SUFFIX}"


def write_atomic(target: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``target`` (a path whose directory exists) with ``data``, atomically.

    ``mode``: the permission bits to give; None keeps the old file's (a new file gets
    0o644 minus the umask). Raises OSError; the temp file is removed on failure.
    """
    try:
        old: os.stat_result | None = os.stat(target, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if mode is None and old is not None and stat.S_ISREG(old.st_mode):
        mode = stat.S_IMODE(old.st_mode)
    tmp = target.with_name(_temp_name(target))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, _NEW_FILE_MODE)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            if old is not None and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):  # keep the owner where we may
                    os.fchown(fd, old.st_uid, old.st_gid)
                    if mode is not None:
                        os.fchmod(fd, mode)  # chown clears set-id bits
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_dir(target.parent)


def _sync_dir(directory: Path) -> None:
    """Make the rename durable (best effort: not every file system syncs a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
