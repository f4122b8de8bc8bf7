"""One process per data dir: the ContextEngine caches goals in memory, so a second
writer on the same files would hand out the same goal ids. The lock is an advisory
``flock`` on ``soothe.lock``, released by the kernel when the process dies."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path
from typing import IO


class DataDirBusy(RuntimeError):
    user_facing = True


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / "soothe.lock"
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release
            handle.read(0)
        except OSError as exc:
            from soothe.engine.storage_errors import StorageError

            target = self.path.parent if not self.path.parent.is_dir() else self.path
            raise StorageError(
                f"cannot use the data dir {self.path.parent}: {target}: "
                f"{exc.strerror or exc}; pass --data-dir to use another one",
                target,
            ) from exc
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            handle.close()
            raise DataDirBusy(
                f"the data dir {self.path.parent} is in use by soothe (pid {owner}); "
                "close it first, or pass --data-dir to use another one"
            ) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
        except OSError as exc:  # a full disk: the lock holds without the pid in it
            if exc.errno not in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
                handle.close()
                raise
        self._file = handle

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            with contextlib.suppress(OSError):  # a pid that could not be flushed (full disk)
                self._file.close()
            self._file = None
