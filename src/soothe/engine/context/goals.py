"""Goal operations: creation and every status move, through the ONE transition function.

``GoalOps.move`` checks the lifecycle table in ``lifecycle.py`` plus the guards that need
the graph (dependencies done, no conflicting goal active, retries left), stages the new
snapshot and queues exactly one GoalStatusChanged for the move.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from soothe.engine.context.edges import announce_update
from soothe.engine.context.errors import (
    DepthLimitExceeded,
    GoalNotFound,
    GoalNotReady,
    IllegalTransition,
    InvalidGoal,
)
from soothe.engine.context.graph import MAX_GOAL_DEPTH
from soothe.engine.context.lifecycle import check_goal_move, goal_move_allowed
from soothe.engine.context.models import (
    TERMINAL_STATES,
    Criterion,
    GoalBudget,
    GoalNode,
    GoalSpec,
    GoalSpend,
)
from soothe.engine.context.observers import SENT_BACK
from soothe.engine.context.steps import StepDAG
from soothe.engine.context.store import SET_META
from soothe.engine.context.unit import Change, UnitOfWork
from soothe.engine.events import (
    GoalBudgetSet,
    GoalCreated,
    GoalCriteriaSet,
    GoalSpent,
    GoalStatus,
    GoalStatusChanged,
    GoalVerified,
)
from soothe.engine.scope import Scope

RESUMABLE = frozenset({"suspended", "blocked", "awaiting_clarification", "cancelled"})


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def goal_spec(data: GoalSpec | Mapping[str, Any]) -> GoalSpec:
    if isinstance(data, GoalSpec):
        return data
    try:
        return GoalSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InvalidGoal(f"{'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def not_ready_reason(change: Change, goal: GoalNode) -> str:
    waiting = [d for d in goal.depends_on if change.goal(d).status != "completed"]
    if waiting:
        return "waiting on " + ", ".join(waiting)
    running = [c for c in goal.conflicts_with if change.goal(c).status == "active"]
    if running:
        return "conflicting goal active: " + ", ".join(running)
    return ""


def move(
    change: Change,
    goal_id: str,
    to: str,
    *,
    reason: str = "",
    updates: Mapping[str, Any] | None = None,
    user_retry: bool = False,
    will_retry: bool = False,
) -> GoalNode:
    """THE goal status transition. Checks the table and the graph guards, stages the new
    snapshot, and queues its one GoalStatusChanged (the ``on`` callbacks follow from it)."""
    goal = change.goal(goal_id)
    if not check_goal_move(goal_id, goal.status, to):
        return goal
    if to == "active":
        why = not_ready_reason(change, goal)
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
        fields["started_at"] = change.now  # each activation (the seed's), not the first
    if to in TERMINAL_STATES:
        fields["finished_at"] = change.now
    if to == "pending":
        fields["loop_id"] = None
        fields["finished_at"] = None
    if to == "suspended":  # it lets go of its loop: another loop or worker may take it
        fields["loop_id"] = None
    if goal.status == "active":  # it stops running: its spend goes with the move
        fields["spent"] = stage_spend(change, goal, running=False)
    elif to == "active":  # its clock starts once the move is stored
        change.after.append(lambda: change.state.spend.start(goal_id))
    fields.update(updates or {})
    new = change.stage(goal.model_copy(update=fields))
    scope = Scope(thread_id=new.thread_id, loop_id=new.loop_id or goal.loop_id, goal_id=goal_id)
    change.emit(
        GoalStatusChanged(
            **scope.fields(),
            from_status=goal.status,
            to_status=new.status,
            reason=reason,
            findings=new.findings if to == "completed" else "",
            error=(new.error or reason) if to == "failed" or will_retry else "",
            will_retry=will_retry,
        )
    )
    return new


def stage_spend(change: Change, goal: GoalNode, *, running: bool) -> GoalSpend:
    """The goal's spend with what the meter holds unsaved (calls, tokens, the running
    clock), to be staged in ``change``; once it is stored the meter lets that part go."""
    meter = change.state.spend
    now = time.monotonic()
    base = goal.spent
    spent = meter.current(goal.id, base, now)
    change.after.append(lambda: meter.stored(goal.id, spent, base, now, running=running))
    return spent


def dependency_failed(goal_id: str) -> str:
    """The reason (and error) of a goal blocked because ``goal_id`` failed for good."""
    return f"dependency {goal_id} failed"


def block_dependents(change: Change, state: Any, goal_id: str) -> None:
    """``goal_id`` failed for good: its pending dependents (transitively) can never run, so
    they move to blocked with the reason, instead of staying pending forever."""
    reason = dependency_failed(goal_id)
    todo = [goal_id]
    while todo:
        current = todo.pop()
        for other in list(state.graph.ids_with_status("pending")):
            goal = change.goal(other)
            if current in goal.depends_on and goal.status == "pending":
                move(change, other, "blocked", reason=reason, updates={"error": reason})
                todo.append(other)


def unblock_dependents(change: Change, state: Any, goal_id: str) -> None:
    """``goal_id`` is retried: the goals blocked on its failure go back to pending."""
    reason = dependency_failed(goal_id)
    for other in list(state.graph.ids_with_status("blocked")):
        goal = change.goal(other)
        if goal.status == "blocked" and goal.error == reason:
            move(
                change,
                other,
                "pending",
                reason=f"dependency {goal_id} retried",
                updates={"error": ""},
            )


class GoalOps:
    def __init__(self, uow: UnitOfWork) -> None:
        self._uow = uow
        self.default_budget = GoalBudget()
        """The caps of a goal created without a budget of its own (``goals.budget``)."""

    # --- creating ------------------------------------------------------------------------

    async def create(self, specs: Sequence[GoalSpec | Mapping[str, Any]]) -> list[GoalNode]:
        parsed = [goal_spec(s) for s in specs]
        async with self._uow.write() as change:
            # A shared store hands out goal numbers atomically (other processes add goals).
            state = self._uow.state
            reserved = await self._uow.store.reserve_goal_ids(len(parsed), state.goal_counter)
            state.goal_counter = max(state.goal_counter, reserved)
            ids = self._stage_new(change, parsed)
        return [self._uow.state.goal(gid) for gid in ids]

    @staticmethod
    def _depth_in(change: Change, goal_id: str) -> int:
        depth = 1
        goal = change.find(goal_id)
        seen = {goal_id}
        while goal is not None and goal.parent_id and goal.parent_id not in seen:
            seen.add(goal.parent_id)
            depth += 1
            goal = change.find(goal.parent_id)
        return depth

    def _stage_new(self, change: Change, specs: Sequence[GoalSpec]) -> list[str]:
        state = self._uow.state
        refs: dict[str, str] = {}
        counter = state.goal_counter
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
                criteria=tuple(Criterion(text=text) for text in spec.criteria),
                budget=spec.budget if "budget" in spec.model_fields_set else self.default_budget,
                workspace=spec.workspace,
                created_at=now,
                updated_at=now,
            )
            goal._dag = StepDAG(goal_id)
            change.stage(goal)
            for other in goal.conflicts_with:
                partner = change.goal(other)
                change.update(other, conflicts_with=(*partner.conflicts_with, goal_id))
                announce_update(change, other, conflicts_with=True)
            if spec.ref:
                if spec.ref in refs:
                    raise InvalidGoal(f"ref {spec.ref!r} used twice in one batch")
                refs[spec.ref] = goal_id
            change.emit(
                GoalCreated(
                    **Scope(thread_id=goal.thread_id, goal_id=goal_id).fields(),
                    description=goal.description,
                    priority=goal.priority,
                    parent_id=parent,
                    depends_on=list(goal.depends_on),
                    source=goal.source,
                    criteria=[c.text for c in goal.criteria],
                    budget=goal.budget,
                )
            )
            ids.append(goal_id)
        change.ops.append((SET_META, ("goal_counter", str(counter))))
        change.after.append(lambda: setattr(state, "goal_counter", counter))
        return ids

    # --- done-when criteria ------------------------------------------------------------

    async def set_criteria(self, goal_id: str, texts: Sequence[str]) -> GoalNode:
        """The goal's done-when criteria, replaced by ``texts`` (blank ones dropped, each
        once); a criterion kept word for word keeps its last verdict. One GoalCriteriaSet.
        A completed goal's criteria are what it was judged by: they no longer change."""
        kept = _dedupe(" ".join(t.split()) for t in texts if t.strip())
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            if goal.status == "completed":
                raise InvalidGoal(f"{goal_id} is completed: its done-when criteria are final")
            old = {c.text: c for c in goal.criteria}
            criteria = tuple(old.get(text) or Criterion(text=text) for text in kept)
            if criteria != goal.criteria:
                change.update(goal_id, criteria=criteria)
                change.emit(
                    GoalCriteriaSet(**change.scope(goal_id).fields(), criteria=list(criteria))
                )
        return self._uow.state.goal(goal_id)

    async def record_verdicts(self, goal_id: str, criteria: Sequence[Criterion]) -> GoalNode:
        """The verifier's verdicts stored on the goal, published as one GoalVerified."""
        async with self._uow.write() as change:
            change.update(goal_id, criteria=tuple(criteria))
            change.emit(
                GoalVerified(
                    **change.scope(goal_id).fields(),
                    criteria=list(criteria),
                    met=bool(criteria) and all(c.verdict == "met" for c in criteria),
                )
            )
        return self._uow.state.goal(goal_id)

    # --- budget and spend ----------------------------------------------------------------

    async def store_spend(self, goal_id: str) -> GoalNode:
        """Store what the goal spent since the last store (one GoalSpent); nothing to
        store, no write."""
        meter = self._uow.state.spend
        if not meter.pending(goal_id):
            return self._uow.state.goal(goal_id)
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            spent = stage_spend(change, goal, running=goal.status == "active")
            if spent != goal.spent:
                change.update(goal_id, spent=spent)
                change.emit(GoalSpent(**change.scope(goal_id).fields(), spent=spent))
        return self._uow.state.goal(goal_id)

    async def set_budget(self, goal_id: str, budget: GoalBudget) -> GoalNode:
        """The goal's caps, replaced (one GoalBudgetSet; the same caps again: no write)."""
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            if goal.status in TERMINAL_STATES:
                raise InvalidGoal(f"{goal_id} is {goal.status}: its budget no longer applies")
            if budget != goal.budget:
                change.update(goal_id, budget=budget)
                change.emit(
                    GoalBudgetSet(**change.scope(goal_id).fields(), budget=budget, spent=goal.spent)
                )
        return self._uow.state.goal(goal_id)

    # --- status moves ----------------------------------------------------------------

    async def transition(
        self, goal_id: str, to: GoalStatus, *, reason: str = "", **kwargs: Any
    ) -> GoalNode:
        """One ``move`` in its own write."""
        async with self._uow.write() as change:
            move(change, goal_id, to, reason=reason, **kwargs)
        return self._uow.state.goal(goal_id)

    async def claim(self, goal_id: str, loop_id: str | None) -> GoalNode | None:
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            if goal.status != "pending" or not_ready_reason(change, goal):
                return None
            move(change, goal_id, "active", updates={"loop_id": loop_id})
        return self._uow.state.goal(goal_id)

    async def fail(self, goal_id: str, error: str, allow_retry: bool) -> GoalNode:
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            if goal.status == "failed":
                return goal
            if goal.status in TERMINAL_STATES:  # completed or cancelled: never resurrected
                check_goal_move(goal_id, goal.status, "failed")
            if allow_retry and goal.retry_count < goal.max_retries:
                attempt = f"retry {goal.retry_count + 1}/{goal.max_retries}"
                reason = f"{attempt}: {error}" if error else attempt
                if goal_move_allowed(goal.status, "pending"):
                    move(
                        change,
                        goal_id,
                        "pending",
                        reason=reason,
                        updates={"retry_count": goal.retry_count + 1, "error": error},
                        will_retry=True,
                    )
                else:  # e.g. validated: through failed, which allows the retry
                    move(
                        change,
                        goal_id,
                        "failed",
                        reason=error,
                        updates={"error": error},
                        will_retry=True,
                    )
                    move(change, goal_id, "pending", reason=reason)
            else:
                move(change, goal_id, "failed", reason=error, updates={"error": error})
                block_dependents(change, self._uow.state, goal_id)
        return self._uow.state.goal(goal_id)

    async def back_to_pending(
        self, goal_id: str, allowed: frozenset[str], why_not: str, reason: str
    ) -> GoalNode:
        """A paused (``allowed``) goal back to pending; a goal already pending is left."""
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            if goal.status not in allowed and goal.status != "pending":
                raise IllegalTransition(goal_id, goal.status, "pending", why_not)
            move(change, goal_id, "pending", reason=reason)
        return self._uow.state.goal(goal_id)

    async def unblock(self, goal_id: str) -> GoalNode:
        """blocked -> pending; any other status is left as it is (the seed's no-op: no
        error, no event)."""
        async with self._uow.write() as change:
            if change.goal(goal_id).status == "blocked":
                move(change, goal_id, "pending", reason="unblocked")
        return self._uow.state.goal(goal_id)

    async def retry(self, goal_id: str, *, fresh: bool) -> GoalNode:
        """failed -> pending. Plain: while retries remain (retry_count + 1), else
        IllegalTransition "no retries left (2/2)" (DESIGN's table). ``fresh``: the retry
        the user asked for, with a fresh budget (retry_count back to 0)."""
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            if goal.status != "failed":
                raise IllegalTransition(goal_id, goal.status, "pending", "only failed goals retry")
            if fresh:
                move(
                    change,
                    goal_id,
                    "pending",
                    reason="retry with a fresh budget",
                    updates={"retry_count": 0},
                    user_retry=True,
                )
            else:
                move(change, goal_id, "pending", reason="retry requested")
            unblock_dependents(change, self._uow.state, goal_id)
        return self._uow.state.goal(goal_id)

    async def send_back(self, goal_id: str, reason: str) -> GoalNode:
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            if goal.status != "active":
                raise IllegalTransition(goal_id, goal.status, "pending", "only an active goal")
            if goal.send_back_count < goal.max_send_backs:
                move(
                    change,
                    goal_id,
                    "pending",
                    reason=f"{SENT_BACK}: {reason}" if reason else SENT_BACK,
                    updates={"send_back_count": goal.send_back_count + 1},
                )
            else:
                error = f"{SENT_BACK} {goal.send_back_count} times; {reason}".rstrip("; ")
                move(change, goal_id, "failed", reason=error, updates={"error": error})
                block_dependents(change, self._uow.state, goal_id)
        return self._uow.state.goal(goal_id)

    async def cancel(self, goal_id: str, reason: str) -> GoalNode:
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            if goal.status == "cancelled":
                return goal
            check_goal_move(goal_id, goal.status, "cancelled")
            why = f"parent {goal_id} cancelled" + (f": {reason}" if reason else "")
            for sub in self._uow.state.graph.descendants_deepest_first(goal_id):
                if change.goal(sub).status not in TERMINAL_STATES:
                    move(change, sub, "cancelled", reason=why)
            move(change, goal_id, "cancelled", reason=reason)
        return self._uow.state.goal(goal_id)

    async def recover(self, max_crash_attempts: int) -> list[str]:
        state = self._uow.state
        moved: list[str] = []
        async with self._uow.write() as change:
            for goal_id in list(state.graph.ids_with_status("active")):
                goal = change.goal(goal_id)
                attempts = goal.attempts_after_crash + 1
                if attempts > max_crash_attempts:
                    error = f"interrupted by {attempts} crashes while active"
                    move(
                        change,
                        goal_id,
                        "failed",
                        reason=error,
                        updates={"attempts_after_crash": attempts, "error": error},
                    )
                else:
                    move(
                        change,
                        goal_id,
                        "pending",
                        reason="recovered after crash",
                        updates={"attempts_after_crash": attempts},
                    )
                    moved.append(goal_id)
            for dag in state.dags.values():
                for step in dag.steps.values():
                    if step.status == "active":
                        fields = {"status": "pending", "updated_at": change.now}
                        change.put_step(step.model_copy(update=fields))
        return moved
