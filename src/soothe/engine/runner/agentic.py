"""The agentic route: observe (projection, memory recall) -> act (StrangeLoop) -> verify;
and the direct subagent route (one step straight through CoreAgent)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from soothe.engine.events import (
    ErrorEvent,
    FinalAnswer,
)
from soothe.engine.loop.strange_loop import LoopExtras, LoopResult
from soothe.engine.runner.base import TERMINAL, RunnerBase
from soothe.engine.scope import Scope
from soothe.engine.text import clip

if TYPE_CHECKING:
    pass


class AgenticRunner(RunnerBase):
    # --- agentic: observe -> act -> verify --------------------------------------------

    async def _observe(self, goal_id: str, thread_id: str, history: str, skill: str) -> LoopExtras:
        goal = self.context.get_goal(goal_id)
        recalled = await self.memory.recall(
            goal.description, thread_id=thread_id, limit=self.settings.memory.max_recall
        )
        memory_text = self.memory.render(recalled)
        known = {e.content for e in self.context.evidence(goal_id) if e.kind == "bootstrap"}
        for item in recalled:
            if item.text not in known:
                await self.context.add_evidence(
                    goal_id,
                    kind="bootstrap",
                    summary=f"recalled from thread {item.thread_id}: {clip(item.text, 120)}",
                    content=item.text,
                )
        return LoopExtras(history=history, memory=memory_text, skill=skill)

    async def _agentic(
        self, goal_id: str, thread_id: str, label: str, history: str, skill: str = ""
    ) -> str:
        rounds = self.settings.loop.agentic_max_iterations
        last = LoopResult("failed", "", 0, "not run")
        for round_no in range(1, rounds + 1):
            goal = self.context.get_goal(goal_id)
            if goal.status in TERMINAL:
                break
            extras = await self._observe(goal_id, thread_id, history, skill)
            loop_id = f"{goal_id}-L{round_no}"
            await self.context.activate_goal(goal_id, loop_id=loop_id)
            run = self.loop.run(
                goal_id=goal_id,
                loop_id=loop_id,
                thread_id=thread_id,
                intake="fresh" if round_no == 1 else "continuation",
                label=label,
                extras=extras,
            )
            result = await self._unless_cancelled(goal_id, run)
            if result is None:  # the user cancelled this goal while it ran
                break
            last = result
            if await self._verify(goal_id, thread_id, last, final_round=round_no == rounds):
                break
        return self._answer_of(goal_id, last)

    async def _unless_cancelled(
        self, goal_id: str, work: Awaitable[LoopResult]
    ) -> LoopResult | None:
        """Run a goal's loop; stop it (None) when that goal is cancelled meanwhile."""
        task = asyncio.ensure_future(work)

        def on_cancel(cancelled_id: str) -> None:
            if cancelled_id == goal_id and not task.done():
                task.cancel()

        remove = self.context.on("goal_cancelled", on_cancel)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            outer_cancelled = current is not None and current.cancelling() > 0
            if not outer_cancelled and self.context.get_goal(goal_id).status == "cancelled":
                return None
            raise
        finally:
            remove()
            if not task.done():
                task.cancel()

    async def _verify(
        self, goal_id: str, thread_id: str, result: LoopResult, *, final_round: bool
    ) -> bool:
        """Record the loop's outcome on the goal; True when the goal needs no more rounds."""
        # An exhausted loop has already written an answer saying what is done and what
        # is not; another round would only spend max_iterations again, so the user's
        # --max-iterations stays the real bound. Rounds are for failures worth retrying.
        if result.status in ("done", "exhausted"):
            note = "" if result.status == "done" else "iteration limit reached"
            if note:  # say so in the answer itself, where the user reads it
                limit = self.settings.loop.max_iterations
                result.answer = (
                    f"{result.answer.rstrip()}\n\n_Stopped at the iteration limit ({limit}); "
                    "the goal may be incomplete._"
                )
            await self.context.complete_goal(goal_id, findings=result.answer, report=note)
            await self.memory.store(
                result.answer, thread_id=thread_id, goal_id=goal_id, kind="finding"
            )
            return True
        goal = await self.context.fail_goal(
            goal_id, error=result.error, allow_retry=result.retryable
        )
        self.bus.publish(
            ErrorEvent(
                message=clip(result.error, 300), kind="loop", thread_id=thread_id, goal_id=goal_id
            )
        )
        return goal.status != "pending" or final_round

    def _answer_of(self, goal_id: str, result: LoopResult) -> str:
        goal = self.context.get_goal(goal_id)
        if goal.status == "completed":
            return goal.findings or result.answer
        if goal.status == "pending" and result.status == "failed":
            # Retries remained but the rounds ran out: the goal failed for good.
            return f"The goal could not be completed: {result.error}"
        return f"The goal could not be completed: {goal.error or result.error}"

    # --- subagent: one step straight through CoreAgent -------------------------------

    async def _direct(self, text: str, thread_id: str, subagent: str) -> str:
        if subagent not in ("core", "agent"):
            raise ValueError(f"unknown subagent '{subagent}'; available: core")
        goal = await self.context.create_goal(text, thread_id=thread_id, source="user")
        await self.context.activate_goal(goal.id, loop_id=f"{goal.id}-direct")
        scope = Scope(thread_id, loop_id=f"{goal.id}-direct", goal_id=goal.id)
        outcome = await self.agent.run_step(
            goal=text,
            step_id="D-01",
            description=text,
            expected_output="the answer",
            context_text=self.context.project(goal.id).render(),
            evidence_text="",
            ids=dict(scope.at(step_id="D-01").fields()),
        )
        if outcome.ok:
            await self.context.complete_goal(goal.id, findings=outcome.answer)
            self.bus.publish(FinalAnswer(text=outcome.answer, **scope.fields()))
            return outcome.answer
        await self.context.fail_goal(goal.id, error=outcome.error or "", allow_retry=False)
        raise RuntimeError(outcome.error or "the agent failed")
