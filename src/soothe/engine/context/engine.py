"""ContextEngine: the one source of truth for goals, steps, evidence, ledger and threads.

Reads are synchronous and come from memory (the UI reads goals between frames). Every
write goes through ``_write()``: under one asyncio.Lock it stages new frozen snapshots and
the SQL that stores them, runs that SQL as one transaction on the aiosqlite worker thread,
and only then swaps the snapshots into memory, publishes the events and, after releasing the
lock, runs the ``on(...)`` callbacks. A failed write leaves memory and disk as they were; a
cancelled caller still sees its committed change applied.

Every goal status move goes through ``_move`` (public: ``transition``), which checks the
lifecycle table in ``lifecycle.py`` plus the guards that need the graph.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from soothe.engine.bus import EventBus
from soothe.engine.config import ProjectionSettings
from soothe.engine.context.errors import (
    ContextError,
    CycleError,
    DepthLimitExceeded,
    GoalInUse,
    GoalNotFound,
    GoalNotReady,
    IllegalStepTransition,
    IllegalTransition,
    InvalidGoal,
    StepNotFound,
    StepNotReady,
    ThreadNotFound,
)
from soothe.engine.context.graph import MAX_GOAL_DEPTH, GoalGraph
from soothe.engine.context.ledger import Ledger
from soothe.engine.context.lifecycle import (
    check_goal_move,
    check_step_move,
    goal_move_allowed,
)
from soothe.engine.context.models import (
    TERMINAL_STATES,
    EvidenceEntry,
    GoalNode,
    GoalSpec,
    LedgerEntry,
    StepNode,
    StepSpec,
    ThreadMessage,
    ThreadRecord,
)
from soothe.engine.context.planning import PlanningFacade
from soothe.engine.context.projection import ContextBundle, build_bundle, clip
from soothe.engine.context.steps import StepDAG, UnknownPolicy
from soothe.engine.context.store import (
    INSERT_EVIDENCE,
    INSERT_LEDGER,
    SET_META,
    UPSERT_STEP,
    Op,
    Store,
    evidence_row,
    goal_ops,
    ledger_row,
    step_row,
)
from soothe.engine.events import (
    EventBase,
    EvidenceAdded,
    GoalCreated,
    GoalRemoved,
    GoalStatus,
    GoalStatusChanged,
    GoalUpdated,
    StepCompleted,
    StepFailed,
    StepSkipped,
    StepStarted,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

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
_DEFAULT = "<by status>"
RESUMABLE = frozenset({"suspended", "blocked", "awaiting_clarification", "cancelled"})


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _goal_spec(data: GoalSpec | Mapping[str, Any]) -> GoalSpec:
    if isinstance(data, GoalSpec):
        return data
    try:
        return GoalSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InvalidGoal(f"{'.'.join(map(str, err['loc']))}: {err['msg']}") from None


class _Change:
    """One write in the making: staged snapshots, the SQL storing them, and what to announce."""

    def __init__(self, engine: ContextEngine) -> None:
        self._engine = engine
        self.now = time.time()
        self.ops: list[Op] = []
        self.goals: dict[str, GoalNode | None] = {}
        self.dags: dict[str, StepDAG] = {}
        self.after: list[Callable[[], None]] = []
        self.events: list[EventBase] = []
        self.callbacks: list[tuple[str, tuple[str, ...]]] = []

    def find(self, goal_id: str) -> GoalNode | None:
        if goal_id in self.goals:
            return self.goals[goal_id]
        return self._engine._graph.goals.get(goal_id)

    def goal(self, goal_id: str) -> GoalNode:
        goal = self.find(goal_id)
        if goal is None:
            raise GoalNotFound(goal_id)
        return goal

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
            base = self._engine._dags.get(goal_id) or goal._dag or StepDAG(goal_id)
            self.dags[goal_id] = base._clone()
        return self.dags[goal_id]

    def put_step(self, step: StepNode) -> StepNode:
        self.dag(step.goal_id)._put(step)
        self.ops.append((UPSERT_STEP, step_row(step)))
        return step

    def emit(self, event: EventBase) -> None:
        self.events.append(event)

    def notify(self, name: str, *args: str) -> None:
        self.callbacks.append((name, args))


class ContextEngine:
    """Goals, their step DAGs, evidence, the ledger and threads, persisted in one SQLite file.

    Returned models are frozen snapshots; ask again (``get_goal``) for the current state.
    """

    def __init__(
        self,
        store: Store,
        bus: EventBus | None = None,
        projection: ProjectionSettings | None = None,
        max_parallel_goals: int = 2,
        ledger_max_entries: int = 0,
    ) -> None:
        self._store = store
        self.bus = bus if bus is not None else EventBus()
        self.projection_settings = projection or ProjectionSettings()
        self._graph = GoalGraph()
        self._dags: dict[str, StepDAG] = {}
        self._evidence: dict[str, list[EvidenceEntry]] = {}
        self._ledger = Ledger(ledger_max_entries)
        self._threads: dict[str, ThreadRecord] = {}
        self._goal_counter = 0
        self._next_message_id = 1
        self._lock = asyncio.Lock()
        self._callbacks: dict[str, list[Callable[..., Any]]] = {}
        self._closed = False
        self.planning = PlanningFacade(self, max_parallel_goals)

    # --- opening and closing -----------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: str | Path,
        bus: EventBus | None = None,
        projection: ProjectionSettings | None = None,
        max_parallel_goals: int = 2,
        ledger_max_entries: int = 0,
    ) -> ContextEngine:
        """Open (or create) the database at ``path``; ``":memory:"`` is for tests only."""
        store = await Store.open(path)
        try:
            engine = cls(store, bus, projection, max_parallel_goals, ledger_max_entries)
            loaded = await store.load(ledger_max_entries)
            engine._restore(loaded)
        except BaseException:
            await store.close()
            raise
        return engine

    def _restore(self, loaded: Any) -> None:
        for goal in loaded.goals:
            dag = StepDAG(goal.id)
            goal._dag = dag
            self._dags[goal.id] = dag
            self._graph.put(goal)
        for step in loaded.steps:
            if step.goal_id in self._dags:
                self._dags[step.goal_id]._put(step)
        for entry in loaded.evidence:
            self._evidence.setdefault(entry.goal_id, []).append(entry)
        for entry in loaded.ledger:
            self._ledger.add(entry)
        for thread in loaded.threads:
            self._threads[thread.id] = thread
        self._next_message_id = loaded.last_message_id + 1
        counter = int(loaded.meta.get("goal_counter", "0"))
        self._goal_counter = max([counter, *(g.seq for g in loaded.goals)])

    async def close(self) -> None:
        if self._closed:
            return
        async with self._lock:
            self._closed = True
            await self._store.close()

    async def __aenter__(self) -> ContextEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def db(self) -> Any:
        """The aiosqlite connection, for modules keeping their own tables in this file.

        Read through it freely. Write through ``run_in_transaction`` so writes stay
        serialised with the engine's own; keep your schema version with ``migrate_module``
        (``PRAGMA user_version`` belongs to the ContextEngine).
        """
        return self._store.db

    @property
    def path(self) -> str:
        return self._store.path

    async def run_in_transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(sqlite3_connection)`` atomically on the database thread (other modules)."""
        async with self._lock:
            self._check_open()
            return await self._store.run(fn)

    async def migrate_module(self, module: str, migrations: Sequence[Sequence[str]]) -> int:
        """Apply another module's forward migrations (lists of SQL statements); returns the
        module's schema version. Versions live in the ``module_versions`` table."""
        async with self._lock:
            self._check_open()
            return await self._store.migrate_module(module, migrations)

    def _check_open(self) -> None:
        if self._closed:
            raise ContextError("the ContextEngine is closed")

    # --- the write path ----------------------------------------------------------------

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[_Change]:
        self._check_open()
        async with self._lock:
            self._check_open()
            change = _Change(self)
            yield change
            cancelled = await self._commit(change)
            self._apply(change)
            for event in change.events:
                try:
                    self.bus.publish(event)
                except Exception:
                    log.exception("event listener failed on %s", event.type)
        await self._run_callbacks(change.callbacks)
        if cancelled:
            raise asyncio.CancelledError

    async def _commit(self, change: _Change) -> bool:
        """Write the change; a cancelled caller waits for the commit to land (True)."""
        if not change.ops:
            return False
        task = asyncio.ensure_future(self._store.write(change.ops))
        cancelled = False
        while True:
            try:
                await asyncio.shield(task)
                return cancelled
            except asyncio.CancelledError:
                if task.cancelled():
                    raise
                cancelled = True

    def _apply(self, change: _Change) -> None:
        for goal_id, goal in change.goals.items():
            if goal is None:
                self._graph.drop(goal_id)
                self._dags.pop(goal_id, None)
                self._evidence.pop(goal_id, None)
                self._ledger.drop_goal(goal_id)
                continue
            if goal_id not in self._dags:
                assert goal._dag is not None
                self._dags[goal_id] = goal._dag
            self._graph.put(goal)
        for goal_id, dag in change.dags.items():
            if goal_id in self._dags:
                self._dags[goal_id]._adopt(dag)
        for fn in change.after:
            fn()

    async def _run_callbacks(self, calls: Sequence[tuple[str, tuple[str, ...]]]) -> None:
        for name, args in calls:
            for fn in list(self._callbacks.get(name, ())):
                try:
                    result = fn(*args)
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("callback %s failed for %s", name, args)

    def on(self, name: str, fn: Callable[..., Any]) -> Callable[[], None]:
        """Call ``fn(goal_id)`` (goal_*) or ``fn(goal_id, step_id)`` (step_*) after each such
        change has been committed. ``fn`` may be sync or async. Returns a remover."""
        if name not in CALLBACK_NAMES:
            known = ", ".join(sorted(CALLBACK_NAMES))
            raise ValueError(f"unknown callback {name!r}; one of {known}")
        self._callbacks.setdefault(name, []).append(fn)

        def remove() -> None:
            fns = self._callbacks.get(name, [])
            if fn in fns:
                fns.remove(fn)

        return remove

    # --- reading goals -----------------------------------------------------------------

    def get_goal(self, goal_id: str) -> GoalNode:
        goal = self._graph.goals.get(goal_id)
        if goal is None:
            raise GoalNotFound(goal_id)
        return goal

    def has_goal(self, goal_id: str) -> bool:
        return goal_id in self._graph.goals

    def list_goals(
        self,
        *,
        status: str | Iterable[str] | None = None,
        thread_id: str | None = None,
    ) -> list[GoalNode]:
        """Goals in creation order, optionally of some statuses and/or one thread."""
        graph = self._graph
        if status is None:
            goals: Iterable[GoalNode] = graph.goals.values()
        else:
            wanted = [status] if isinstance(status, str) else list(status)
            goals = sorted(
                (graph.goals[gid] for s in wanted for gid in graph.by_status.get(s, {})),
                key=lambda g: g.seq,
            )
        if thread_id is not None:
            return [g for g in goals if g.thread_id == thread_id]
        return list(goals)

    def ready_goals(self) -> list[GoalNode]:
        """Pending goals with every dependency completed and no conflicting goal active,
        highest priority first, then oldest."""
        return self._graph.ready()

    def lineage(self, goal_id: str) -> list[GoalNode]:
        """Ancestors of a goal, nearest first."""
        self.get_goal(goal_id)
        return [self._graph.goals[g] for g in self._graph.ancestors(goal_id)]

    def project(self, goal_id: str, phases: Sequence[str] | None = None) -> ContextBundle:
        """A bounded view of the goal for a prompt (see ``projection.py`` for the bounds)."""
        self.get_goal(goal_id)
        return build_bundle(
            self._graph, self._dags, self._ledger, goal_id, self.projection_settings, phases
        )

    # --- creating goals ----------------------------------------------------------------

    async def create_goal(
        self,
        description: str,
        *,
        priority: int = 50,
        depends_on: Sequence[str] = (),
        informs: Sequence[str] = (),
        conflicts_with: Sequence[str] = (),
        parent_id: str | None = None,
        source: str = "user",
        thread_id: str = "",
        topic: str = "",
        max_retries: int = 2,
    ) -> GoalNode:
        spec = _goal_spec(
            {
                "description": description,
                "priority": priority,
                "depends_on": list(depends_on),
                "informs": list(informs),
                "conflicts_with": list(conflicts_with),
                "parent_id": parent_id,
                "source": source,
                "thread_id": thread_id,
                "topic": topic,
                "max_retries": max_retries,
            }
        )
        return (await self.create_goals([spec]))[0]

    async def create_goals(self, specs: Sequence[GoalSpec | Mapping[str, Any]]) -> list[GoalNode]:
        """Create many goals in ONE transaction. A spec may point at an earlier spec of the
        same batch by its ``ref``; otherwise edges name existing goal ids."""
        parsed = [_goal_spec(s) for s in specs]
        async with self._write() as change:
            ids = self._stage_new_goals(change, parsed)
        return [self._graph.goals[gid] for gid in ids]

    def _depth_in(self, change: _Change, goal_id: str) -> int:
        depth = 1
        goal = change.find(goal_id)
        seen = {goal_id}
        while goal is not None and goal.parent_id and goal.parent_id not in seen:
            seen.add(goal.parent_id)
            depth += 1
            goal = change.find(goal.parent_id)
        return depth

    def _stage_new_goals(self, change: _Change, specs: Sequence[GoalSpec]) -> list[str]:
        refs: dict[str, str] = {}
        counter = self._goal_counter
        now = change.now
        ids: list[str] = []
        for spec in specs:
            counter += 1
            goal_id = f"G{counter}"

            def resolve(name: str) -> str:
                if name in refs:
                    return refs[name]
                if change.find(name) is None:
                    raise GoalNotFound(name)
                return name

            parent = resolve(spec.parent_id) if spec.parent_id else None
            if parent is not None:
                depth = self._depth_in(change, parent) + 1
                if depth > MAX_GOAL_DEPTH:
                    raise DepthLimitExceeded(goal_id, depth, MAX_GOAL_DEPTH)
            goal = GoalNode(
                id=goal_id,
                seq=counter,
                description=spec.description,
                priority=spec.priority,
                parent_id=parent,
                depends_on=_dedupe(resolve(x) for x in spec.depends_on),
                informs=_dedupe(resolve(x) for x in spec.informs),
                conflicts_with=_dedupe(resolve(x) for x in spec.conflicts_with),
                source=spec.source,
                thread_id=spec.thread_id,
                topic=spec.topic,
                max_retries=spec.max_retries,
                created_at=now,
                updated_at=now,
            )
            goal._dag = StepDAG(goal_id)
            change.stage(goal)
            for other in goal.conflicts_with:
                partner = change.goal(other)
                change.update(other, conflicts_with=(*partner.conflicts_with, goal_id))
                self._updated(change, other, conflicts_with=True)
            if spec.ref:
                if spec.ref in refs:
                    raise InvalidGoal(f"ref {spec.ref!r} used twice in one batch")
                refs[spec.ref] = goal_id
            change.emit(
                GoalCreated(
                    thread_id=goal.thread_id,
                    goal_id=goal_id,
                    description=goal.description,
                    priority=goal.priority,
                    parent_id=parent,
                    depends_on=list(goal.depends_on),
                    source=goal.source,
                )
            )
            change.notify("goal_created", goal_id)
            ids.append(goal_id)
        change.ops.append((SET_META, ("goal_counter", str(counter))))
        change.after.append(lambda: setattr(self, "_goal_counter", counter))
        return ids

    # --- the transition function -------------------------------------------------------

    def _not_ready_reason(self, change: _Change, goal: GoalNode) -> str:
        waiting = [d for d in goal.depends_on if change.goal(d).status != "completed"]
        if waiting:
            return "waiting on " + ", ".join(waiting)
        running = [c for c in goal.conflicts_with if change.goal(c).status == "active"]
        if running:
            return "conflicting goal active: " + ", ".join(running)
        return ""

    def _move(
        self,
        change: _Change,
        goal_id: str,
        to: str,
        *,
        reason: str = "",
        updates: Mapping[str, Any] | None = None,
        notify: str | None = _DEFAULT,
        user_retry: bool = False,
        will_retry: bool = False,
    ) -> GoalNode:
        """THE goal status transition. Checks the table and the graph guards, stages the new
        snapshot, and queues GoalStatusChanged plus the specific event and callback."""
        goal = change.goal(goal_id)
        if not check_goal_move(goal_id, goal.status, to):
            return goal
        if to == "active":
            why = self._not_ready_reason(change, goal)
            if why:
                raise GoalNotReady(goal_id, why)
        fields: dict[str, Any] = {"status": to, "updated_at": change.now}
        if goal.status == "failed" and to == "pending":
            if goal.retry_count >= goal.max_retries and not user_retry:
                raise IllegalTransition(
                    goal_id,
                    "failed",
                    "pending",
                    f"no retries left ({goal.retry_count}/{goal.max_retries})",
                )
            fields["retry_count"] = goal.retry_count + 1
        if to == "active":
            fields["started_at"] = goal.started_at or change.now
        if to in TERMINAL_STATES:
            fields["finished_at"] = change.now
        if to == "pending":
            fields["loop_id"] = None
            fields["finished_at"] = None
        fields.update(updates or {})
        new = change.stage(goal.model_copy(update=fields))
        loop_id = new.loop_id or goal.loop_id
        base = {"thread_id": new.thread_id, "goal_id": goal_id, "loop_id": loop_id}
        change.emit(
            GoalStatusChanged(
                **base,
                from_status=goal.status,
                to_status=new.status,
                reason=reason,
                findings=new.findings if to == "completed" else "",
                error=(new.error or reason) if to == "failed" or will_retry else "",
                will_retry=will_retry,
            )
        )
        if notify == _DEFAULT:
            if to == "pending":
                notify = "goal_unblocked" if goal.status == "blocked" else "goal_resumed"
            else:
                notify = _STATUS_CALLBACK[to]
        if notify:
            change.notify(notify, goal_id)
        return new

    async def transition(self, goal_id: str, to: GoalStatus, *, reason: str = "") -> GoalNode:
        """Move a goal to ``to``. A move into the current state is a no-op; a move the table
        forbids raises IllegalTransition naming goal, from-state and to-state."""
        async with self._write() as change:
            self._move(change, goal_id, to, reason=reason)
        return self.get_goal(goal_id)

    async def activate_goal(self, goal_id: str, loop_id: str | None = None) -> GoalNode:
        """pending -> active; raises GoalNotReady if a dependency is open or a conflict runs."""
        async with self._write() as change:
            self._move(change, goal_id, "active", updates={"loop_id": loop_id})
        return self.get_goal(goal_id)

    async def claim_goal(self, goal_id: str, loop_id: str | None = None) -> GoalNode | None:
        """Activate the goal if it is ready right now, else return None (checked atomically)."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            if goal.status != "pending" or self._not_ready_reason(change, goal):
                return None
            self._move(change, goal_id, "active", updates={"loop_id": loop_id})
        return self.get_goal(goal_id)

    async def complete_goal(self, goal_id: str, findings: str = "", report: str = "") -> GoalNode:
        """-> completed. Non-empty ``findings``/``report`` replace the stored ones (use
        ``merge_findings`` to accumulate)."""
        updates: dict[str, Any] = {}
        if findings:
            updates["findings"] = findings
        if report:
            updates["report"] = report
        async with self._write() as change:
            self._move(change, goal_id, "completed", updates=updates)
        return self.get_goal(goal_id)

    async def fail_goal(self, goal_id: str, error: str = "", allow_retry: bool = True) -> GoalNode:
        """Record a failure. With ``allow_retry`` and retries left (retry_count < max_retries)
        the goal goes back to pending (retry_count + 1); otherwise it ends failed."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            if goal.status == "failed":
                return goal
            if goal.status in TERMINAL_STATES:  # completed or cancelled: never resurrected
                check_goal_move(goal_id, goal.status, "failed")
            if allow_retry and goal.retry_count < goal.max_retries:
                attempt = f"retry {goal.retry_count + 1}/{goal.max_retries}"
                reason = f"{attempt}: {error}" if error else attempt
                if goal_move_allowed(goal.status, "pending"):
                    self._move(
                        change,
                        goal_id,
                        "pending",
                        reason=reason,
                        updates={"retry_count": goal.retry_count + 1, "error": error},
                        notify="goal_failed",
                        will_retry=True,
                    )
                else:  # e.g. validated or pending: through failed, which allows the retry
                    self._move(
                        change,
                        goal_id,
                        "failed",
                        reason=error,
                        updates={"error": error},
                        will_retry=True,
                    )
                    self._move(change, goal_id, "pending", reason=reason, notify=None)
            else:
                self._move(change, goal_id, "failed", reason=error, updates={"error": error})
        return self.get_goal(goal_id)

    async def suspend_goal(self, goal_id: str, reason: str = "") -> GoalNode:
        return await self.transition(goal_id, "suspended", reason=reason)

    async def block_goal(self, goal_id: str, reason: str = "") -> GoalNode:
        return await self.transition(goal_id, "blocked", reason=reason)

    async def unblock_goal(self, goal_id: str) -> GoalNode:
        """blocked -> pending (a goal already pending is left alone)."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            if goal.status not in ("blocked", "pending"):
                raise IllegalTransition(goal_id, goal.status, "pending", "unblock needs blocked")
            self._move(change, goal_id, "pending", reason="unblocked")
        return self.get_goal(goal_id)

    async def await_clarification(self, goal_id: str, reason: str = "") -> GoalNode:
        return await self.transition(goal_id, "awaiting_clarification", reason=reason)

    async def validate_goal(self, goal_id: str, reason: str = "") -> GoalNode:
        return await self.transition(goal_id, "validated", reason=reason)

    async def resume_goal(self, goal_id: str, reason: str = "resumed") -> GoalNode:
        """suspended / blocked / awaiting_clarification / cancelled -> pending. Sub-goals
        cancelled together with this one stay cancelled; resume them one by one."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            if goal.status not in RESUMABLE and goal.status != "pending":
                raise IllegalTransition(goal_id, goal.status, "pending", "not paused or cancelled")
            self._move(change, goal_id, "pending", reason=reason)
        return self.get_goal(goal_id)

    async def retry_goal(self, goal_id: str) -> GoalNode:
        """A retry the user asked for: failed -> pending with a fresh retry budget
        (retry_count reset to 0), even when the automatic retries were used up."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            if goal.status != "failed":
                raise IllegalTransition(goal_id, goal.status, "pending", "only failed goals retry")
            self._move(
                change,
                goal_id,
                "pending",
                reason="retry requested",
                updates={"retry_count": 0},
                user_retry=True,
            )
        return self.get_goal(goal_id)

    async def send_back_goal(self, goal_id: str, reason: str = "") -> GoalNode:
        """Verification rejected an active goal's result: back to pending while
        send_back_count < max_send_backs, else failed."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            if goal.status != "active":
                raise IllegalTransition(goal_id, goal.status, "pending", "only an active goal")
            if goal.send_back_count < goal.max_send_backs:
                self._move(
                    change,
                    goal_id,
                    "pending",
                    reason=f"sent back: {reason}" if reason else "sent back",
                    updates={"send_back_count": goal.send_back_count + 1},
                    notify="goal_sent_back",
                )
            else:
                error = f"sent back {goal.send_back_count} times; {reason}".rstrip("; ")
                self._move(change, goal_id, "failed", reason=error, updates={"error": error})
        return self.get_goal(goal_id)

    async def cancel_goal(self, goal_id: str, reason: str = "") -> GoalNode:
        """-> cancelled, after cancelling every unfinished sub-goal, deepest first."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            if goal.status == "cancelled":
                return goal
            check_goal_move(goal_id, goal.status, "cancelled")
            why = f"parent {goal_id} cancelled" + (f": {reason}" if reason else "")
            for sub in self._graph.descendants_deepest_first(goal_id):
                if change.goal(sub).status not in TERMINAL_STATES:
                    self._move(change, sub, "cancelled", reason=why)
            self._move(change, goal_id, "cancelled", reason=reason)
        return self.get_goal(goal_id)

    async def recover(self, max_crash_attempts: int = 3) -> list[str]:
        """Start-up repair after a crash: goals left active go back to pending
        (attempts_after_crash + 1; past ``max_crash_attempts`` they fail instead), and steps
        left active go back to pending so they run again. Returns the ids moved to pending."""
        moved: list[str] = []
        async with self._write() as change:
            for goal_id in list(self._graph.ids_with_status("active")):
                goal = change.goal(goal_id)
                attempts = goal.attempts_after_crash + 1
                if attempts > max_crash_attempts:
                    error = f"interrupted by {attempts} crashes while active"
                    self._move(
                        change,
                        goal_id,
                        "failed",
                        reason=error,
                        updates={"attempts_after_crash": attempts, "error": error},
                    )
                else:
                    self._move(
                        change,
                        goal_id,
                        "pending",
                        reason="recovered after crash",
                        updates={"attempts_after_crash": attempts},
                    )
                    moved.append(goal_id)
            for dag in self._dags.values():
                for step in dag.steps.values():
                    if step.status == "active":
                        fields = {"status": "pending", "updated_at": change.now}
                        change.put_step(step.model_copy(update=fields))
        return moved

    # --- edges, priority, findings, removal --------------------------------------------

    def _updated(self, change: _Change, goal_id: str, **what: bool) -> None:
        goal = change.goal(goal_id)
        fields: dict[str, Any] = {}
        for name in ("depends_on", "informs", "conflicts_with"):
            if what.get(name):
                fields[name] = list(getattr(goal, name))
        if what.get("priority"):
            fields["priority"] = goal.priority
        if what.get("findings"):
            fields["findings"] = goal.findings
        change.emit(
            GoalUpdated(thread_id=goal.thread_id, goal_id=goal_id, loop_id=goal.loop_id, **fields)
        )
        change.notify("goal_updated", goal_id)

    async def add_dependency(self, goal_id: str, depends_on_id: str) -> GoalNode:
        """``goal_id`` waits for ``depends_on_id``; refused with CycleError if that closes a
        cycle."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            change.goal(depends_on_id)
            if depends_on_id in goal.depends_on:
                return goal
            path = self._graph.dependency_path(depends_on_id, goal_id)
            if path is not None:
                raise CycleError(f"{goal_id} depends_on {depends_on_id}", [goal_id, *path])
            change.update(goal_id, depends_on=(*goal.depends_on, depends_on_id))
            self._updated(change, goal_id, depends_on=True)
        return self.get_goal(goal_id)

    async def remove_dependency(self, goal_id: str, depends_on_id: str) -> GoalNode:
        async with self._write() as change:
            goal = change.goal(goal_id)
            if depends_on_id not in goal.depends_on:
                return goal
            change.update(
                goal_id, depends_on=tuple(d for d in goal.depends_on if d != depends_on_id)
            )
            self._updated(change, goal_id, depends_on=True)
        return self.get_goal(goal_id)

    async def add_informs(self, goal_id: str, informed_id: str) -> GoalNode:
        """``goal_id``'s findings go into ``informed_id``'s projection (a soft edge)."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            change.goal(informed_id)
            if informed_id == goal_id:
                raise InvalidGoal(f"goal {goal_id} cannot inform itself")
            if informed_id in goal.informs:
                return goal
            change.update(goal_id, informs=(*goal.informs, informed_id))
            self._updated(change, goal_id, informs=True)
        return self.get_goal(goal_id)

    async def remove_informs(self, goal_id: str, informed_id: str) -> GoalNode:
        async with self._write() as change:
            goal = change.goal(goal_id)
            if informed_id not in goal.informs:
                return goal
            change.update(goal_id, informs=tuple(i for i in goal.informs if i != informed_id))
            self._updated(change, goal_id, informs=True)
        return self.get_goal(goal_id)

    async def add_conflict(self, goal_id: str, other_id: str) -> GoalNode:
        """The two goals are never active together (stored on both)."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            other = change.goal(other_id)
            if other_id == goal_id:
                raise InvalidGoal(f"goal {goal_id} cannot conflict with itself")
            if other_id in goal.conflicts_with:
                return goal
            if goal.status == "active" and other.status == "active":
                raise InvalidGoal(f"goals {goal_id} and {other_id} are both active")
            change.update(goal_id, conflicts_with=(*goal.conflicts_with, other_id))
            change.update(other_id, conflicts_with=(*other.conflicts_with, goal_id))
            self._updated(change, goal_id, conflicts_with=True)
            self._updated(change, other_id, conflicts_with=True)
        return self.get_goal(goal_id)

    async def remove_conflict(self, goal_id: str, other_id: str) -> GoalNode:
        async with self._write() as change:
            goal = change.goal(goal_id)
            other = change.goal(other_id)
            if other_id not in goal.conflicts_with:
                return goal
            change.update(
                goal_id, conflicts_with=tuple(c for c in goal.conflicts_with if c != other_id)
            )
            change.update(
                other_id, conflicts_with=tuple(c for c in other.conflicts_with if c != goal_id)
            )
            self._updated(change, goal_id, conflicts_with=True)
            self._updated(change, other_id, conflicts_with=True)
        return self.get_goal(goal_id)

    async def set_parent(self, goal_id: str, parent_id: str | None) -> GoalNode:
        """Re-parent a goal; refuses parent cycles and chains deeper than MAX_GOAL_DEPTH."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            if parent_id == goal.parent_id:
                return goal
            if parent_id is not None:
                change.goal(parent_id)
                chain = [parent_id, *self._graph.ancestors(parent_id)]
                if goal_id in chain:
                    cycle = [goal_id, *chain[: chain.index(goal_id) + 1]]
                    raise CycleError(f"{goal_id} parent_id {parent_id}", cycle)
                depth = len(chain) + self._graph.subtree_height(goal_id)
                if depth > MAX_GOAL_DEPTH:
                    raise DepthLimitExceeded(goal_id, depth, MAX_GOAL_DEPTH)
            change.update(goal_id, parent_id=parent_id)
            self._updated(change, goal_id)
        return self.get_goal(goal_id)

    async def set_priority(self, goal_id: str, priority: int) -> GoalNode:
        if not 0 <= priority <= 100:
            raise InvalidGoal(f"goal {goal_id}: priority {priority} is outside 0-100")
        async with self._write() as change:
            goal = change.goal(goal_id)
            if goal.priority == priority:
                return goal
            change.update(goal_id, priority=priority)
            self._updated(change, goal_id, priority=True)
        return self.get_goal(goal_id)

    async def merge_findings(self, goal_id: str, text: str) -> GoalNode:
        """Append findings (a blank line between pieces); text already present is skipped."""
        text = text.strip()
        async with self._write() as change:
            goal = change.goal(goal_id)
            if not text or text in goal.findings:
                return goal
            merged = f"{goal.findings}\n\n{text}" if goal.findings else text
            change.update(goal_id, findings=merged)
            self._updated(change, goal_id, findings=True)
        return self.get_goal(goal_id)

    def _stage_removal(self, change: _Change, goal_id: str, leaving: set[str]) -> None:
        """Remove one goal; soft edges (informs, conflicts) from goals that stay are cut."""
        goal = change.goal(goal_id)
        for src in self._graph.informed_by.get(goal_id, {}):
            if src not in leaving:
                other = change.goal(src)
                change.update(src, informs=tuple(i for i in other.informs if i != goal_id))
                self._updated(change, src, informs=True)
        for partner in goal.conflicts_with:
            if partner not in leaving:
                other = change.goal(partner)
                change.update(
                    partner, conflicts_with=tuple(c for c in other.conflicts_with if c != goal_id)
                )
                self._updated(change, partner, conflicts_with=True)
        change.remove(goal_id)
        change.ops += [
            ("DELETE FROM goal_edges WHERE dst = ?", (goal_id,)),
            ("DELETE FROM steps WHERE goal_id = ?", (goal_id,)),
            ("DELETE FROM evidence WHERE goal_id = ?", (goal_id,)),
            ("DELETE FROM ledger WHERE goal_id = ?", (goal_id,)),
        ]
        change.emit(GoalRemoved(thread_id=goal.thread_id, goal_id=goal_id))
        change.notify("goal_removed", goal_id)

    async def remove_goal(self, goal_id: str) -> None:
        """Delete a goal with its steps, evidence and ledger entries. Refused (GoalInUse)
        while other goals depend on it, it has sub-goals, or it is active."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            dependents = list(self._graph.dependents.get(goal_id, {}))
            if dependents:
                raise GoalInUse(goal_id, "depended on by " + ", ".join(dependents))
            children = list(self._graph.children.get(goal_id, {}))
            if children:
                raise GoalInUse(goal_id, "it has sub-goals " + ", ".join(children))
            if goal.status == "active":
                raise GoalInUse(goal_id, "it is active")
            self._stage_removal(change, goal_id, {goal_id})

    # --- steps -------------------------------------------------------------------------

    def step_dag(self, goal_id: str) -> StepDAG:
        self.get_goal(goal_id)
        return self._dags[goal_id]

    def get_step(self, goal_id: str, step_id: str) -> StepNode:
        step = self.step_dag(goal_id).get(step_id)
        if step is None:
            raise StepNotFound(goal_id, step_id)
        return step

    async def set_plan(
        self,
        goal_id: str,
        steps: Sequence[StepSpec | Mapping[str, Any]],
        iteration: int,
        *,
        unknown_deps: UnknownPolicy = "raise",
    ) -> list[StepNode]:
        """Install a (re)plan; returns the plan's nodes in the order given.

        Completed steps keep their results (a spec reusing a completed id counts as done);
        pending, failed and skipped steps of older plans are replaced; a running step is
        kept and may not be redefined. A dependency naming no step raises
        UnknownStepDependency, or with ``unknown_deps="drop"`` is dropped and recorded in
        the step's ``dropped_dependencies``. Publishes no PlanCreated (the loop does, with
        its reasoning); steps that can never run are skipped right away (StepSkipped).
        """
        specs = [s if isinstance(s, StepSpec) else StepSpec.model_validate(s) for s in steps]
        async with self._write() as change:
            current = change.dag(goal_id)
            new, removed, nodes = current.planned(specs, iteration, change.now, unknown_deps)
            change.dags[goal_id] = new
            drop = "DELETE FROM steps WHERE goal_id = ? AND id = ?"
            change.ops += [(drop, (goal_id, sid)) for sid in removed]
            change.ops += [(UPSERT_STEP, step_row(n)) for n in nodes if current.get(n.id) is not n]
            self._cascade_skips(change, goal_id)
        dag = self._dags[goal_id]
        return [dag.get(n.id) or n for n in nodes]

    def _step_base(self, change: _Change, goal_id: str, step_id: str) -> dict[str, Any]:
        goal = change.goal(goal_id)
        return {
            "thread_id": goal.thread_id,
            "goal_id": goal_id,
            "loop_id": goal.loop_id,
            "step_id": step_id,
        }

    def _step_move(
        self, change: _Change, goal_id: str, step_id: str, to: str, **fields: Any
    ) -> StepNode | None:
        step = change.dag(goal_id).get(step_id)
        if step is None:
            raise StepNotFound(goal_id, step_id)
        if not check_step_move(goal_id, step_id, step.status, to):
            return None
        return change.put_step(
            step.model_copy(update={"status": to, "updated_at": change.now, **fields})
        )

    def _cascade_skips(self, change: _Change, goal_id: str) -> list[str]:
        """Skip every pending step whose dependency can no longer be satisfied (repeat until
        nothing changes: a skipped step kills its own dependents)."""
        skipped: list[str] = []
        dag = change.dag(goal_id)
        while True:
            dead = dag.dead_steps()
            if not dead:
                return skipped
            for step, why in dead:
                self._step_move(change, goal_id, step.id, "skipped", error=why)
                change.emit(StepSkipped(**self._step_base(change, goal_id, step.id), reason=why))
                change.notify("step_skipped", goal_id, step.id)
                skipped.append(step.id)

    async def start_step(self, goal_id: str, step_id: str) -> StepNode:
        """pending -> active; raises StepNotReady while a dependency is unsatisfied."""
        async with self._write() as change:
            dag = change.dag(goal_id)
            step = dag.get(step_id)
            if step is None:
                raise StepNotFound(goal_id, step_id)
            if step.status == "pending":
                waiting = dag.waiting_on(step_id)
                if waiting:
                    raise StepNotReady(goal_id, step_id, waiting)
            if self._step_move(change, goal_id, step_id, "active"):
                change.emit(
                    StepStarted(
                        **self._step_base(change, goal_id, step_id),
                        description=step.description,
                        kind=step.kind,
                    )
                )
                change.notify("step_started", goal_id, step_id)
        return self.get_step(goal_id, step_id)

    async def complete_step(
        self,
        goal_id: str,
        step_id: str,
        summary: str = "",
        tokens: int = 0,
        duration_s: float = 0.0,
    ) -> StepNode:
        async with self._write() as change:
            moved = self._step_move(
                change,
                goal_id,
                step_id,
                "completed",
                result_summary=summary,
                tokens=tokens,
                duration_s=duration_s,
                error="",
            )
            if moved:
                change.emit(
                    StepCompleted(
                        **self._step_base(change, goal_id, step_id),
                        summary=summary,
                        duration_s=duration_s,
                    )
                )
                change.notify("step_completed", goal_id, step_id)
                self._cascade_skips(change, goal_id)
        return self.get_step(goal_id, step_id)

    async def fail_step(
        self, goal_id: str, step_id: str, error: str, cancelled: bool = False
    ) -> list[str]:
        """-> failed; every step that depended on it (transitively) is skipped. Returns the
        ids of those skipped steps."""
        async with self._write() as change:
            skipped: list[str] = []
            if self._step_move(change, goal_id, step_id, "failed", error=error):
                change.emit(
                    StepFailed(
                        **self._step_base(change, goal_id, step_id),
                        error=error,
                        cancelled=cancelled,
                    )
                )
                change.notify("step_failed", goal_id, step_id)
                skipped = self._cascade_skips(change, goal_id)
        return skipped

    async def skip_step(self, goal_id: str, step_id: str, reason: str) -> list[str]:
        """-> skipped. A skipped step satisfies nobody: its dependents are skipped too
        (returned)."""
        async with self._write() as change:
            skipped: list[str] = []
            if self._step_move(change, goal_id, step_id, "skipped", error=reason):
                change.emit(StepSkipped(**self._step_base(change, goal_id, step_id), reason=reason))
                change.notify("step_skipped", goal_id, step_id)
                skipped = self._cascade_skips(change, goal_id)
        return skipped

    async def reset_step(self, goal_id: str, step_id: str) -> StepNode:
        """active -> pending for a step left running by a crash or an interrupt, so it can
        run again (a repair outside the step table; pending steps are left alone)."""
        async with self._write() as change:
            step = change.dag(goal_id).get(step_id)
            if step is None:
                raise StepNotFound(goal_id, step_id)
            if step.status == "active":
                change.put_step(
                    step.model_copy(update={"status": "pending", "updated_at": change.now})
                )
            elif step.status != "pending":
                raise IllegalStepTransition(goal_id, step_id, step.status, "pending")
        return self.get_step(goal_id, step_id)

    # --- evidence ----------------------------------------------------------------------

    async def add_evidence(
        self,
        goal_id: str,
        *,
        kind: str,
        summary: str,
        content: str = "",
        step_id: str | None = None,
    ) -> EvidenceEntry:
        """Record evidence with the stable id ``E-<goal>-<n>``."""
        async with self._write() as change:
            goal = change.goal(goal_id)
            if step_id is not None and step_id not in self._dags[goal_id]:
                raise StepNotFound(goal_id, step_id)
            mine = self._evidence.get(goal_id, [])
            n = (mine[-1].n if mine else 0) + 1
            entry = EvidenceEntry(
                id=f"E-{goal_id}-{n}",
                goal_id=goal_id,
                n=n,
                kind=kind,  # type: ignore[arg-type]
                summary=summary,
                content=content,
                step_id=step_id,
                created_at=change.now,
            )
            change.ops.append((INSERT_EVIDENCE, evidence_row(entry)))
            change.after.append(lambda: self._evidence.setdefault(goal_id, []).append(entry))
            change.emit(
                EvidenceAdded(
                    thread_id=goal.thread_id,
                    goal_id=goal_id,
                    loop_id=goal.loop_id,
                    step_id=step_id,
                    evidence_id=entry.id,
                    kind=entry.kind,
                    summary=summary,
                    content=content,
                )
            )
        return entry

    def evidence(self, goal_id: str) -> list[EvidenceEntry]:
        self.get_goal(goal_id)
        return list(self._evidence.get(goal_id, ()))

    def evidence_summary(self, goal_id: str, max_chars: int = 1500) -> str:
        """One line per entry, newest kept when over ``max_chars`` (never longer)."""
        entries = self.evidence(goal_id)
        lines: list[str] = []
        used = 0
        for entry in reversed(entries):
            where = f" @{entry.step_id}" if entry.step_id else ""
            line = f"[{entry.id}] {entry.kind}{where}: {clip(entry.summary, 300)}"
            if used + len(line) + 1 > max_chars - 48:
                break
            lines.append(line)
            used += len(line) + 1
        omitted = len(entries) - len(lines)
        if omitted:
            lines.append(f"({omitted} earlier evidence entries omitted)")
        return clip("\n".join(reversed(lines)), max_chars)

    # --- ledger ------------------------------------------------------------------------

    async def append_ledger(
        self, goal_id: str | None, role: str, content: str, phase: str, thread_id: str = ""
    ) -> LedgerEntry:
        async with self._write() as change:
            if goal_id is not None:
                thread_id = thread_id or change.goal(goal_id).thread_id
            entry = LedgerEntry(
                id=self._ledger.next_id,
                goal_id=goal_id,
                thread_id=thread_id,
                role=role,
                content=content,
                phase=phase,
                created_at=change.now,
            )
            change.ops.append((INSERT_LEDGER, ledger_row(entry)))
            cutoff = self._ledger.overflow_cutoff(1)
            if cutoff is not None:
                change.ops.append(("DELETE FROM ledger WHERE id < ?", (cutoff,)))
            change.after.append(lambda: self._ledger.add(entry))
        return entry

    def get_ledger_entries(
        self,
        goal_id: str | None = None,
        phases: Sequence[str] | None = None,
        thread_id: str | None = None,
    ) -> list[LedgerEntry]:
        """Entries oldest first; each argument left None does not filter."""
        return self._ledger.entries(goal_id, phases, thread_id)

    # --- threads -----------------------------------------------------------------------

    async def create_thread(self, title: str = "") -> ThreadRecord:
        async with self._write() as change:
            record = ThreadRecord(
                id=uuid.uuid4().hex[:12], title=title, created_at=change.now, last_active=change.now
            )
            change.ops.append(
                (
                    "INSERT INTO threads (id, title, created_at, last_active) VALUES (?, ?, ?, ?)",
                    (record.id, record.title, record.created_at, record.last_active),
                )
            )
            change.after.append(lambda: self._threads.__setitem__(record.id, record))
        return record

    def _touch(self, change: _Change, thread_id: str, title: str | None = None) -> ThreadRecord:
        old = self._threads.get(thread_id)
        if old is None:
            raise ThreadNotFound(thread_id)
        new = old.model_copy(
            update={"last_active": change.now, "title": old.title if title is None else title}
        )
        change.ops.append(
            (
                "UPDATE threads SET last_active = ?, title = ? WHERE id = ?",
                (new.last_active, new.title, thread_id),
            )
        )
        change.after.append(lambda: self._threads.__setitem__(thread_id, new))
        return new

    async def touch_thread(self, thread_id: str, title: str | None = None) -> ThreadRecord:
        """Mark a thread active now (optionally renaming it)."""
        async with self._write() as change:
            record = self._touch(change, thread_id, title)
        return record

    def get_thread(self, thread_id: str) -> ThreadRecord | None:
        return self._threads.get(thread_id)

    def list_threads(self) -> list[ThreadRecord]:
        """Most recently active first."""
        return sorted(self._threads.values(), key=lambda t: (-t.last_active, t.id))

    async def delete_thread(self, thread_id: str) -> None:
        """Delete a thread with its messages, goals, steps, evidence and ledger. Refused
        (GoalInUse) while one of its goals is active or a goal elsewhere depends on one."""
        async with self._write() as change:
            if thread_id not in self._threads:
                raise ThreadNotFound(thread_id)
            mine = [g for g in self._graph.goals.values() if g.thread_id == thread_id]
            leaving = {g.id for g in mine}
            for goal in mine:
                if goal.status == "active":
                    raise GoalInUse(goal.id, f"thread {thread_id} is deleted while it is active")
                outside = [
                    d
                    for d in (
                        *self._graph.dependents.get(goal.id, {}),
                        *self._graph.children.get(goal.id, {}),
                    )
                    if d not in leaving
                ]
                if outside:
                    raise GoalInUse(goal.id, f"goal {outside[0]} of another thread relies on it")
            for goal in sorted(mine, key=lambda g: -g.seq):
                self._stage_removal(change, goal.id, leaving)
            change.ops += [
                ("DELETE FROM ledger WHERE thread_id = ?", (thread_id,)),
                ("DELETE FROM thread_messages WHERE thread_id = ?", (thread_id,)),
                ("DELETE FROM threads WHERE id = ?", (thread_id,)),
            ]

            def forget() -> None:
                self._threads.pop(thread_id, None)
                self._ledger.drop_thread(thread_id)

            change.after.append(forget)

    async def add_message(self, thread_id: str, role: str, content: str) -> ThreadMessage:
        """Append a chat message to a thread (and mark the thread active)."""

        async with self._write() as change:
            self._touch(change, thread_id)
            message = ThreadMessage(
                id=self._next_message_id,
                thread_id=thread_id,
                role=role,
                content=content,
                created_at=change.now,
            )
            change.ops.append(
                (
                    "INSERT INTO thread_messages (id, thread_id, role, content, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (message.id, thread_id, role, content, message.created_at),
                )
            )
            change.after.append(lambda: setattr(self, "_next_message_id", message.id + 1))
        return message

    async def messages(self, thread_id: str, limit: int | None = None) -> list[ThreadMessage]:
        """The thread's messages oldest first; with ``limit``, only the newest ``limit``."""
        if thread_id not in self._threads:
            raise ThreadNotFound(thread_id)
        sql = (
            "SELECT id, thread_id, role, content, created_at FROM thread_messages "
            "WHERE thread_id = ? ORDER BY id DESC"
        )
        params: tuple[Any, ...] = (thread_id,)
        if limit is not None:
            sql += " LIMIT ?"
            params = (thread_id, max(0, limit))
        async with self.db.execute(sql, params) as cursor:
            rows = await cursor.fetchall()
        return [
            ThreadMessage(id=r[0], thread_id=r[1], role=r[2], content=r[3], created_at=r[4])
            for r in reversed(list(rows))
        ]
