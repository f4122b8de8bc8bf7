"""Goal edges and the other changes that are not status moves: dependencies, informs,
conflicts, priority, and removing goals.

The dependency-cycle check lives here once (``dependency_cycle``); the facade offers it as
``ContextEngine.would_cycle`` so a front end can leave out choices ``add_dependency``
would refuse.
"""

from __future__ import annotations

from typing import Any

from soothe.engine.context.errors import CycleError, GoalInUse, InvalidGoal
from soothe.engine.context.graph import GoalGraph
from soothe.engine.context.models import GoalNode
from soothe.engine.context.store import goal_removal_ops
from soothe.engine.context.unit import Change, UnitOfWork
from soothe.engine.events import GoalRemoved, GoalUpdated
from soothe.engine.scope import Scope


def dependency_cycle(graph: GoalGraph, goal_id: str, depends_on_id: str) -> list[str] | None:
    """The cycle ``goal_id depends_on depends_on_id`` would close (goal first and last),
    or None when the edge is safe. A goal depending on itself is a cycle."""
    path = graph.dependency_path(depends_on_id, goal_id)
    return None if path is None else [goal_id, *path]


def announce_update(change: Change, goal_id: str, **what: bool) -> None:
    """Queue the GoalUpdated for a change that is not a status move."""
    goal = change.goal(goal_id)
    fields: dict[str, Any] = {}
    for name in ("depends_on", "informs", "conflicts_with"):
        if what.get(name):
            fields[name] = list(getattr(goal, name))
    if what.get("priority"):
        fields["priority"] = goal.priority
    scope = Scope(thread_id=goal.thread_id, loop_id=goal.loop_id, goal_id=goal_id)
    change.emit(GoalUpdated(**scope.fields(), **fields))


def _without(items: tuple[str, ...], gone: str) -> tuple[str, ...]:
    return tuple(i for i in items if i != gone)


class EdgeOps:
    def __init__(self, uow: UnitOfWork) -> None:
        self._uow = uow

    @property
    def _graph(self) -> GoalGraph:
        return self._uow.state.graph

    def _get(self, goal_id: str) -> GoalNode:
        return self._uow.state.goal(goal_id)

    async def add_dependency(self, goal_id: str, depends_on_id: str) -> GoalNode:
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            change.goal(depends_on_id)
            if depends_on_id in goal.depends_on:
                return goal
            cycle = dependency_cycle(self._graph, goal_id, depends_on_id)
            if cycle is not None:
                raise CycleError(f"{goal_id} depends_on {depends_on_id}", cycle)
            change.update(goal_id, depends_on=(*goal.depends_on, depends_on_id))
            announce_update(change, goal_id, depends_on=True)
        return self._get(goal_id)

    async def remove_dependency(self, goal_id: str, depends_on_id: str) -> GoalNode:
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            if depends_on_id not in goal.depends_on:
                return goal
            change.update(goal_id, depends_on=_without(goal.depends_on, depends_on_id))
            announce_update(change, goal_id, depends_on=True)
        return self._get(goal_id)

    async def add_informs(self, goal_id: str, informed_id: str) -> GoalNode:
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            change.goal(informed_id)
            if informed_id == goal_id:
                raise InvalidGoal(f"goal {goal_id} cannot inform itself")
            if informed_id in goal.informs:
                return goal
            change.update(goal_id, informs=(*goal.informs, informed_id))
            announce_update(change, goal_id, informs=True)
        return self._get(goal_id)

    async def add_conflict(self, goal_id: str, other_id: str) -> GoalNode:
        async with self._uow.write() as change:
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
            announce_update(change, goal_id, conflicts_with=True)
            announce_update(change, other_id, conflicts_with=True)
        return self._get(goal_id)

    async def set_priority(self, goal_id: str, priority: int) -> GoalNode:
        if not 0 <= priority <= 100:
            raise InvalidGoal(f"goal {goal_id}: priority {priority} is outside 0-100")
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            if goal.priority == priority:
                return goal
            change.update(goal_id, priority=priority)
            announce_update(change, goal_id, priority=True)
        return self._get(goal_id)

    # --- removal -----------------------------------------------------------------------

    def stage_removal(self, change: Change, goal_id: str, leaving: set[str]) -> None:
        """Remove one goal; soft edges (informs, conflicts) from goals that stay are cut."""
        goal = change.goal(goal_id)
        for src in self._graph.informed_by.get(goal_id, {}):
            if src not in leaving:
                other = change.goal(src)
                change.update(src, informs=_without(other.informs, goal_id))
                announce_update(change, src, informs=True)
        for partner in goal.conflicts_with:
            if partner not in leaving:
                other = change.goal(partner)
                change.update(partner, conflicts_with=_without(other.conflicts_with, goal_id))
                announce_update(change, partner, conflicts_with=True)
        change.remove(goal_id)
        change.ops += goal_removal_ops(goal_id)
        change.emit(GoalRemoved(**Scope(thread_id=goal.thread_id, goal_id=goal_id).fields()))

    async def remove_goal(self, goal_id: str) -> None:
        async with self._uow.write() as change:
            goal = change.goal(goal_id)
            dependents = list(self._graph.dependents.get(goal_id, {}))
            if dependents:
                raise GoalInUse(goal_id, "depended on by " + ", ".join(dependents))
            children = list(self._graph.children.get(goal_id, {}))
            if children:
                raise GoalInUse(goal_id, "it has sub-goals " + ", ".join(children))
            if goal.status == "active":
                raise GoalInUse(goal_id, "it is active")
            self.stage_removal(change, goal_id, {goal_id})
