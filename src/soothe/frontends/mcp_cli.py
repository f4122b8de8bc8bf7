"""``soothe mcp``: the configured MCP servers, started once, with their state and tools."""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

from soothe.engine.config import Settings
from soothe.engine.sanitize import one_line


async def _status(settings: Settings) -> list[str]:
    from soothe.engine.agent.mcp import McpManager
    from soothe.engine.agent.tools import TOOLS

    manager = McpManager(settings.mcp, reserved=set(TOOLS))
    try:
        await manager.start()
        lines: list[str] = []
        for server in manager.status():
            # the error (the server's stderr) and the tools are the server's words: plain
            lines.append(f"{one_line(server.name)}  ({server.transport})  {server.state}")
            if server.error:
                lines.append(f"  error: {one_line(server.error)}")
            for name, description in server.tools:
                lines.append(f"  {one_line(name):24} {one_line(description)}")
        return lines
    finally:
        await manager.aclose()


def run_mcp(settings: Settings, out: TextIO | None = None) -> int:
    """Print each server's state and tools; 1 when a configured server is unusable."""
    stream = out if out is not None else sys.stdout
    if not settings.mcp.servers:
        stream.write("no MCP servers configured (add [mcp.servers.NAME] to the config file)\n")
        return 0
    import logging

    logging.getLogger("soothe.engine.agent.mcp").setLevel(logging.ERROR)
    lines = asyncio.run(_status(settings))
    stream.write("\n".join(lines) + "\n")
    bad = any(" failed" in line or " died" in line for line in lines if not line.startswith(" "))
    return 1 if bad else 0
