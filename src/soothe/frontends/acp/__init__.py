"""``soothe acp``: Soothe as an Agent Client Protocol agent over stdio (Zed, JetBrains
IDEs, Neovim plugins, toad), on the same Session as the app and ``soothe -p``.

stdout carries the protocol's frames and nothing else: the process's own stdout is
pointed at stderr before anything runs (a stray print, a tool's child process or an MCP
server writing to fd 1 lands on stderr), and the frames go to a duplicate of the
original. Logs go to stderr.

Modules: ``agent`` (the protocol's methods), ``turns`` (a prompt's run, approvals,
clarifications, cancel), ``translate`` (engine events -> session updates, live and
replayed), ``tool_calls`` (kind, title, locations, diff), ``prompt_text`` (content
blocks -> the request), ``engine_host`` (the Session for a cwd and MCP servers),
``streams`` (the stdio pipes).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from typing import Any, cast

from soothe.engine.config import Settings


def run_acp(settings: Settings, args: argparse.Namespace) -> int:
    """Serve the protocol on stdin/stdout until the client closes stdin."""
    from soothe.frontends.acp.streams import protect_stdout

    protocol_out = protect_stdout()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_PlainFormatter("soothe acp: %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if getattr(args, "debug", False) else logging.WARNING)
    try:
        asyncio.run(_serve(settings, protocol_out))
    except KeyboardInterrupt:
        return 130
    return 0


class _PlainFormatter(logging.Formatter):
    """A log line can quote a server, a tool or an MCP server's stderr: made plain."""

    def format(self, record: logging.LogRecord) -> str:
        from soothe.engine.sanitize import plain

        return plain(super().format(record))


def _stop_on_sigterm() -> None:
    """SIGTERM (an editor closing its agent) stops as the end of stdin does: the runs
    are cancelled, their steps suspended (resumable), the store closed."""
    import signal

    task = asyncio.current_task()
    if task is None:
        return
    with contextlib.suppress(NotImplementedError, RuntimeError):  # not on every platform
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)


async def _serve(settings: Settings, protocol_out: int) -> None:
    from acp.core import AgentSideConnection

    from soothe.frontends.acp.agent import SootheAgent
    from soothe.frontends.acp.streams import open_streams

    agent = SootheAgent(settings)
    reader, writer = await open_streams(protocol_out)
    conn = AgentSideConnection(cast(Any, agent), writer, reader, listening=False)
    _stop_on_sigterm()
    try:
        await conn.listen()
    except asyncio.CancelledError:  # SIGTERM or Ctrl+C: the runs are suspended below
        pass
    finally:
        await agent.close()
        await asyncio.shield(conn.close())
