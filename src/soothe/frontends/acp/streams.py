"""The protocol's pipes: stdin for the client's frames, a private copy of stdout for
ours; fd 1 itself (and ``sys.stdout``) pointed at stderr, so nothing else reaches the
client's reader."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from typing import Any

LIMIT = 50 * 1024 * 1024
"""The longest frame read (an embedded file can be large; asyncio's default is 64 KiB)."""


def protect_stdout() -> int:
    """A duplicate of fd 1 for the protocol; fd 1 and ``sys.stdout`` become stderr."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    protocol = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


class _Writes(asyncio.BaseProtocol):
    """Flow control for the writer (``drain`` waits while the pipe is full)."""

    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    async def _drain_helper(self) -> None:
        if self._paused:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter


class _FileWrites(asyncio.WriteTransport):
    """A blocking writer, for a protocol fd that is a regular file (not a pipe)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._closing = False

    def write(self, data: Any) -> None:
        view = memoryview(bytes(data))
        while view:
            view = view[os.write(self._fd, view) :]

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def can_write_eof(self) -> bool:
        return False


def _feed_in_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    def read() -> None:
        try:
            while data := sys.stdin.buffer.readline():
                loop.call_soon_threadsafe(reader.feed_data, data)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=read, name="acp-stdin", daemon=True).start()


async def open_streams(protocol_out: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except (ValueError, OSError):  # stdin is a regular file: read it in a thread
        _feed_in_thread(loop, reader)
    writes = _Writes()
    transport: asyncio.WriteTransport
    try:
        pipe = os.fdopen(protocol_out, "wb", buffering=0)
        transport, _ = await loop.connect_write_pipe(lambda: writes, pipe)
    except (ValueError, OSError):
        transport = _FileWrites(protocol_out)
    return reader, asyncio.StreamWriter(transport, writes, None, loop)
