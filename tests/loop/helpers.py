"""Helpers for the loop tests: a routing script ("brain"), settings, event queries.

The brain answers each model call by what the call is for (classify, plan, assess,
complete, or the action step named in the prompt), so steps that run in parallel do not
depend on the order their calls reach the model. The same brain drives a
ScriptedChatModel (``brain.model()``) or the fake Ollama server (``brain.wire``).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from soothe.engine.bus import EventBus
from soothe.engine.config import Settings, load_settings
from soothe.engine.events import EventBase
from soothe.engine.llm.scripted import ScriptedChatModel, ScriptExhausted
from soothe.engine.session import Session

SCHEMA_KINDS = {
    "Classification": "classify",
    "PlanGeneration": "plan",
    "StatusAssessment": "assess",
    "GoalDecomposition": "decompose",
}
_STEP = re.compile(r"^Step (\S+):", re.MULTILINE)
_STEP_DESCRIPTION = re.compile(r"^Step \S+: (.*)$", re.MULTILINE)


def call_kind(system: str, user: str, schema_title: str | None) -> str:
    """What a model call is for: classify/plan/assess/decompose/complete/step:ID/other."""
    if schema_title:
        return SCHEMA_KINDS.get(schema_title, f"schema:{schema_title}")
    if system.startswith("You are the step executor"):
        match = _STEP.search(user)
        return f"step:{match.group(1)}" if match else "step:?"
    if system.startswith("Write the final answer"):
        return "complete"
    return "other"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)


class Brain:
    """Per-kind reply queues; ``log`` lists the kind of every call in arrival order."""

    def __init__(self) -> None:
        self.queues: dict[str, deque[Any]] = {}
        self.log: list[str] = []
        self.prompts: list[tuple[str, str]] = []  # (kind, user prompt text)
        self.systems: list[tuple[str, str]] = []  # (kind, system prompt text)
        self.hooks: dict[str, Callable[[], None]] = {}
        self.always: dict[str, Any] = {}  # kind -> reply used whenever its queue is empty

    def add(self, kind: str, *items: Any) -> Brain:
        self.queues.setdefault(kind, deque()).extend(items)
        return self

    def on(self, kind: str, hook: Callable[[], None]) -> Brain:
        """Call ``hook`` (synchronously, before replying) whenever a ``kind`` call arrives."""
        self.hooks[kind] = hook
        return self

    def reply(self, kind: str, user: str, system: str = "") -> Any:
        self.log.append(kind)
        self.prompts.append((kind, user))
        self.systems.append((kind, system))
        if kind in self.hooks:
            self.hooks[kind]()
        if kind.startswith("step:") and (found := _STEP_DESCRIPTION.search(user)):
            # "desc:TEXT" queues answer a step by its description, whatever its id became.
            by_description = self.queues.get(f"desc:{found.group(1).strip()}")
            if by_description:
                return by_description.popleft()
        queue = self.queues.get(kind)
        if not queue:
            if kind in self.always:
                return self.always[kind]
            return ScriptExhausted(f"brain has no reply scripted for a '{kind}' call")
        return queue.popleft()

    def count(self, kind: str) -> int:
        return self.log.count(kind)

    def step_prompts(self, step_id: str) -> list[str]:
        return [p for k, p in self.prompts if k == f"step:{step_id}"]

    # --- the two ways in ------------------------------------------------------------------

    def __call__(self, messages: list[Any], info: dict[str, Any]) -> Any:
        schema = info["kwargs"].get("format")
        title = schema.get("title") if isinstance(schema, dict) else None
        system = _text(messages[0].content) if messages else ""
        user = _text(messages[1].content) if len(messages) > 1 else ""
        return self.reply(call_kind(system, user, title), user, system)

    def wire(self, body: dict[str, Any]) -> Any:
        schema = body.get("format")
        title = schema.get("title") if isinstance(schema, dict) else None
        messages = body.get("messages") or []
        system = _text(messages[0].get("content") or "") if messages else ""
        user = _text(messages[1].get("content") or "") if len(messages) > 1 else ""
        return self.reply(call_kind(system, user, title), user, system)

    def model(self) -> ScriptedChatModel:
        return ScriptedChatModel(responder=self)


def make_settings(tmp_path: Path, ws: Path, **sections: dict[str, Any]) -> Settings:
    overrides: dict[str, Any] = {
        "storage": {"data_dir": str(tmp_path / "data")},
        "tools": {"workspace": str(ws), "approval": "auto", "clarify": "auto"},
        "memory": {"max_recall": 0},
    }
    for name, values in sections.items():
        overrides[name] = {**overrides.get(name, {}), **values}
    return load_settings(overrides=overrides)


async def run_all(session: Session, text: str, **kwargs: Any) -> list[EventBase]:
    return [e async for e in session.run(text, **kwargs)]


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
