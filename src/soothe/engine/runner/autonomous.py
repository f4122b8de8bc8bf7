"""The autonomous route: decompose a request into sub-goals (planning.goal.decompose), run
them through the engine's scheduler (planning.scheduler), close the root, report."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from soothe.engine.events import (
    ErrorEvent,
    FinalAnswer,
    FinalReport,
)
from soothe.engine.loop.planner import PlanningContext, PlanningFailed
from soothe.engine.runner.agentic import AgenticRunner
from soothe.engine.runner.base import Groundwork, _one_line
from soothe.engine.scope import Scope
from soothe.engine.text import clip

if TYPE_CHECKING:
    from soothe.engine.context.models import GoalNode


class AutonomousRunner(AgenticRunner):
    async def _autonomous(self, text: str, thread_id: str, history: str, work: Groundwork) -> str:
        root = await self.context.create_goal(text, thread_id=thread_id, source="user")
        # The root's bootstrap evidence (facts, instructions, skill) reaches the
        # decomposition here and every sub-goal's plan and step prompts through the
        # projection, which shows a goal its ancestors' loader facts.
        await self._bootstrap(root.id, work)
        ctx = PlanningContext(
            goal=text, projection=self.context.project(root.id).render(), history=history
        )
        try:
            plan = await self.loop.planner.decompose(ctx, ids=dict(Scope(thread_id).fields()))
        except PlanningFailed:
            plan = None
        children: list[str] = []
        if plan and len(plan.subgoals) >= 2:
            # One transaction for the sub-goals; their edges go in one by one after, so an
            # edge the model proposed that closes a cycle is refused (by the engine's one
            # cycle check) and left out, not the whole decomposition.
            subgoals = await self.context.planning.goal.decompose(
                root.id,
                [{"description": s.description, "priority": s.priority} for s in plan.subgoals],
            )
            children = [g.id for g in subgoals]
            keys = {sub.key: g.id for sub, g in zip(plan.subgoals, subgoals, strict=True)}
            for sub in plan.subgoals:
                for dep in sub.depends_on:
                    if dep in keys and keys[dep] != keys[sub.key]:
                        await self._safe_edge(self.context.add_dependency, keys[sub.key], keys[dep])
                for src in sub.informs:
                    if src in keys and keys[src] != keys[sub.key]:
                        await self._safe_edge(self.context.add_informs, keys[src], keys[sub.key])
                for other in sub.conflicts_with:  # the scheduler never runs them together
                    if other in keys and keys[other] != keys[sub.key]:
                        await self._safe_edge(self.context.add_conflict, keys[sub.key], keys[other])
            await self.context.block_goal(root.id, reason="waiting for its sub-goals")
        await self._schedule(thread_id, children if children else [root.id])
        if children:
            await self._close_parent(root.id, children)
        return self._final_report(thread_id, [root.id, *children])

    async def _safe_edge(self, add: Callable[[str, str], Awaitable[Any]], a: str, b: str) -> None:
        try:
            await add(a, b)
        except ValueError as exc:  # a cycle the model proposed: leave the edge out
            self.bus.publish(ErrorEvent(message=_one_line(exc), kind="plan", goal_id=a))

    async def _close_parent(self, root_id: str, children: list[str]) -> None:
        goals = [self.context.get_goal(c) for c in children]
        findings = "\n\n".join(f"**{g.id}** {g.description}\n{g.findings}" for g in goals)
        await self.context.unblock_goal(root_id)
        if all(g.status == "completed" for g in goals):
            await self.context.activate_goal(root_id)
            await self.context.complete_goal(root_id, findings=findings)
        else:
            await self.context.activate_goal(root_id)
            failed = [g.id for g in goals if g.status != "completed"]
            await self.context.fail_goal(
                root_id, error=f"sub-goals not completed: {', '.join(failed)}", allow_retry=False
            )

    async def _schedule(self, thread_id: str, only: list[str] | None) -> list[str]:
        """Run the thread's ready goals through the engine's scheduler (at most
        max_parallel_goals active, never two conflicting goals together) until none is
        left; the ids of the goals it ran."""
        from soothe.engine.context.queue import runs_here

        scheduler = self.context.planning.scheduler
        running: dict[asyncio.Task[None], str] = {}
        ran: list[str] = []
        workspace = str(self.settings.tools.resolved_workspace())

        def schedulable(goal: GoalNode) -> bool:
            busy = running.values()
            return (
                goal.thread_id == thread_id
                and runs_here(goal, workspace)  # one tied to another folder waits for it
                and (only is None or goal.id in only)
                and goal.id not in busy  # between two rounds of its own loop
                and not any(c in busy for c in goal.conflicts_with)
            )

        try:
            while True:
                for goal in await scheduler.activate_next(_first_loop_id, schedulable):
                    task = asyncio.ensure_future(self._run_goal(goal.id, thread_id))
                    running[task] = goal.id
                    ran.append(goal.id)
                if not running:
                    return ran
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    running.pop(task)
                    task.result()
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def _run_goal(self, goal_id: str, thread_id: str) -> None:
        # Findings of goals that inform this one reach it through the projection.
        history = await self._history(thread_id)
        answer = await self._agentic(goal_id, thread_id, "complex", history)
        goal = self.context.get_goal(goal_id)
        if goal.status == "completed":
            self.bus.publish(FinalAnswer(text=answer, thread_id=thread_id, goal_id=goal_id))

    def _final_report(self, thread_id: str, goal_ids: list[str]) -> str:
        rows = []
        lines = ["# Report", ""]
        for goal_id in goal_ids:
            goal = self.context.get_goal(goal_id)
            rows.append(
                {
                    "goal_id": goal.id,
                    "description": goal.description,
                    "status": goal.status,
                    "findings": clip(goal.findings or goal.error or "", 600),
                }
            )
            lines.append(f"- **{goal.id}** [{goal.status}] {goal.description}")
            if goal.findings and goal.parent_id:
                lines.append(f"  {clip(goal.findings, 400)}")
            elif goal.error:
                lines.append(f"  error: {clip(goal.error, 200)}")
        root = self.context.get_goal(goal_ids[0])
        if root.findings and len(goal_ids) == 1:
            lines += ["", root.findings]
        text = "\n".join(lines)
        self.bus.publish(FinalReport(goals=rows, text=text, thread_id=thread_id))
        self.bus.publish(FinalAnswer(text=text, thread_id=thread_id, goal_id=goal_ids[0]))
        return text


def _first_loop_id(goal: GoalNode) -> str:
    """The loop a scheduled goal starts in: round 1 of ``_agentic``."""
    return f"{goal.id}-L1"
