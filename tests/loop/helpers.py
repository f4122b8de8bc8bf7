"""Helpers for the loop tests: settings, event queries, plan/assessment replies.

The model is scripted with `tests.fakes.brain.Brain`, which answers each call by what it
is for, as a ScriptedChatModel (``brain.model()``) or a fake server's responder (``brain``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from soothe.engine.bus import EventBus
from soothe.engine.config import Settings, load_settings
from soothe.engine.events import EventBase
from soothe.engine.session import Session


def make_settings(tmp_path: Path, ws: Path, **sections: dict[str, Any]) -> Settings:
    overrides: dict[str, Any] = {
        "storage": {"data_dir": str(tmp_path / "data")},
        "tools": {"workspace": str(ws), "approval": "auto", "clarify": "auto"},
        "memory": {"max_recall": 0},
    }
    for name, values in sections.items():
        overrides[name] = {**overrides.get(name, {}), **values}
    return load_settings(overrides=overrides)


async def collect(session: Session, work: Awaitable[Any]) -> list[EventBase]:
    """Await ``work`` (a run, a resume); the events of the session's thread that the bus
    carried meanwhile, in order (the run returns its outcome, not its events)."""
    sub = session.bus.subscribe("*", maxsize=1_000_000)
    try:
        await work
    finally:
        sub.close()
    return [e for e in sub.drain() if e.thread_id == session.thread_id]


async def run_all(session: Session, text: str, **kwargs: Any) -> list[EventBase]:
    return await collect(session, session.run(text, **kwargs))


def of_type(events: list[EventBase], type_: str, **match: Any) -> list[Any]:
    return [
        e for e in events if e.type == type_ and all(getattr(e, k) == v for k, v in match.items())
    ]


def one(events: list[EventBase], type_: str, **match: Any) -> Any:
    found = of_type(events, type_, **match)
    assert len(found) == 1, f"expected one {type_} {match}, got {len(found)}"
    return found[0]


def goal_moves(events: list[EventBase], goal_id: str) -> list[str]:
    return [e.to_status for e in of_type(events, "goal.status_changed", goal_id=goal_id)]


def step(id: str, description: str = "", deps: list[str] | None = None, **extra: Any) -> dict:
    return {"id": id, "description": description or f"do {id}", "dependencies": deps or [], **extra}


def plan(*steps: dict, mode: str = "parallel") -> dict[str, Any]:
    return {"steps": list(steps), "execution_mode": mode, "reasoning": "scripted"}


def assess(status: str, *, progress: str = "medium", completion: bool = True) -> dict[str, Any]:
    return {
        "status": status,
        "goal_progress": progress,
        "reasoning": f"scripted {status}",
        "require_goal_completion": completion,
    }


def classify(label: str, answer: str = "") -> dict[str, Any]:
    return {"label": label, "answer": answer, "reason": "scripted"}


@contextlib.asynccontextmanager
async def answering(
    bus: EventBus, type_: str, answer: Callable[[Any], None]
) -> AsyncIterator[list[Any]]:
    """A task that answers every ``type_`` request seen on the bus while the block runs."""
    seen: list[Any] = []
    sub = bus.subscribe("*")

    async def serve() -> None:
        async for event in sub:
            if event.type == type_:
                seen.append(event)
                answer(event)

    task = asyncio.create_task(serve())
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sub.close()
