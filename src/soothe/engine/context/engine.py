"""ContextEngine: the one source of truth for goals, steps, evidence, ledger and threads.

This is the facade: reads come synchronously from memory; each write is delegated to the
part that owns it, and every part writes through the one unit of work (``unit.py``):

- ``goals.py``: creating goals and every status move, through the ONE transition function;
- ``edges.py``: dependencies (with the one cycle check), informs, conflicts, priority,
  removal;
- ``step_ops.py``: plans and step moves;
- ``records.py``: evidence and the ledger;
- ``threads.py``: threads and their messages;
- ``observers.py``: ``on(...)`` callbacks, as a filter over the bus;
- ``store.py``: the SQL of all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from soothe.engine.bus import EventBus
from soothe.engine.config import ProjectionSettings
from soothe.engine.context.backend import StoreBackend
from soothe.engine.context.edges import EdgeOps, dependency_cycle
from soothe.engine.context.goals import RESUMABLE, GoalOps, goal_spec, move
from soothe.engine.context.graph import GoalGraph
from soothe.engine.context.ledger import Ledger
from soothe.engine.context.models import (
    Criterion,
    EvidenceEntry,
    GoalBudget,
    GoalNode,
    GoalSpec,
    GoalSpend,
    LedgerEntry,
    StepNode,
    StepSpec,
    ThreadMessage,
    ThreadRecord,
)
from soothe.engine.context.planning import PlanningFacade
from soothe.engine.context.projection import ContextBundle, build_bundle, build_overview
from soothe.engine.context.records import STEER_PHASE, RecordOps
from soothe.engine.context.step_ops import StepOps
from soothe.engine.context.steps import StepDAG, UnknownPolicy
from soothe.engine.context.store import Store
from soothe.engine.context.threads import ThreadOps
from soothe.engine.context.unit import Change, EngineState, UnitOfWork
from soothe.engine.events import EvidenceKind

__all__ = ["ContextEngine"]


class ContextEngine:
    """Goals, their step DAGs, evidence, the ledger and threads, persisted in one SQLite file.

    Returned models are frozen snapshots; ask again (``get_goal``) for the current state.
    """

    def __init__(
        self,
        store: StoreBackend,
        bus: EventBus | None = None,
        projection: ProjectionSettings | None = None,
        max_parallel_goals: int = 2,
        ledger_max_entries: int = 0,
    ) -> None:
        self._store = store
        self.bus = bus if bus is not None else EventBus()
        self.projection_settings = projection or ProjectionSettings()
        self._state = EngineState(ledger=Ledger(ledger_max_entries))
        self._uow = UnitOfWork(store, self.bus, self._state)
        self._goals = GoalOps(self._uow)
        self._edges = EdgeOps(self._uow)
        self._steps = StepOps(self._uow)
        self._records = RecordOps(self._uow)
        self._threads = ThreadOps(self._uow, self._edges)
        self.planning = PlanningFacade(self, max_parallel_goals)

    # --- opening and closing -----------------------------------------------------------

    @classmethod
    async def open(
        cls,
        path: str | Path | StoreBackend,
        bus: EventBus | None = None,
        projection: ProjectionSettings | None = None,
        max_parallel_goals: int = 2,
        ledger_max_entries: int = 0,
    ) -> ContextEngine:
        """Open (or create) the database at ``path``; ``":memory:"`` is for tests only.
        An open store (e.g. ``store_pg.PgStore``) is used as it is, and closed with us."""
        store = path if not isinstance(path, str | Path) else await Store.open(path)
        try:
            engine = cls(store, bus, projection, max_parallel_goals, ledger_max_entries)
            engine._state.restore(await store.load(ledger_max_entries))
        except BaseException:
            await store.close()
            raise
        return engine

    async def close(self) -> None:
        await self._uow.close()

    @property
    def store(self) -> StoreBackend:
        return self._store

    @property
    def shared(self) -> bool:
        """True on a store other processes write too (PostgreSQL): read it fresh."""
        return self._store.dialect != "sqlite"

    async def refresh(self) -> dict[str, GoalNode]:
        """Read the whole state again from the store (on a shared store other workers
        changed it); events are not replayed (``watch.poll`` publishes the difference).
        Returns the goals as they were just before."""
        async with self._uow.lock:
            self._uow.check_open()
            loaded = await self._store.load(self._state.ledger.max_entries)
            state = self._state
            before = dict(state.graph.goals)
            state.graph = GoalGraph()
            state.dags = {}
            state.evidence = {}
            state.threads = {}
            state.ledger = Ledger(state.ledger.max_entries)
            state.restore(loaded)
        return before

    async def __aenter__(self) -> ContextEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def db(self) -> Any:
        """The aiosqlite connection, for modules keeping their own tables in this file.

        Keep your schema version with ``migrate_module`` (``PRAGMA user_version`` belongs
        to the ContextEngine).
        """
        return self._store.db

    @property
    def path(self) -> str:
        return self._store.path

    async def migrate_module(self, module: str, migrations: Sequence[Sequence[str]]) -> int:
        """Apply another module's forward migrations (lists of SQL statements); returns the
        module's schema version. Versions live in the ``module_versions`` table."""
        async with self._uow.lock:
            self._uow.check_open()
            return await self._store.migrate_module(module, migrations)

    # --- for planning.py: the write path and the one transition function ------------------

    @property
    def _graph(self) -> GoalGraph:
        return self._state.graph

    @property
    def _ledger(self) -> Ledger:
        return self._state.ledger

    def _write(self) -> AbstractAsyncContextManager[Change]:
        return self._uow.write()

    @staticmethod
    def _move(change: Change, goal_id: str, to: str, **kwargs: Any) -> GoalNode:
        return move(change, goal_id, to, **kwargs)

    # --- observers -----------------------------------------------------------------------

    def on(self, name: str, fn: Callable[..., Any]) -> Callable[[], None]:
        """Call ``fn(goal_id)`` (goal_*) or ``fn(goal_id, step_id)`` (step_*) after each such
        change has been committed; ``goal_cancelled`` / ``goal_suspended`` / ``goal_failed``
        pass ``fn(goal_id, reason)`` (the error for a failure) when ``fn`` takes a second
        argument, as the seed does. ``fn`` may be sync or async. Returns a remover."""
        return self._uow.observers.on(name, fn)

    def off(self, name: str, fn: Callable[..., Any]) -> None:
        """Unregister ``fn`` for ``name`` (the seed's ``off``; the remover ``on`` returned
        does the same for one registration)."""
        self._uow.observers.off(name, fn)

    # --- reading goals -----------------------------------------------------------------

    def get_goal(self, goal_id: str) -> GoalNode:
        return self._state.goal(goal_id)

    def has_goal(self, goal_id: str) -> bool:
        return goal_id in self._state.graph.goals

    def list_goals(
        self,
        *,
        status: str | Iterable[str] | None = None,
        thread_id: str | None = None,
    ) -> list[GoalNode]:
        """Goals in creation order, optionally of some statuses and/or one thread."""
        graph = self._state.graph
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
        return self._state.graph.ready()

    def lineage(self, goal_id: str) -> list[GoalNode]:
        """Ancestors of a goal, nearest first."""
        self.get_goal(goal_id)
        graph = self._state.graph
        return [graph.goals[g] for g in graph.ancestors(goal_id)]

    def would_cycle(self, goal_id: str, depends_on_id: str) -> bool:
        """Would ``goal_id`` depending on ``depends_on_id`` close a dependency cycle? The
        check ``add_dependency`` refuses with (CycleError); a goal on itself is a cycle."""
        self.get_goal(goal_id)
        self.get_goal(depends_on_id)
        return dependency_cycle(self._state.graph, goal_id, depends_on_id) is not None

    def project(
        self, goal_id: str | None = None, phases: Sequence[str] | None = None
    ) -> ContextBundle:
        """A bounded view of the goal for a prompt (see ``projection.py`` for the bounds).
        With no goal (the seed's ``project()``): the oldest active goal's view; with no
        goal active, the DAG summary only (``bundle.goal`` None; an empty DAG renders as
        "## Goal DAG (no goals)")."""
        state = self._state
        if goal_id is None:
            goal_id = next(iter(state.graph.by_status.get("active", {})), None)
            if goal_id is None:
                return build_overview(state.graph, self.projection_settings)
        self.get_goal(goal_id)
        return build_bundle(
            state.graph,
            state.dags,
            state.ledger,
            goal_id,
            self.projection_settings,
            phases,
            evidence=state.evidence.get(goal_id, ()),
            evidence_of=state.evidence,
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
        criteria: Sequence[str] = (),
        budget: GoalBudget | None = None,
        workspace: str = "",
    ) -> GoalNode:
        spec = goal_spec(
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
                "criteria": list(criteria),
                "workspace": workspace,
                # None: the default caps (``goals.budget``), stamped on at creation
                **({"budget": budget} if budget is not None else {}),
            }
        )
        return (await self._goals.create([spec]))[0]

    async def create_goals(self, specs: Sequence[GoalSpec | Mapping[str, Any]]) -> list[GoalNode]:
        """Create many goals in ONE transaction. A spec may point at an earlier spec of the
        same batch by its ``ref``; otherwise edges name existing goal ids."""
        return await self._goals.create(specs)

    # --- status moves ------------------------------------------------------------------

    async def activate_goal(self, goal_id: str, loop_id: str | None = None) -> GoalNode:
        """pending -> active; raises GoalNotReady if a dependency is open or a conflict runs."""
        return await self._goals.transition(goal_id, "active", updates={"loop_id": loop_id})

    async def claim_goal(self, goal_id: str, loop_id: str | None = None) -> GoalNode | None:
        """Activate the goal if it is ready right now, else return None (checked atomically)."""
        return await self._goals.claim(goal_id, loop_id)

    async def complete_goal(self, goal_id: str, findings: str = "", report: str = "") -> GoalNode:
        """-> completed. Non-empty ``findings``/``report`` replace the stored ones."""
        updates: dict[str, Any] = {}
        if findings:
            updates["findings"] = findings
        if report:
            updates["report"] = report
        return await self._goals.transition(goal_id, "completed", updates=updates)

    async def fail_goal(self, goal_id: str, error: str = "", allow_retry: bool = True) -> GoalNode:
        """Record a failure. With ``allow_retry`` and retries left (retry_count < max_retries)
        the goal goes back to pending (retry_count + 1) in one move that says ``will_retry``;
        otherwise it ends failed."""
        return await self._goals.fail(goal_id, error, allow_retry)

    async def suspend_goal(self, goal_id: str, reason: str = "") -> GoalNode:
        return await self._goals.transition(goal_id, "suspended", reason=reason)

    async def block_goal(self, goal_id: str, reason: str = "") -> GoalNode:
        return await self._goals.transition(goal_id, "blocked", reason=reason)

    async def unblock_goal(self, goal_id: str) -> GoalNode:
        """blocked -> pending; a goal in any other status is left alone (no error, no
        event), as in the seed. ``resume_goal`` is the strict one."""
        return await self._goals.unblock(goal_id)

    async def await_clarification(self, goal_id: str, reason: str = "") -> GoalNode:
        return await self._goals.transition(goal_id, "awaiting_clarification", reason=reason)

    async def validate_goal(self, goal_id: str, reason: str = "") -> GoalNode:
        return await self._goals.transition(goal_id, "validated", reason=reason)

    async def resume_goal(self, goal_id: str, reason: str = "resumed") -> GoalNode:
        """suspended / blocked / awaiting_clarification / cancelled -> pending. Sub-goals
        cancelled together with this one stay cancelled; resume them one by one."""
        return await self._goals.back_to_pending(
            goal_id, RESUMABLE, "not paused or cancelled", reason
        )

    async def retry_goal(self, goal_id: str) -> GoalNode:
        """failed -> pending while retries remain (retry_count < max_retries; the count
        goes up by one); else IllegalTransition "no retries left (2/2)"."""
        return await self._goals.retry(goal_id, fresh=False)

    async def retry_goal_fresh(self, goal_id: str) -> GoalNode:
        """Retry with a fresh budget: failed -> pending with retry_count reset to 0, even
        when the retries were used up. The user's retry (the tree's retry key, ``soothe
        goals retry``): they asked for it explicitly."""
        return await self._goals.retry(goal_id, fresh=True)

    async def send_back_goal(self, goal_id: str, reason: str = "") -> GoalNode:
        """Verification rejected an active goal's result: back to pending while
        send_back_count < max_send_backs, else failed."""
        return await self._goals.send_back(goal_id, reason)

    async def set_criteria(self, goal_id: str, criteria: Sequence[str]) -> GoalNode:
        """Replace a goal's done-when criteria (published as goal.criteria_set)."""
        return await self._goals.set_criteria(goal_id, criteria)

    async def record_verdicts(self, goal_id: str, criteria: Sequence[Criterion]) -> GoalNode:
        """Store the verifier's verdicts on the goal (published as goal.verified)."""
        return await self._goals.record_verdicts(goal_id, criteria)

    # --- budget and spend (per-goal caps) -------------------------------------------------

    @property
    def default_budget(self) -> GoalBudget:
        """The caps a goal created without its own gets (``goals.budget``)."""
        return self._goals.default_budget

    @default_budget.setter
    def default_budget(self, budget: GoalBudget) -> None:
        self._goals.default_budget = budget

    def charge_goal(self, goal_id: str, calls: int, tokens: int) -> None:
        """Count a model request made for ``goal_id`` (stored before its next call, or
        when it stops running). An unknown goal (removed meanwhile) is not charged."""
        if goal_id in self._state.graph.goals:
            self._state.spend.charge(goal_id, calls, tokens)

    def goal_spend(self, goal_id: str) -> GoalSpend:
        """What the goal has spent, the part not yet stored included."""
        goal = self._state.goal(goal_id)
        return self._state.spend.current(goal_id, goal.spent)

    def over_budget(self, goal_id: str) -> str:
        """``budget: tokens 200k`` when the goal's spend has reached a cap, else ""."""
        from soothe.engine.goal_budget import budget_reason

        return budget_reason(self._state.goal(goal_id).budget, self.goal_spend(goal_id))

    async def admit_goal(self, goal_id: str) -> str:
        """Before a model call for ``goal_id``: store its spend so far, then "" (go on) or
        the cap it reached (``budget: tokens 200k``: the call must not be made)."""
        if goal_id not in self._state.graph.goals:
            return ""
        goal = self._state.goal(goal_id)
        if goal.status == "active":  # e.g. a worker took over a goal left active
            self._state.spend.start(goal_id)
        await self._goals.store_spend(goal_id)
        return self.over_budget(goal_id)

    async def store_spend(self, goal_id: str) -> GoalNode:
        """Store what the goal spent so far (one goal.spent); nothing new, no write."""
        return await self._goals.store_spend(goal_id)

    async def set_budget(self, goal_id: str, budget: GoalBudget) -> GoalNode:
        """Replace the goal's caps (one goal.budget event). A raised cap lets a goal
        suspended at its budget run again once resumed."""
        return await self._goals.set_budget(goal_id, budget)

    async def cancel_goal(self, goal_id: str, reason: str = "") -> GoalNode:
        """-> cancelled, after cancelling every unfinished sub-goal, deepest first."""
        return await self._goals.cancel(goal_id, reason)

    async def recover(self, max_crash_attempts: int = 3) -> list[str]:
        """Start-up repair after a crash: goals left active go back to pending
        (attempts_after_crash + 1; past ``max_crash_attempts`` they fail instead), and steps
        left active go back to pending so they run again. Returns the ids moved to pending."""
        return await self._goals.recover(max_crash_attempts)

    # --- edges, priority, removal --------------------------------------------------

    async def add_dependency(self, goal_id: str, depends_on_id: str) -> GoalNode:
        """``goal_id`` waits for ``depends_on_id``; refused with CycleError if that closes a
        cycle (``would_cycle`` asks first)."""
        return await self._edges.add_dependency(goal_id, depends_on_id)

    async def remove_dependency(self, goal_id: str, depends_on_id: str) -> GoalNode:
        return await self._edges.remove_dependency(goal_id, depends_on_id)

    async def add_informs(self, goal_id: str, informed_id: str) -> GoalNode:
        """``goal_id``'s findings go into ``informed_id``'s projection (a soft edge)."""
        return await self._edges.add_informs(goal_id, informed_id)

    async def add_conflict(self, goal_id: str, other_id: str) -> GoalNode:
        """The two goals are never active together (stored on both)."""
        return await self._edges.add_conflict(goal_id, other_id)

    async def set_priority(self, goal_id: str, priority: int) -> GoalNode:
        return await self._edges.set_priority(goal_id, priority)

    async def remove_goal(self, goal_id: str) -> None:
        """Delete a goal with its steps, evidence and ledger entries. Refused (GoalInUse)
        while other goals depend on it, it has sub-goals, or it is active."""
        await self._edges.remove_goal(goal_id)

    # --- steps -------------------------------------------------------------------------

    def step_dag(self, goal_id: str) -> StepDAG:
        self.get_goal(goal_id)
        return self._state.dags[goal_id]

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
        return await self._steps.set_plan(goal_id, steps, iteration, unknown_deps)

    async def start_step(self, goal_id: str, step_id: str) -> StepNode:
        """pending -> active; raises StepNotReady while a dependency is unsatisfied."""
        return await self._steps.start(goal_id, step_id)

    async def complete_step(
        self,
        goal_id: str,
        step_id: str,
        summary: str = "",
        tokens: int = 0,
        duration_s: float = 0.0,
    ) -> StepNode:
        return await self._steps.complete(goal_id, step_id, summary, tokens, duration_s)

    async def fail_step(
        self, goal_id: str, step_id: str, error: str, cancelled: bool = False
    ) -> list[str]:
        """-> failed; every step that depended on it (transitively) is skipped. Returns the
        ids of those skipped steps."""
        return await self._steps.fail(goal_id, step_id, error, cancelled)

    async def skip_step(self, goal_id: str, step_id: str, reason: str = "") -> list[str]:
        """pending -> skipped (the seed's ``skip_step``; an active step too), published as
        StepSkipped (``on("step_skipped")``). The steps that depended on it can no longer
        run: they are skipped with it. Returns the ids skipped, this one first (none when
        it was already skipped); a finished step raises IllegalStepTransition."""
        return await self._steps.skip(goal_id, step_id, reason)

    async def reset_step(self, goal_id: str, step_id: str, reason: str = "") -> StepNode:
        """active -> pending for a step left running by a crash or an interrupt, so it can
        run again (a repair outside the step table; pending steps are left alone). The
        move publishes StepSuspended with ``reason``."""
        return await self._steps.reset(goal_id, step_id, reason)

    # --- evidence and the ledger -------------------------------------------------------

    async def add_evidence(
        self,
        goal_id: str,
        *,
        kind: EvidenceKind,
        summary: str,
        content: str = "",
        step_id: str | None = None,
    ) -> EvidenceEntry:
        """Record evidence with the stable id ``E-<goal>-<n>``."""
        return await self._records.add_evidence(
            goal_id, kind=kind, summary=summary, content=content, step_id=step_id
        )

    def evidence(self, goal_id: str) -> list[EvidenceEntry]:
        self.get_goal(goal_id)
        return list(self._state.evidence.get(goal_id, ()))

    def evidence_summary(self, goal_id: str, max_chars: int = 1500) -> str:
        """One line per entry, newest kept when over ``max_chars`` (never longer)."""
        return self._records.evidence_summary(self.evidence(goal_id), max_chars)

    async def append_ledger(
        self, goal_id: str | None, role: str, content: str, phase: str, thread_id: str = ""
    ) -> LedgerEntry:
        return await self._records.append_ledger(goal_id, role, content, phase, thread_id)

    async def steer_goal(self, goal_id: str, text: str) -> LedgerEntry:
        """The user's note to a goal while it runs: a ledger entry (phase ``steer``) the
        planner reads at the goal's next assessment, published as GoalSteered."""
        return await self._records.append_ledger(goal_id, "user", text, STEER_PHASE, "", steer=True)

    def steering(self, goal_id: str, limit: int = 5) -> list[str]:
        """The user's newest notes to ``goal_id`` (``steer_goal``), oldest first."""
        return [e.content for e in self.get_ledger_entries(goal_id, [STEER_PHASE])][-limit:]

    def get_ledger_entries(
        self,
        goal_id: str | None = None,
        phases: Sequence[str] | None = None,
        thread_id: str | None = None,
    ) -> list[LedgerEntry]:
        """Entries oldest first; each argument left None does not filter."""
        return self._state.ledger.entries(goal_id, phases, thread_id)

    # --- threads -----------------------------------------------------------------------

    async def create_thread(self, title: str = "") -> ThreadRecord:
        return await self._threads.create(title)

    async def touch_thread(self, thread_id: str, title: str | None = None) -> ThreadRecord:
        """Mark a thread active now (optionally renaming it)."""
        return await self._threads.touch(thread_id, title)

    def get_thread(self, thread_id: str) -> ThreadRecord | None:
        return self._state.threads.get(thread_id)

    def list_threads(self) -> list[ThreadRecord]:
        """Most recently active first."""
        return sorted(self._state.threads.values(), key=lambda t: (-t.last_active, t.id))

    async def delete_thread(self, thread_id: str) -> None:
        """Delete a thread with its messages, goals, steps, evidence and ledger. Refused
        (GoalInUse) while one of its goals is active or a goal elsewhere depends on one."""
        await self._threads.delete(thread_id)

    async def add_message(self, thread_id: str, role: str, content: str) -> ThreadMessage:
        """Append a chat message to a thread (and mark the thread active)."""
        return await self._threads.add_message(thread_id, role, content)

    async def messages(self, thread_id: str, limit: int | None = None) -> list[ThreadMessage]:
        """The thread's messages oldest first; with ``limit``, only the newest ``limit``."""
        return await self._threads.messages(thread_id, limit)

    # --- transcripts (what the screen showed; see context/transcript.py) ---------------

    async def append_transcript(self, thread_id: str, records: Sequence[str]) -> None:
        """Store transcript records (JSON text) after the thread's others, in order."""
        from soothe.engine.context.store import transcript_ops

        await self._store.write(transcript_ops(thread_id, records))

    async def transcript(
        self,
        thread_id: str,
        before: int | None = None,
        limit: int | None = None,
        after: int | None = None,
    ) -> list[tuple[int, str]]:
        """The thread's transcript records ``(id, json)``, oldest first (``before`` /
        ``after`` a record id with ``limit``: the page next to it)."""
        return await self._store.transcript(thread_id, before, limit, after)

    async def transcript_id_of(self, thread_id: str, seq: int) -> int | None:
        """The record id of a live event (by its ``seq``) in the thread's transcript."""
        return await self._store.transcript_id_of(thread_id, seq)
