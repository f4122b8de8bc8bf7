"""``soothe`` as a subprocess whose stderr (and stdin, when asked) is a terminal (a pty),
so it shows what it shows a person: progress lines, questions. For tests that signal a
run or type an answer, then read the terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.fakes.cli_harness import Env


def read_until_closed(fd: int, into: list[bytes]) -> None:
    """Read a pty master until the other side is closed (EIO on Linux)."""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return
        if not chunk:
            return
        into.append(chunk)


@dataclass
class Process:
    proc: subprocess.Popen[str]
    master: int = -1
    """The pty's master side (-1 without a terminal)."""
    chunks: list[bytes] = field(default_factory=list)
    reader: threading.Thread | None = None

    @property
    def screen(self) -> bytes:
        """What reached the terminal so far."""
        return b"".join(self.chunks)

    def finish(self, timeout: float) -> tuple[str, str]:
        """Wait for the end: (stdout, stderr), stderr read from the terminal (CRLF made
        LF) when it is one."""
        out, err = self.proc.communicate(timeout=timeout)
        if self.reader is None:
            return out, err
        self.reader.join(timeout=10)
        return out, self.screen.decode().replace("\r\n", "\n")


@contextmanager
def soothe_process(
    env: Env, *args: str, tty: bool = False, stdin_tty: bool = False
) -> Iterator[Process]:
    """``soothe ARGS`` with the model/storage options in the isolated env; stderr a pty
    when ``tty`` (stdin too with ``stdin_tty``). Killed if still running at the end."""
    master = slave = -1
    if tty:
        master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "soothe", *args, *env.base_args()],
        cwd=env.workspace,
        env=env.environ(),
        stdin=slave if stdin_tty else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave if tty else subprocess.PIPE,
        text=True,
    )
    run = Process(proc, master)
    if tty:
        os.close(slave)
        run.reader = threading.Thread(
            target=read_until_closed, args=(master, run.chunks), daemon=True
        )
        run.reader.start()
    try:
        yield run
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if tty:
            os.close(master)
