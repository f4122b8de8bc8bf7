"""``ContextEngine.on(name, fn)``: the seed's callback API, as a filter over the bus.

``on`` adds one bus listener that matches events to the callback name (``callback_of``
says which event is which callback) and calls ``fn(goal_id)`` for goal_* names or
``fn(goal_id, step_id)`` for step_* names. As in the seed, ``goal_cancelled`` and
``goal_suspended`` also pass the move's reason and ``goal_failed`` its error
(``fn(goal_id, reason)``) to a callback that takes a second positional argument; a
one-argument callback gets the goal id only. There is no second notification path: the
engine publishes its events and the callbacks follow from them.

The engine's writer publishes while it holds its lock, so calls matched then are collected
and run (sync or async, in order) once the writer has released the lock: a callback may
call the engine. Calls matched outside a write run at once (async ones as a task).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from soothe.engine.bus import EventBus
from soothe.engine.events import (
    EventBase,
    GoalCreated,
    GoalRemoved,
    GoalStatusChanged,
    GoalUpdated,
    StepCompleted,
    StepFailed,
    StepSkipped,
    StepStarted,
)

log = logging.getLogger(__name__)

GOAL_CALLBACKS: frozenset[str] = frozenset(
    {
        "goal_created",
        "goal_activated",
        "goal_completed",
        "goal_failed",
        "goal_suspended",
        "goal_cancelled",
        "goal_blocked",
        "goal_unblocked",
        "goal_validated",
        "goal_awaiting_clarification",
        "goal_resumed",
        "goal_sent_back",
        "goal_updated",
        "goal_removed",
    }
)
STEP_CALLBACKS: frozenset[str] = frozenset(
    {"step_started", "step_completed", "step_failed", "step_skipped"}
)
CALLBACK_NAMES: frozenset[str] = GOAL_CALLBACKS | STEP_CALLBACKS

SENT_BACK = "sent back"
"""How the reason of a verification's send-back starts (``goal_sent_back``)."""

_STATUS_CALLBACK = {
    "active": "goal_activated",
    "completed": "goal_completed",
    "failed": "goal_failed",
    "suspended": "goal_suspended",
    "cancelled": "goal_cancelled",
    "blocked": "goal_blocked",
    "validated": "goal_validated",
    "awaiting_clarification": "goal_awaiting_clarification",
}
_OTHER_CALLBACK: dict[type[EventBase], str] = {
    GoalCreated: "goal_created",
    GoalUpdated: "goal_updated",
    GoalRemoved: "goal_removed",
    StepStarted: "step_started",
    StepCompleted: "step_completed",
    StepFailed: "step_failed",
    StepSkipped: "step_skipped",
}

_WITH_REASON = frozenset({"goal_cancelled", "goal_suspended", "goal_failed"})
"""Callbacks the seed calls as ``fn(goal_id, reason)`` (the error for goal_failed)."""

Call = tuple[str, Callable[..., Any], tuple[str, ...]]


def positional_arity(fn: Callable[..., Any]) -> int:
    """How many positional arguments ``fn`` takes (a large number for ``*args``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: give it everything
        return 99
    count = 0
    for param in params:
        if param.kind is param.VAR_POSITIONAL:
            return 99
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def _move_callback(event: GoalStatusChanged) -> str:
    if event.to_status != "pending":
        return _STATUS_CALLBACK[event.to_status]
    if event.will_retry:
        return "goal_failed"
    if event.from_status == "blocked":
        return "goal_unblocked"
    if event.from_status == "active" and event.reason.startswith(SENT_BACK):
        return "goal_sent_back"
    return "goal_resumed"


def callback_of(event: EventBase) -> tuple[str, tuple[str, ...]] | None:
    """The callback name an event stands for and its arguments, or None."""
    if not event.goal_id:
        return None
    if isinstance(event, GoalStatusChanged):
        moved = _move_callback(event)
        if moved in _WITH_REASON:
            why = event.error if moved == "goal_failed" else event.reason
            return moved, (event.goal_id, why)
        return moved, (event.goal_id,)
    name = _OTHER_CALLBACK.get(type(event))
    if name is None:
        return None
    if name in STEP_CALLBACKS:
        return name, (event.goal_id, event.step_id or "")
    return name, (event.goal_id,)


class Observers:
    """The ``on(...)`` registrations of one engine, each a listener on its bus."""

    def __init__(self, bus: EventBus) -> None:
        self._bus = bus
        self._collecting: list[Call] | None = None
        self._tasks: set[asyncio.Future[Any]] = set()
        self._removers: dict[tuple[str, Callable[..., Any]], list[Callable[[], None]]] = {}

    def on(self, name: str, fn: Callable[..., Any]) -> Callable[[], None]:
        if name not in CALLBACK_NAMES:
            known = ", ".join(sorted(CALLBACK_NAMES))
            raise ValueError(f"unknown callback {name!r}; one of {known}")
        arity = max(1, positional_arity(fn))

        def listener(event: EventBase) -> None:
            matched = callback_of(event)
            if matched is None or matched[0] != name:
                return
            call = (name, fn, matched[1][:arity])
            if self._collecting is not None:
                self._collecting.append(call)
            else:
                self._call_now(call)

        remove_listener = self._bus.add_listener(listener)
        key = (name, fn)

        def remove() -> None:
            remove_listener()
            removers = self._removers.get(key, [])
            if remove in removers:
                removers.remove(remove)
            if not removers:
                self._removers.pop(key, None)

        self._removers.setdefault(key, []).append(remove)
        return remove

    def off(self, name: str, fn: Callable[..., Any]) -> None:
        """Remove every registration of ``fn`` for ``name`` (the seed's ``off``); one that
        was never made is ignored."""
        for remove in list(self._removers.get((name, fn), [])):
            remove()

    @contextmanager
    def collect(self) -> Iterator[list[Call]]:
        """Hold the calls matched while the writer publishes (it holds the lock)."""
        calls: list[Call] = []
        self._collecting = calls
        try:
            yield calls
        finally:
            self._collecting = None

    async def run(self, calls: list[Call]) -> None:
        for name, fn, args in calls:
            try:
                result = fn(*args)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("callback %s failed for %s", name, args)

    def _call_now(self, call: Call) -> None:
        name, fn, args = call
        try:
            result = fn(*args)
        except Exception:
            log.exception("callback %s failed for %s", name, args)
            return
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
