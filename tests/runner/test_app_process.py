"""The app as a process in a terminal (a pty): a store it cannot open, and SIGTERM.

- A corrupt journal.db: the notice names journal.db, and ctrl+q ends the process. Before,
  the notice said ``DatabaseError: file is not a database`` and ctrl+q left a blank
  screen and a live process (the store's aiosqlite threads were never closed).
- SIGTERM mid-step: the app quits as ctrl+q does after "yes": the step is suspended, the
  goal resumable, the terminal left as it was (the alternate screen closed), exit 143.
  Before, the default action killed the process inside the app's screen."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env
from tests.fakes.pty_run import read_until_closed
from tests.runner.test_headless_interrupt import two_steps
from tests.runner.test_interrupt import hang_at, replan_the_summary

LEAVE_ALT_SCREEN = b"\x1b[?1049l"
ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


class Terminal:
    """``soothe ARGS`` on a pty of ``cols`` x ``rows``; what it writes is collected."""

    def __init__(self, env: Env, *args: str, cols: int = 200, rows: int = 40) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.chunks: list[bytes] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "soothe", *args],
            cwd=env.workspace,
            env=env.environ(TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows)),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        read_until_closed(self.master, self.chunks)

    @property
    def output(self) -> bytes:
        return b"".join(self.chunks)

    def text(self) -> str:
        return ANSI.sub(b"", self.output).decode(errors="replace")

    def wait_for(self, needle: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.text():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        pytest.fail(f"{needle!r} never shown:\n{self.text()[-3000:]}")

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def wait_exit(self, timeout: float = 20.0) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the app did not exit within {timeout} s:\n{self.text()[-2000:]}")
        self.reader.join(timeout=5)
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


@pytest.fixture
def short_data_dir() -> Iterator[Path]:
    """A data dir with a short path, so the notice shows it on one line."""
    folder = Path(tempfile.mkdtemp(prefix="sd", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_app_names_a_corrupt_journal_and_ctrl_q_exits(
    brain: Brain, fake: Any, env: Env, short_data_dir: Path
) -> None:
    journal = short_data_dir / "journal.db"
    journal.write_bytes(b"SQLite format 3\x00" + os.urandom(8176))
    args = [a for a in env.base_args() if a != str(env.data_dir)]
    args[args.index("--data-dir") + 1 : args.index("--data-dir") + 1] = [str(short_data_dir)]
    term = Terminal(env, *args)
    try:
        term.wait_for("Engine unavailable")
        term.wait_for(f"cannot open the database {journal}: file is not a database")
        term.type(b"\x11")  # ctrl+q
        assert term.wait_exit() == 1  # the engine never ran: not a success
    finally:
        term.close()
    assert LEAVE_ALT_SCREEN in term.output


def test_sigterm_in_the_app_suspends_the_step_restores_the_terminal_and_exits_143(
    soothe: Any, brain: Brain, fake: Any, env: Env, stored: Any
) -> None:
    two_steps(brain)
    reached = hang_at(fake, brain, "S-02")
    term = Terminal(env, *env.base_args())
    try:
        term.wait_for("Type a request")
        term.type(b"Summarise the facts\r")
        assert reached.wait(timeout=60), term.text()[-2000:]
        before = len(term.output)
        term.proc.send_signal(signal.SIGTERM)
        code = term.wait_exit()
    finally:
        term.close()
        fake.responder = brain
    assert code == 143, term.text()[-2000:]
    assert LEAVE_ALT_SCREEN in term.output[before:]
    db = stored()
    (goal,) = db.goals
    assert goal.status == "suspended"
    assert db.step_status(goal.id)["S-01"] == "completed"

    # The thread resumes where it stopped: S-01 is not asked again.
    replan_the_summary(brain)
    brain.add("step", "Summary: three facts.")
    result = soothe("-p", "", "--thread", db.threads[0].id)
    assert (result.code, result.out) == (0, "Summary: three facts.\n"), result.err
    assert brain.count("step:S-01") == 1
