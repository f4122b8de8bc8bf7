"""The unit of work: the engine's in-memory state, and the one write path that changes it.

Reads are synchronous and come from ``EngineState`` (the UI reads goals between frames).
Every write goes through ``UnitOfWork.write()``: under one asyncio.Lock it stages new
frozen snapshots and the SQL that stores them in a ``Change``, runs that SQL as one
transaction on the database thread, and only then swaps the snapshots into memory and
publishes the events; the ``on(...)`` callbacks those events matched run after the lock is
released. A failed write leaves memory and disk as they were; a cancelled caller still
sees its committed change applied.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from soothe.engine.bus import EventBus
from soothe.engine.context.backend import StoreBackend
from soothe.engine.context.errors import ContextError, GoalNotFound
from soothe.engine.context.graph import GoalGraph
from soothe.engine.context.ledger import Ledger
from soothe.engine.context.models import EvidenceEntry, GoalNode, StepNode, ThreadRecord
from soothe.engine.context.observers import Observers
from soothe.engine.context.spend import SpendMeter
from soothe.engine.context.steps import StepDAG
from soothe.engine.context.store import UPSERT_STEP, Loaded, Op, goal_ops, step_row
from soothe.engine.events import EventBase
from soothe.engine.scope import Scope

log = logging.getLogger(__name__)


@dataclass
class EngineState:
    """Everything the engine holds in memory; replaced piecewise by committed changes."""

    ledger: Ledger
    graph: GoalGraph = field(default_factory=GoalGraph)
    dags: dict[str, StepDAG] = field(default_factory=dict)
    evidence: dict[str, list[EvidenceEntry]] = field(default_factory=dict)
    threads: dict[str, ThreadRecord] = field(default_factory=dict)
    goal_counter: int = 0
    next_message_id: int = 1
    spend: SpendMeter = field(default_factory=SpendMeter)
    """What running goals spent and is not stored yet (``spend.py``)."""

    def restore(self, loaded: Loaded) -> None:
        for goal in loaded.goals:
            dag = StepDAG(goal.id)
            goal._dag = dag
            self.dags[goal.id] = dag
            self.graph.put(goal)
        for step in loaded.steps:
            if step.goal_id in self.dags:
                self.dags[step.goal_id]._put(step)
        for entry in loaded.evidence:
            self.evidence.setdefault(entry.goal_id, []).append(entry)
        for ledger_entry in loaded.ledger:
            self.ledger.add(ledger_entry)
        for thread in loaded.threads:
            self.threads[thread.id] = thread
        self.next_message_id = loaded.last_message_id + 1
        if loaded.next_ledger_id:
            self.ledger.next_id = loaded.next_ledger_id
        counter = int(loaded.meta.get("goal_counter", "0"))
        self.goal_counter = max([counter, *(g.seq for g in loaded.goals)])

    def goal(self, goal_id: str) -> GoalNode:
        goal = self.graph.goals.get(goal_id)
        if goal is None:
            raise GoalNotFound(goal_id)
        return goal


class Change:
    """One write in the making: staged snapshots, the SQL storing them, and the events."""

    def __init__(self, state: EngineState) -> None:
        self.state = state
        self.now = time.time()
        self.ops: list[Op] = []
        self.goals: dict[str, GoalNode | None] = {}
        self.dags: dict[str, StepDAG] = {}
        self.after: list[Callable[[], None]] = []
        self.events: list[EventBase] = []

    def find(self, goal_id: str) -> GoalNode | None:
        if goal_id in self.goals:
            return self.goals[goal_id]
        return self.state.graph.goals.get(goal_id)

    def goal(self, goal_id: str) -> GoalNode:
        goal = self.find(goal_id)
        if goal is None:
            raise GoalNotFound(goal_id)
        return goal

    def scope(self, goal_id: str, step_id: str | None = None) -> Scope:
        """Where an event about this goal (or one of its steps) belongs."""
        goal = self.goal(goal_id)
        return Scope(thread_id=goal.thread_id, loop_id=goal.loop_id, goal_id=goal_id).at(
            step_id=step_id
        )

    def stage(self, new: GoalNode) -> GoalNode:
        self.ops.extend(goal_ops(self.find(new.id), new))
        self.goals[new.id] = new
        return new

    def update(self, goal_id: str, **fields: Any) -> GoalNode:
        fields.setdefault("updated_at", self.now)
        return self.stage(self.goal(goal_id).model_copy(update=fields))

    def remove(self, goal_id: str) -> None:
        self.ops.extend(goal_ops(self.goal(goal_id), None))
        self.goals[goal_id] = None

    def dag(self, goal_id: str) -> StepDAG:
        goal = self.goal(goal_id)
        if goal_id not in self.dags:
            base = self.state.dags.get(goal_id) or goal._dag or StepDAG(goal_id)
            self.dags[goal_id] = base._clone()
        return self.dags[goal_id]

    def put_step(self, step: StepNode) -> StepNode:
        self.dag(step.goal_id)._put(step)
        self.ops.append((UPSERT_STEP, step_row(step)))
        return step

    def emit(self, event: EventBase) -> None:
        self.events.append(event)


class UnitOfWork:
    """The write path: one lock, one transaction per change, then memory, then events."""

    def __init__(self, store: StoreBackend, bus: EventBus, state: EngineState) -> None:
        self.store = store
        self.bus = bus
        self.state = state
        self.observers = Observers(bus)
        self.lock = asyncio.Lock()
        self.closed = False

    def check_open(self) -> None:
        if self.closed:
            raise ContextError("the ContextEngine is closed")

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Change]:
        self.check_open()
        async with self.lock:
            self.check_open()
            change = Change(self.state)
            yield change
            cancelled = await self._commit(change)
            self._apply(change)
            with self.observers.collect() as calls:
                for event in change.events:
                    try:
                        self.bus.publish(event)
                    except Exception:
                        log.exception("event listener failed on %s", type(event).__name__)
        await self.observers.run(calls)
        if cancelled:
            raise asyncio.CancelledError

    async def _commit(self, change: Change) -> bool:
        """Write the change; a cancelled caller waits for the commit to land (True)."""
        if not change.ops:
            return False
        task = asyncio.ensure_future(self.store.write(change.ops))
        cancelled = False
        while True:
            try:
                await asyncio.shield(task)
                return cancelled
            except asyncio.CancelledError:
                if task.cancelled():
                    raise
                cancelled = True

    def _apply(self, change: Change) -> None:
        state = self.state
        for goal_id, goal in change.goals.items():
            if goal is None:
                state.graph.drop(goal_id)
                state.dags.pop(goal_id, None)
                state.evidence.pop(goal_id, None)
                state.ledger.drop_goal(goal_id)
                continue
            if goal_id not in state.dags:
                assert goal._dag is not None
                state.dags[goal_id] = goal._dag
            state.graph.put(goal)
        for goal_id, dag in change.dags.items():
            if goal_id in state.dags:
                state.dags[goal_id]._adopt(dag)
        for fn in change.after:
            fn()

    async def close(self) -> None:
        if self.closed:
            return
        async with self.lock:
            self.closed = True
            await self.store.close()
