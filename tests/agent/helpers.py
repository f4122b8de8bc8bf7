"""Helpers shared by the agent and security tests: tool contexts and a scripted approver."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from soothe.engine.agent.tools import ToolContext
from soothe.engine.bus import EventBus
from soothe.engine.events import ApprovalRequested, EventBase
from soothe.engine.interact import ApprovalResponse, InteractBroker

IDS = {"thread_id": "t1", "loop_id": "l1", "goal_id": "g1", "step_id": "s1"}


def make_ctx(
    root: Path,
    *,
    approval: str = "auto",
    broker: InteractBroker | None = None,
    bus: EventBus | None = None,
    max_output_chars: int = 4000,
    max_read_bytes: int = 200_000,
    approval_timeout: float | None = None,
    always_approved: set[str] | None = None,
) -> ToolContext:
    return ToolContext(
        workspace=root,
        broker=broker,
        approval=approval,  # type: ignore[arg-type]
        max_output_chars=max_output_chars,
        max_read_bytes=max_read_bytes,
        ids=dict(IDS),
        always_approved=always_approved if always_approved is not None else set(),
        bus=bus,
        approval_timeout=approval_timeout,
    )


def call(name: str, args: Any = None, call_id: str = "c1") -> dict[str, Any]:
    return {"name": name, "args": {} if args is None else args, "id": call_id}


@contextlib.asynccontextmanager
async def approver(
    bus: EventBus,
    broker: InteractBroker,
    decide: str | Callable[[ApprovalRequested], str],
) -> AsyncIterator[list[ApprovalRequested]]:
    """Answer every ApprovalRequested on the bus; yields the list of requests seen."""
    seen: list[ApprovalRequested] = []
    sub = bus.subscribe("*")

    async def answer() -> None:
        async for event in sub:
            if isinstance(event, ApprovalRequested):
                seen.append(event)
                outcome = decide if isinstance(decide, str) else decide(event)
                broker.answer(event.request_id, ApprovalResponse(outcome=outcome))  # type: ignore[arg-type]

    task = asyncio.create_task(answer())
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sub.close()


class Recorder:
    """Collects every event published on a bus, synchronously."""

    def __init__(self, bus: EventBus) -> None:
        self.events: list[EventBase] = []
        bus.add_listener(self.events.append)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def types(self) -> list[str]:
        return [e.type for e in self.events]  # type: ignore[attr-defined]


async def wait_for_file(path: Path, timeout: float = 5.0) -> None:
    """Bounded poll for a file that a subprocess writes."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not path.exists() or not path.read_text().strip():
        if loop.time() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout}s")
        await asyncio.sleep(0.01)


def unique_sleep(base: int) -> list[str]:
    """``sleep BASE.NNNNN``: an argv no other test runs, to find in /proc. (A pid the
    command writes would not do: under bwrap it is a pid of the command's namespace.)"""
    return ["sleep", f"{base}.{secrets.randbelow(90000) + 10000}"]


def running(argv: list[str]) -> list[int]:
    """The pids whose command line is exactly ``argv`` and that have not exited."""
    want = "\0".join(argv) + "\0"
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "cmdline").read_bytes().decode(errors="replace") != want:
                continue
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            found.append(int(proc.name))
    return found


async def wait_gone(argv: list[str], timeout: float = 3.0) -> bool:
    """True once no process runs ``argv`` (bounded poll)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while running(argv):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True
