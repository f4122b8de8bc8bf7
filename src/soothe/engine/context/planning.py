"""The planning facade: ``engine.planning.step``, ``.goal`` and ``.scheduler``.

These are deterministic helpers around the engine; the model-driven planning (what the
steps or sub-goals are) lives in the loop and hands its output to them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from soothe.engine.context.errors import PlanError, UnknownStepDependency
from soothe.engine.context.models import GoalNode, GoalSpec, StepNode, StepSpec
from soothe.engine.context.steps import UnknownPolicy

if TYPE_CHECKING:
    from soothe.engine.context.engine import ContextEngine


class PlanCheck(BaseModel):
    """The outcome of checking a plan without applying it."""

    ok: bool
    unknown: dict[str, list[str]] = Field(default_factory=dict)
    error: str = ""


class StepPlanning:
    def __init__(self, engine: ContextEngine) -> None:
        self._engine = engine

    def check(self, goal_id: str, steps: Sequence[StepSpec], iteration: int = 0) -> PlanCheck:
        """Would this plan apply? Reports unknown dependencies, duplicate ids, cycles."""
        dag = self._engine.step_dag(goal_id)
        try:
            dag.planned(steps, iteration, 0.0, "raise")
        except UnknownStepDependency as exc:
            return PlanCheck(ok=False, unknown=exc.unknown, error=str(exc))
        except PlanError as exc:
            return PlanCheck(ok=False, error=str(exc))
        return PlanCheck(ok=True)

    async def apply(
        self,
        goal_id: str,
        steps: Sequence[StepSpec],
        iteration: int | None = None,
        unknown_deps: UnknownPolicy = "raise",
    ) -> list[StepNode]:
        if iteration is None:
            iteration = self.next_iteration(goal_id)
        return await self._engine.set_plan(goal_id, steps, iteration, unknown_deps=unknown_deps)

    def ready(self, goal_id: str) -> list[StepNode]:
        return self._engine.step_dag(goal_id).ready_steps()

    def next_iteration(self, goal_id: str) -> int:
        return self._engine.step_dag(goal_id).max_iteration() + 1


class GoalPlanning:
    def __init__(self, engine: ContextEngine) -> None:
        self._engine = engine

    async def decompose(
        self,
        parent_id: str,
        subgoals: Sequence[str | GoalSpec | Mapping[str, Any]],
        *,
        sequential: bool = False,
    ) -> list[GoalNode]:
        """Create sub-goals of ``parent_id`` in one transaction (source "decomposition").

        With ``sequential`` each sub-goal depends on the one before it.
        """
        parent = self._engine.get_goal(parent_id)
        specs: list[GoalSpec] = []
        for index, item in enumerate(subgoals):
            if isinstance(item, str):
                spec = GoalSpec(description=item)
            elif isinstance(item, GoalSpec):
                spec = item.model_copy()
            else:
                spec = GoalSpec.model_validate(item)
            ref = spec.ref or f"__sub{index}"
            depends = list(spec.depends_on)
            if sequential and specs:
                depends.append(specs[-1].ref or "")
            specs.append(
                spec.model_copy(
                    update={
                        "parent_id": parent_id,
                        "source": "decomposition",
                        "thread_id": spec.thread_id or parent.thread_id,
                        "depends_on": depends,
                        "ref": ref,
                    }
                )
            )
        return await self._engine.create_goals(specs)

    def lineage(self, goal_id: str) -> list[GoalNode]:
        """The goal and its ancestors, root first."""
        engine = self._engine
        chain = [engine.get_goal(goal_id)]
        chain += [engine.get_goal(g) for g in engine._graph.ancestors(goal_id)]
        return chain[::-1]

    def related(self, goal_id: str) -> dict[str, list[str]]:
        """Every relation of one goal, in both directions."""
        engine = self._engine
        goal = engine.get_goal(goal_id)
        graph = engine._graph
        return {
            "depends_on": list(goal.depends_on),
            "dependents": list(graph.dependents.get(goal_id, {})),
            "informs": list(goal.informs),
            "informed_by": list(graph.informed_by.get(goal_id, {})),
            "conflicts_with": list(goal.conflicts_with),
            "children": list(graph.children.get(goal_id, {})),
            "parent": [goal.parent_id] if goal.parent_id else [],
        }

    def by_topic(self, topic: str) -> list[GoalNode]:
        """Goals sharing a topic, oldest first (the raw material of cross-loop dreaming)."""
        return [g for g in self._engine.list_goals() if topic and g.topic == topic]


class GoalScheduler:
    """Chooses which ready goals to activate, never more than ``max_parallel_goals`` active
    at once and never two conflicting goals together."""

    def __init__(self, engine: ContextEngine, max_parallel_goals: int) -> None:
        if max_parallel_goals < 1:
            raise ValueError("max_parallel_goals must be at least 1")
        self._engine = engine
        self.max_parallel_goals = max_parallel_goals

    def free_slots(self) -> int:
        return max(0, self.max_parallel_goals - self._engine._graph.count("active"))

    def next_goals(self, accept: Callable[[GoalNode], bool] | None = None) -> list[GoalNode]:
        """The ready goals to activate now, best first (only those ``accept`` takes, e.g.
        one thread's)."""
        slots = self.free_slots()
        picked: list[GoalNode] = []
        if not slots:
            return picked
        taken: set[str] = set()
        for goal in self._engine.ready_goals():
            if taken.intersection(goal.conflicts_with) or (accept and not accept(goal)):
                continue
            picked.append(goal)
            taken.add(goal.id)
            if len(picked) >= slots:
                break
        return picked

    def check_reactivatable_goals(self) -> list[GoalNode]:
        """Blocked or suspended goals whose dependencies are now met (every ``depends_on``
        completed), oldest first: the seed's list of goals that could go back to pending.
        Nothing is moved; the caller decides (``resume_goal``/``unblock_goal``)."""
        engine = self._engine
        paused = engine.list_goals(status=("blocked", "suspended"))
        return [
            goal
            for goal in paused
            if all(engine.get_goal(dep).status == "completed" for dep in goal.depends_on)
        ]

    async def activate_next(
        self,
        loop_id_for: Callable[[GoalNode], str | None] | None = None,
        accept: Callable[[GoalNode], bool] | None = None,
    ) -> list[GoalNode]:
        """Activate ``next_goals(accept)`` atomically (re-checked under the write lock)."""
        engine = self._engine
        async with engine._write() as change:
            chosen = self.next_goals(accept)
            for goal in chosen:
                loop_id = loop_id_for(goal) if loop_id_for else None
                engine._move(change, goal.id, "active", updates={"loop_id": loop_id})
        return [engine.get_goal(g.id) for g in chosen]


class PlanningFacade:
    def __init__(self, engine: ContextEngine, max_parallel_goals: int) -> None:
        self.step = StepPlanning(engine)
        self.goal = GoalPlanning(engine)
        self.scheduler = GoalScheduler(engine, max_parallel_goals)
