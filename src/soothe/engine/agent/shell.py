"""run_shell: one command in the workspace, in its own session, bounded in time and size.

Output is read as it arrives and only a head and a tail are kept, so a command that prints
gigabytes costs little memory. No process the command started outlives it: when the
command ends, times out or is cancelled, everything it started is killed (``setsid`` and
double forks included) before returning or re-raising, and when soothe dies the command
dies too. Under bwrap its PID namespace does this; otherwise the supervisor of
``reaper.py`` (``sandbox.py`` says which).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from soothe.engine.agent.sandbox import Confinement, prepare

_READ_CHUNK = 65536
_DRAIN_GRACE = 2.0
_STOP_GRACE = 5.0
"""How long the supervisor gets to kill and reap the command's processes when stopped."""
SECRET_ENV = frozenset({"OPENAI_API_KEY", "SOOTHE_MODEL__API_KEY"})
"""The model API keys soothe reads: a command the agent runs (perhaps at the suggestion of
a file it read) does not get them, so they cannot end up in tool output and the database."""


@dataclass
class ShellResult:
    exit_code: int | None
    output: str
    timed_out: bool
    dropped_bytes: int


class _HeadTail:
    """Keeps the first ``head`` and last ``tail`` bytes of a stream, counting the rest."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_cap, self.tail_cap = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    @property
    def dropped(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if self.dropped:
            return f"{head}\n… [truncated {self.dropped} bytes of output]\n{tail}"
        return head + tail


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the command's process group (its leader included).

    Not ``proc.kill()`` after it: that polls first, and reaping the leader there steals
    its exit from asyncio's child watcher ("Unknown child process pid ...")."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:
        _signal(proc, signal.SIGKILL)


def _signal(proc: asyncio.subprocess.Process, sig: int) -> None:
    """Send ``sig`` to the process itself, unless it has been reaped."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)


async def _reap(proc: asyncio.subprocess.Process, within: float = 2.0) -> None:
    """Wait briefly for a killed process so it does not linger as a zombie."""
    with contextlib.suppress(TimeoutError, ProcessLookupError):
        await asyncio.wait_for(asyncio.shield(proc.wait()), within)


async def _stop(proc: asyncio.subprocess.Process, supervised: bool) -> None:
    """End the command and every process it started, then its process group.

    A supervisor is asked with SIGTERM (it kills and reaps the command's processes, then
    exits); were it killed outright, what it holds would be orphaned. Under a PID
    namespace killing the group is enough: bwrap dies and the namespace with it."""
    try:
        if supervised and proc.returncode is None:
            _signal(proc, signal.SIGTERM)
            await _reap(proc, _STOP_GRACE)
    finally:
        _kill_group(proc)
        await _reap(proc)


async def run_command(
    command: str,
    cwd: Path,
    timeout: float,
    keep_chars: int,
    *,
    network: bool = False,
    confinement: Confinement | None = None,
) -> ShellResult:
    """Run ``command`` with ``sh -c`` in ``cwd``, confined (``sandbox.py``): writes land
    only in ``cwd`` and a private temp dir, no network unless ``network``; stdout and
    stderr are merged.

    When the command exits, times out or is cancelled, whatever it started is killed,
    whatever its session or process group, so no process outlives the call.
    """
    half = max(100, keep_chars // 2)
    buf = _HeadTail(half, half)
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    prepared = prepare(command, cwd, env, network=network, confinement=confinement)
    try:
        proc = await asyncio.create_subprocess_exec(
            *prepared.argv,
            cwd=str(cwd),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            env=prepared.env,
            preexec_fn=prepared.preexec,
            pass_fds=prepared.pass_fds,
        )
    except BaseException:
        prepared.close()
        raise
    try:
        return await _collect(proc, buf, timeout, prepared.supervised)
    finally:
        prepared.close()


async def _collect(
    proc: asyncio.subprocess.Process, buf: _HeadTail, timeout: float, supervised: bool
) -> ShellResult:
    async def read_all() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(_READ_CHUNK):
            buf.add(chunk)

    reader = asyncio.ensure_future(read_all())
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            timed_out = True
        await _stop(proc, supervised)
        # Every process that could write is gone, so the reader reaches EOF promptly.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reader), _DRAIN_GRACE)
    except BaseException:
        await _stop(proc, supervised)
        raise
    finally:
        if not reader.done():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
    return ShellResult(
        exit_code=None if timed_out else proc.returncode,
        output=buf.text(),
        timed_out=timed_out,
        dropped_bytes=buf.dropped,
    )
