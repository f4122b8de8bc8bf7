"""Resume: continue a thread's unfinished goals from their loop checkpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from soothe.engine.events import (
    FinalAnswer,
    RunFinished,
    RunStarted,
)
from soothe.engine.llm.errors import LLMError, ModelErrorKind
from soothe.engine.loop.strange_loop import LoopExtras, LoopResult
from soothe.engine.runner.autonomous import AutonomousRunner
from soothe.engine.runner.base import TERMINAL

if TYPE_CHECKING:
    pass


class ResumeRunner(AutonomousRunner):
    def unfinished_goals(self, thread_id: str) -> list[Any]:
        # A goal that ever ran counts: crash recovery moves it to pending, which clears
        # its loop_id (``_resume`` finds the loop again from the checkpoints).
        parents = self._open_parents(thread_id)
        return [
            g
            for g in self.context.list_goals(thread_id=thread_id)
            if g.status not in TERMINAL
            and (g.loop_id or g.started_at is not None or g.id in parents)
        ]

    def _open_parents(self, thread_id: str) -> dict[str, list[str]]:
        """Autonomous roots still blocked on their sub-goals -> the sub-goal ids."""
        goals = self.context.list_goals(thread_id=thread_id)
        children: dict[str, list[str]] = {}
        for g in goals:
            if g.parent_id:
                children.setdefault(g.parent_id, []).append(g.id)
        return {g.id: children[g.id] for g in goals if g.status == "blocked" and g.id in children}

    async def _resume(self, thread_id: str) -> tuple[str, tuple[str, ...]]:
        """Resume the thread's unfinished goals: (the last answer, the goals resumed)."""
        self.bus.publish(RunStarted(text="(resume)", mode="agentic", thread_id=thread_id))
        parents = self._open_parents(thread_id)
        answer = ""
        touched: list[str] = []
        for goal in self.unfinished_goals(thread_id):
            if goal.id in parents:
                continue  # an interrupted autonomous run: finished below
            touched.append(goal.id)
            if goal.status in ("suspended", "blocked", "awaiting_clarification"):
                await self.context.resume_goal(goal.id)
            loop_id = goal.loop_id or await self._last_loop_id(goal.id)
            if self.context.get_goal(goal.id).status != "active" and (
                await self.context.claim_goal(goal.id, loop_id=loop_id) is None
            ):  # not ready now (e.g. a conflicting goal runs elsewhere): it stays pending
                touched.pop()
                continue
            result = await self.continue_goal(goal.id, thread_id, loop_id)
            answer = self._answer_of(goal.id, result)
            await self.context.add_message(thread_id, "assistant", answer)
            self.bus.publish(FinalAnswer(text=answer, thread_id=thread_id, goal_id=goal.id))
        for root_id, children in parents.items():
            # Sub-goals that never started (e.g. waiting on the one interrupted) run now;
            # then the root closes and the report is made, as in ``_autonomous``.
            touched += [root_id, *children]
            await self._schedule(thread_id, children)
            await self._close_parent(root_id, children)
            answer = self._final_report(thread_id, [root_id, *children])
        self.bus.publish(RunFinished(thread_id=thread_id))
        return answer, tuple(touched)

    async def continue_goal(self, goal_id: str, thread_id: str, loop_id: str = "") -> LoopResult:
        """Run an active goal's loop on from its checkpoint (its latest loop unless
        ``loop_id`` is given), as a continuation, then verify it as the last round. Used
        by resume and by ``soothe worker`` for a goal whose worker died."""
        loop_id = loop_id or await self._last_loop_id(goal_id)
        try:
            result = await self.loop.run(
                goal_id=goal_id,
                loop_id=loop_id,
                thread_id=thread_id,
                intake="continuation",
                extras=LoopExtras(history=await self._history(thread_id)),
            )
            await self._verify(goal_id, thread_id, result, final_round=True)
        except LLMError as exc:
            if exc.kind == ModelErrorKind.goal_budget:
                raise await self._budget_stop(goal_id, exc) from None
            raise
        return result

    async def _last_loop_id(self, goal_id: str) -> str:
        """The latest of the goal's loops (named by ``_agentic``) with unfinished work."""
        for round_no in range(self.settings.loop.agentic_max_iterations, 0, -1):
            loop_id = f"{goal_id}-L{round_no}"
            if await self.loop.has_checkpoint(loop_id):
                return loop_id
        return f"{goal_id}-L1"
