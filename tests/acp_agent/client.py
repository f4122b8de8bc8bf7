"""A protocol client for the tests: ``soothe acp`` as a subprocess, driven through the
``acp`` package's own client side (``spawn_agent_process``), the way an editor does.

``Recorder`` keeps every session update it is sent and answers permission requests from
a queue of option ids (``allow_once``, ``allow_always``, ``reject``; ``hold`` keeps the
request open until released); ``acp_process(env)`` starts the agent in the isolated env
of tests/fakes/cli_harness (HOME/XDG under tmp, the fake Ollama's URL).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.fakes.cli_harness import Env

CLIENT_CAPABILITIES: dict[str, Any] = {"fs": {"readTextFile": False, "writeTextFile": False}}


class Recorder:
    """The client's side: what the agent sent, and its answers to permission requests."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permissions: list[Any] = []
        self.choices: list[str] = []
        self.asked = asyncio.Event()
        self.changed = asyncio.Event()

    # -- the acp.Client protocol --------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        self.permissions.append((tool_call, options))
        self.asked.set()
        choice = self.choices.pop(0) if self.choices else "cancelled"
        if choice == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice)
        )

    def on_connect(self, conn: Any) -> None:
        pass

    # -- reading what came ----------------------------------------------------------------

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u.session_update for s, u in self.updates if session_id in (None, s)]

    def of(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if u.session_update == kind]

    def text(self, kind: str) -> str:
        return "".join(u.content.text for u in self.of(kind))

    def clear(self) -> None:
        self.updates.clear()

    async def wait_for(self, kind: str, timeout: float = 20.0) -> Any:
        async def seen() -> Any:
            while True:
                found = self.of(kind)
                if found:
                    return found[-1]
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(seen(), timeout)


@asynccontextmanager
async def acp_process(
    env: Env, recorder: Recorder, *extra: str
) -> AsyncIterator[tuple[Any, asyncio.subprocess.Process]]:
    """``soothe acp`` with the fake Ollama, connected and initialized."""
    from acp import PROTOCOL_VERSION
    from acp.stdio import spawn_agent_process

    args = ["-m", "soothe", "acp", *env.base_args(), *extra]
    args = [a for a in args if a not in ("--workspace", str(env.workspace))]
    log = (env.home / "acp-stderr.txt").open("ab")
    async with spawn_agent_process(
        recorder,
        sys.executable,
        *args,
        env=env.environ(),
        cwd=env.workspace,
        transport_kwargs={"stderr": log, "shutdown_timeout": 15.0},
    ) as (conn, proc):
        await asyncio.wait_for(
            conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=CLIENT_CAPABILITIES
            ),
            30,
        )
        try:
            yield conn, proc
        finally:
            log.close()


def stderr_of(env: Env) -> str:
    """What the agent processes of this test wrote to stderr (their logs)."""
    path = env.home / "acp-stderr.txt"
    return path.read_text(errors="replace") if path.exists() else ""
