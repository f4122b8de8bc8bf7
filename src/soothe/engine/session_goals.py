"""The goal commands and views a Session offers the screens (a part of ``Session``).

Kept apart from session.py, which builds and owns the engine: these are thin calls into
the ContextEngine, and the read-only views (``engine.views``) the widgets hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from soothe.engine.goal_contract import GoalBudget
from soothe.engine.views import EvidenceView, GoalView, StepView

if TYPE_CHECKING:
    from soothe.engine.context import ContextEngine


class SessionGoals:
    """Mixed into ``Session``; needs its ``context``, ``thread_id``, ``ensure_thread``."""

    context: ContextEngine
    thread_id: str
    _started: bool

    if TYPE_CHECKING:  # defined by Session

        async def ensure_thread(self, text: str = "") -> str: ...

    def goals(self) -> list[GoalView]:
        if not self._started:
            return []
        return [self._goal_view(g) for g in self.context.list_goals(thread_id=self.thread_id)]

    def _goal_view(self, goal: Any) -> GoalView:
        steps = [
            StepView(
                id=s.id,
                description=s.description,
                kind=s.kind,
                status=s.status,
                dependencies=list(s.dependencies),
            )
            for s in self.context.step_dag(goal.id).steps.values()
        ]
        return GoalView(
            id=goal.id,
            description=goal.description,
            status=goal.status,
            priority=goal.priority,
            parent_id=goal.parent_id,
            depends_on=list(goal.depends_on),
            steps=steps,
            findings=goal.findings or "",
            error=goal.error or "",
            criteria=list(goal.criteria),
            budget=goal.budget,
            spent=goal.spent,
        )

    def evidence(self, goal_id: str | None = None) -> list[EvidenceView]:
        if not self._started:
            return []
        ids = (
            [goal_id]
            if goal_id
            else [g.id for g in self.context.list_goals(thread_id=self.thread_id)]
        )
        return [
            EvidenceView(
                evidence_id=e.id,
                kind=e.kind,
                summary=e.summary,
                content=e.content,
                goal_id=e.goal_id,
                step_id=e.step_id,
            )
            for gid in ids
            for e in self.context.evidence(gid)
        ]

    async def add_goal(
        self,
        description: str,
        *,
        priority: int = 50,
        criteria: Sequence[str] = (),
        budget: GoalBudget | None = None,
    ) -> str:
        thread_id = await self.ensure_thread(description)
        goal = await self.context.create_goal(
            description,
            priority=priority,
            thread_id=thread_id,
            source="user",
            criteria=criteria,
            budget=budget,
        )
        return goal.id

    async def set_criteria(self, goal_id: str, criteria: Sequence[str]) -> None:
        """Replace the goal's done-when criteria (published as goal.criteria_set)."""
        await self.context.set_criteria(goal_id, criteria)

    async def add_dependency(self, goal_id: str, depends_on: str) -> None:
        await self.context.add_dependency(goal_id, depends_on)

    async def remove_dependency(self, goal_id: str, depends_on: str) -> None:
        await self.context.remove_dependency(goal_id, depends_on)

    def dependency_candidates(self, goal_id: str) -> list[str]:
        """This thread's goals ``goal_id`` may newly wait for: not itself, not already a
        dependency, none that would close a cycle (``ContextEngine.would_cycle``)."""
        if not self._started:
            return []
        goal = self.context.get_goal(goal_id)
        return [
            other.id
            for other in self.context.list_goals(thread_id=self.thread_id)
            if other.id != goal_id
            and other.id not in goal.depends_on
            and not self.context.would_cycle(goal_id, other.id)
        ]

    async def cancel_goal(self, goal_id: str) -> None:
        await self.context.cancel_goal(goal_id, reason="cancelled by the user")

    async def toggle_suspend(self, goal_id: str) -> None:
        goal = self.context.get_goal(goal_id)
        if goal.status == "suspended":
            await self.context.resume_goal(goal_id)
        else:
            await self.context.suspend_goal(goal_id, reason="suspended by the user")

    async def set_budget(self, goal_id: str, budget: GoalBudget) -> None:
        """Replace the goal's caps (``b`` in the tree; published as goal.budget)."""
        await self.context.set_budget(goal_id, budget)

    async def resume_with_budget(self, goal_id: str, budget: GoalBudget) -> None:
        """A goal suspended at one of its caps: the caps raised, then resumed (pending).
        Raised too little (still at a cap) it is not resumed: it would stop at once."""
        await self.context.set_budget(goal_id, budget)
        reached = self.context.over_budget(goal_id)
        if reached:
            raise ValueError(f"{goal_id} is still at its {reached}: raise that cap to resume it")
        await self.context.resume_goal(goal_id, reason="resumed with a raised budget")

    async def retry_goal(self, goal_id: str) -> None:
        goal = self.context.get_goal(goal_id)
        if goal.status == "failed":  # the user asked: a fresh retry budget
            await self.context.retry_goal_fresh(goal_id)
        else:
            await self.context.resume_goal(goal_id)

    async def set_priority(self, goal_id: str, priority: int) -> None:
        await self.context.set_priority(goal_id, max(0, min(100, priority)))

    async def steer(self, goal_id: str, text: str) -> None:
        """The user's note to a goal (``/steer``): kept in its ledger, read by the planner
        at its next assessment, published as goal.steered."""
        text = text.strip()
        if not text:
            raise ValueError("a note needs some text: /steer TEXT")
        await self.context.steer_goal(goal_id, text)
