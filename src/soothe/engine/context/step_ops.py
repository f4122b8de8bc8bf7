"""Step operations: installing a plan and moving steps through the step lifecycle table.

A step that can never run (a dependency failed or was skipped) is skipped at once, and so
are its own dependents, in the same write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from soothe.engine.context.errors import IllegalStepTransition, StepNotFound, StepNotReady
from soothe.engine.context.lifecycle import check_step_move
from soothe.engine.context.models import StepNode, StepSpec
from soothe.engine.context.steps import UnknownPolicy
from soothe.engine.context.store import UPSERT_STEP, step_removal_op, step_row
from soothe.engine.context.unit import Change, UnitOfWork
from soothe.engine.events import (
    StepCompleted,
    StepFailed,
    StepSkipped,
    StepStarted,
    StepSuspended,
)


def _step_move(
    change: Change, goal_id: str, step_id: str, to: str, **fields: Any
) -> StepNode | None:
    step = change.dag(goal_id).get(step_id)
    if step is None:
        raise StepNotFound(goal_id, step_id)
    if not check_step_move(goal_id, step_id, step.status, to):
        return None
    return change.put_step(
        step.model_copy(update={"status": to, "updated_at": change.now, **fields})
    )


def _cascade_skips(change: Change, goal_id: str) -> list[str]:
    """Skip every pending step whose dependency can no longer be satisfied (repeat until
    nothing changes: a skipped step kills its own dependents)."""
    skipped: list[str] = []
    dag = change.dag(goal_id)
    while True:
        dead = dag.dead_steps()
        if not dead:
            return skipped
        for step, why in dead:
            _step_move(change, goal_id, step.id, "skipped", error=why)
            change.emit(StepSkipped(**change.scope(goal_id, step.id).fields(), reason=why))
            skipped.append(step.id)


class StepOps:
    def __init__(self, uow: UnitOfWork) -> None:
        self._uow = uow

    def _get(self, goal_id: str, step_id: str) -> StepNode:
        step = self._uow.state.dags[goal_id].get(step_id)
        if step is None:
            raise StepNotFound(goal_id, step_id)
        return step

    async def set_plan(
        self,
        goal_id: str,
        steps: Sequence[StepSpec | Mapping[str, Any]],
        iteration: int,
        unknown_deps: UnknownPolicy,
    ) -> list[StepNode]:
        specs = [s if isinstance(s, StepSpec) else StepSpec.model_validate(s) for s in steps]
        async with self._uow.write() as change:
            current = change.dag(goal_id)
            new, removed, nodes = current.planned(specs, iteration, change.now, unknown_deps)
            change.dags[goal_id] = new
            change.ops += [step_removal_op(goal_id, sid) for sid in removed]
            change.ops += [(UPSERT_STEP, step_row(n)) for n in nodes if current.get(n.id) is not n]
            _cascade_skips(change, goal_id)
        dag = self._uow.state.dags[goal_id]
        return [dag.get(n.id) or n for n in nodes]

    async def start(self, goal_id: str, step_id: str) -> StepNode:
        async with self._uow.write() as change:
            dag = change.dag(goal_id)
            step = dag.get(step_id)
            if step is None:
                raise StepNotFound(goal_id, step_id)
            if step.status == "pending":
                waiting = dag.waiting_on(step_id)
                if waiting:
                    raise StepNotReady(goal_id, step_id, waiting)
            if _step_move(change, goal_id, step_id, "active"):
                change.emit(
                    StepStarted(
                        **change.scope(goal_id, step_id).fields(),
                        description=step.description,
                        kind=step.kind,
                    )
                )
        return self._get(goal_id, step_id)

    async def complete(
        self, goal_id: str, step_id: str, summary: str, tokens: int, duration_s: float
    ) -> StepNode:
        async with self._uow.write() as change:
            moved = _step_move(
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
                        **change.scope(goal_id, step_id).fields(),
                        summary=summary,
                        duration_s=duration_s,
                    )
                )
                _cascade_skips(change, goal_id)
        return self._get(goal_id, step_id)

    async def fail(self, goal_id: str, step_id: str, error: str, cancelled: bool) -> list[str]:
        async with self._uow.write() as change:
            skipped: list[str] = []
            if _step_move(change, goal_id, step_id, "failed", error=error):
                change.emit(
                    StepFailed(
                        **change.scope(goal_id, step_id).fields(),
                        error=error,
                        cancelled=cancelled,
                    )
                )
                skipped = _cascade_skips(change, goal_id)
        return skipped

    async def skip(self, goal_id: str, step_id: str, reason: str) -> list[str]:
        """pending (or active) -> skipped through the step table; the steps that depended
        on it are skipped with it. Already skipped: nothing happens. Returns the ids of
        the steps skipped, this one first."""
        async with self._uow.write() as change:
            skipped: list[str] = []
            if _step_move(change, goal_id, step_id, "skipped", error=reason):
                change.emit(StepSkipped(**change.scope(goal_id, step_id).fields(), reason=reason))
                skipped = [step_id, *_cascade_skips(change, goal_id)]
        return skipped

    async def reset(self, goal_id: str, step_id: str, reason: str) -> StepNode:
        async with self._uow.write() as change:
            step = change.dag(goal_id).get(step_id)
            if step is None:
                raise StepNotFound(goal_id, step_id)
            if step.status == "active":
                change.put_step(
                    step.model_copy(update={"status": "pending", "updated_at": change.now})
                )
                change.emit(StepSuspended(**change.scope(goal_id, step_id).fields(), reason=reason))
            elif step.status != "pending":
                raise IllegalStepTransition(goal_id, step_id, step.status, "pending")
        return self._get(goal_id, step_id)
