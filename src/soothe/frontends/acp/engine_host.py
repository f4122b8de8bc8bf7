"""The one Soothe Session an ACP process serves its sessions from.

A Session is built for a workspace and a set of MCP servers (the tools are made for
them when it starts), so the host keeps one for the (cwd, MCP servers) the current ACP
session asked for: the same config, data dir, rules, sandbox and journal as every other
front end, the workspace being the client's ``cwd`` and the client's MCP servers added
to the configured ones. Another session with the same cwd and servers shares it; one
with others gets a new Session once nothing runs on the old one (the data-dir lock
allows one at a time).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from soothe.engine.config import McpServerSettings, Settings
from soothe.engine.sanitize import one_line

if TYPE_CHECKING:
    from soothe.engine.session import Session

log = logging.getLogger(__name__)


def client_servers(servers: Sequence[Any] | None, taken: set[str]) -> dict[str, McpServerSettings]:
    """The client's MCP servers as ``[mcp.servers]`` entries: stdio commands and
    streamable HTTP URLs (SSE is not a transport our MCP client speaks: logged, left
    out). A name the config already uses gets ``-acp`` after it: the configured server
    keeps its name and its rules."""
    out: dict[str, McpServerSettings] = {}
    for server in servers or ():
        name = str(getattr(server, "name", "") or "server")
        while name in taken or name in out:
            name += "-acp"
        if getattr(server, "type", None) == "sse":
            log.warning("MCP server %s: SSE is not supported (stdio or http)", one_line(name))
            continue
        if getattr(server, "url", None):
            headers = {h.name: h.value for h in getattr(server, "headers", None) or []}
            out[name] = McpServerSettings(url=server.url, headers=headers)
        elif getattr(server, "command", None):
            env = {e.name: e.value for e in getattr(server, "env", None) or []}
            out[name] = McpServerSettings(
                command=server.command, args=list(server.args or []), env=env
            )
    return out


def settings_for(base: Settings, cwd: str, servers: Sequence[Any] | None) -> Settings:
    """``base`` with the workspace at ``cwd`` and the client's MCP servers added."""
    settings = base.model_copy(deep=True)
    settings.tools = settings.tools.model_copy(update={"workspace": Path(cwd)})
    configured = dict(settings.mcp.servers)
    added = client_servers(servers, set(configured))
    if added:
        settings.mcp = settings.mcp.model_copy(update={"servers": {**configured, **added}})
    return settings


def _key(settings: Settings) -> str:
    servers = {k: v.model_dump(mode="json") for k, v in settings.mcp.servers.items()}
    return json.dumps([str(settings.tools.resolved_workspace()), servers], sort_keys=True)


class Busy(RuntimeError):
    """Another workspace is asked for while a run goes on in the current one."""


class EngineHost:
    def __init__(self, base: Settings) -> None:
        self.base = base
        self.session: Session | None = None
        self._key = ""

    async def engine_for(self, cwd: str, servers: Sequence[Any] | None, *, busy: bool) -> Session:
        """The Session for this cwd and these servers, started; ``busy`` says a run goes
        on in the current one (it is then kept, and Busy raised)."""
        settings = settings_for(self.base, cwd, servers)
        key = _key(settings)
        if self.session is not None and key == self._key:
            return self.session
        if self.session is not None:
            if busy:
                raise Busy("a run is going on in another workspace; cancel it or wait for its end")
            await self.close()
        from soothe.engine.session import Session

        session = Session(settings)
        await session.start()
        self.session, self._key = session, key
        return session

    async def close(self) -> None:
        if self.session is not None:
            session, self.session, self._key = self.session, None, ""
            await session.close()
