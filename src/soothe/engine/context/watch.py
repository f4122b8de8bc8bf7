"""Following a shared store: what other processes changed, as the usual goal events.

On PostgreSQL, workers on other machines run goals of the store a TUI watches. The TUI
polls (``watch_store``, every ``POLL_S`` seconds): ``ContextEngine.refresh()`` rereads the
store, ``goal_events`` compares the goals before and after, and the differences are
published on the engine's bus as ``GoalCreated`` / ``GoalStatusChanged`` /
``GoalUpdated`` / ``GoalRemoved``, so the screen follows them on its one path (the bus),
as it follows this process's own changes. Polling, not LISTEN/NOTIFY: one read per
interval whatever the number of writers, and nothing to hold open but the pool.

Events replayed this way are marked (``replayed``): the transcript recorder skips them,
the process that made the change has recorded it already.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Mapping
from typing import Any

from soothe.engine.context.models import GoalNode
from soothe.engine.events import (
    EventBase,
    GoalCreated,
    GoalRemoved,
    GoalStatusChanged,
    GoalUpdated,
)
from soothe.engine.scope import Scope, ScopeFields

log = logging.getLogger(__name__)

POLL_S = 2.0

_REPLAYED: set[int] = set()
_ORDER: deque[int] = deque()
_KEEP = 10_000


_PUBLISHING: list[EventBase] = []


def replayed(event: EventBase) -> bool:
    """Whether ``event`` came from another process's change (published by a watcher)."""
    return any(e is event for e in _PUBLISHING) or event.seq in _REPLAYED


def _mark(event: EventBase) -> None:
    """After ``bus.publish`` (which stamps ``seq``): for listeners that look later."""
    _REPLAYED.add(event.seq)
    _ORDER.append(event.seq)
    while len(_ORDER) > _KEEP:
        _REPLAYED.discard(_ORDER.popleft())


def _scope(goal: GoalNode) -> ScopeFields:
    return Scope(thread_id=goal.thread_id, loop_id=goal.loop_id, goal_id=goal.id).fields()


def goal_events(before: Mapping[str, GoalNode], after: Mapping[str, GoalNode]) -> list[EventBase]:
    """The events that take a screen showing ``before`` to ``after`` (one per change)."""
    out: list[EventBase] = []
    for goal_id, new in after.items():
        old = before.get(goal_id)
        if old is None:
            out.append(
                GoalCreated(
                    **_scope(new),
                    description=new.description,
                    priority=new.priority,
                    parent_id=new.parent_id,
                    depends_on=list(new.depends_on),
                    source=new.source,
                )
            )
            if new.status != "pending":
                out.append(
                    GoalStatusChanged(
                        **_scope(new),
                        from_status="pending",
                        to_status=new.status,
                        findings=new.findings if new.status == "completed" else "",
                        error=new.error if new.status == "failed" else "",
                    )
                )
            continue
        if new.status != old.status:
            out.append(
                GoalStatusChanged(
                    **_scope(new),
                    from_status=old.status,
                    to_status=new.status,
                    findings=new.findings if new.status == "completed" else "",
                    error=new.error if new.status in ("failed", "pending") else "",
                    will_retry=new.status == "pending" and new.retry_count > old.retry_count,
                )
            )
        updated: dict[str, Any] = {}
        if new.priority != old.priority:
            updated["priority"] = new.priority
        for kind in ("depends_on", "informs", "conflicts_with"):
            if getattr(new, kind) != getattr(old, kind):
                updated[kind] = list(getattr(new, kind))
        if new.findings != old.findings and new.status == old.status:
            updated["findings"] = new.findings
        if updated:
            out.append(GoalUpdated(**_scope(new), **updated))
    for goal_id, old in before.items():
        if goal_id not in after:
            out.append(GoalRemoved(**_scope(old)))
    return out


async def poll(context: Any, bus: Any) -> list[EventBase]:
    """Reread a shared store once; publish (and return) what changed since the last read."""
    if not context.shared:
        return []
    before = await context.refresh()  # taken under the write lock: none of our own
    events = goal_events(before, {g.id: g for g in context.list_goals()})
    for event in events:
        _PUBLISHING.append(event)  # the listeners run inside publish()
        try:
            bus.publish(event)
        except Exception:
            log.exception("event listener failed on %s", type(event).__name__)
        finally:
            _PUBLISHING.pop()
            _mark(event)
    return events


async def watch_store(context: Any, bus: Any, interval_s: float = POLL_S) -> None:
    """``poll`` every ``interval_s`` seconds until cancelled (a read that fails is logged
    and tried again at the next tick)."""
    while True:
        await asyncio.sleep(interval_s)
        try:
            await poll(context, bus)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("reading the shared store failed", exc_info=True)
