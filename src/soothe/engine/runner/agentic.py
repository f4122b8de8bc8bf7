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
from soothe.engine.llm.errors import LLMError, ModelErrorKind
from soothe.engine.loop.executor import STOP_KINDS, missing_change
from soothe.engine.loop.planner import PlanningFailed
from soothe.engine.loop.strange_loop import Intake, LoopExtras, LoopResult
from soothe.engine.loop.verifier import unmet_text
from soothe.engine.runner.base import TERMINAL, Groundwork, RunnerBase
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
        # A finding of a goal that informs this one (a follow-up's earlier goals) is in
        # the projection already: recalling it again would only repeat it.
        recalled = [
            item
            for item in recalled
            if not (
                item.goal_id
                and self.context.has_goal(item.goal_id)
                and goal_id in self.context.get_goal(item.goal_id).informs
            )
        ]
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
        self,
        goal_id: str,
        thread_id: str,
        label: str,
        history: str,
        skill: str = "",
        intake: Intake = "fresh",
    ) -> str:
        """Observe -> act (StrangeLoop) -> verify, for up to ``agentic_max_iterations``
        rounds; a round after a failed one gets the failure and a reflection on it."""
        try:
            return await self._rounds(goal_id, thread_id, label, history, skill, intake)
        except LLMError as exc:
            if exc.kind == ModelErrorKind.goal_budget:
                raise await self._budget_stop(goal_id, exc) from None
            raise

    async def _rounds(
        self,
        goal_id: str,
        thread_id: str,
        label: str,
        history: str,
        skill: str,
        intake: Intake,
    ) -> str:
        rounds = self.settings.loop.agentic_max_iterations
        last = LoopResult("failed", "", 0, "not run")
        goal = self.context.get_goal(goal_id)
        # A goal retried later (ctrl+r, the scheduler) still sees why it failed before.
        previous = f"Earlier attempt: {goal.error}" if goal.error and goal.retry_count else ""
        for round_no in range(1, rounds + 1):
            goal = self.context.get_goal(goal_id)
            if goal.status in TERMINAL:
                break
            extras = await self._observe(goal_id, thread_id, history, skill)
            extras.previous_failure = previous
            loop_id = f"{goal_id}-L{round_no}"
            await self.context.activate_goal(goal_id, loop_id=loop_id)
            run = self.loop.run(
                goal_id=goal_id,
                loop_id=loop_id,
                thread_id=thread_id,
                intake=intake if round_no == 1 else "continuation",
                label=label,
                extras=extras,
            )
            result = await self._unless_cancelled(goal_id, run)
            if result is None:  # the user cancelled this goal while it ran
                break
            last = result
            finished, previous = await self._verify(
                goal_id, thread_id, last, final_round=round_no == rounds, round_no=round_no
            )
            if finished:
                break
        return self._answer_of(goal_id, last)

    async def _budget_stop(self, goal_id: str, exc: LLMError) -> LLMError:
        """A goal reached one of its caps (checked before each of its model calls): it is
        suspended with the cap named (``budget: tokens 200k``, through the one transition)
        and the run ends with an error that says so and how to go on."""
        from soothe.engine.goal_args import format_budget
        from soothe.engine.goal_budget import raised_budget, spend_line

        goal = self.context.get_goal(goal_id)
        reason = self.context.over_budget(goal_id) or exc.message
        if goal.status == "active":
            goal = await self.context.suspend_goal(goal_id, reason=reason)
        spent = self.context.goal_spend(goal_id)
        offer = format_budget(raised_budget(goal.budget, spent))
        return LLMError(
            ModelErrorKind.goal_budget,
            f"{goal_id} suspended at its {reason} (spent {spend_line(goal.budget, spent)}); "
            f"resume it with a raised cap, e.g. --budget {offer}",
            retryable=False,
        )

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
        self,
        goal_id: str,
        thread_id: str,
        result: LoopResult,
        *,
        final_round: bool,
        round_no: int = 1,
    ) -> tuple[bool, str]:
        """Judge the loop's outcome and move the goal: (no more rounds needed, what the
        next round is told about this one).

        done with an answer: active -> validated -> completed. done without an answer:
        sent back (send_back_goal) for another round. Exhausted with every step good and an
        answer: in the last round completed with the iteration-limit note, else sent back. Failed,
        or exhausted with failed steps: a reflection call, then fail_goal, which puts the
        goal back to pending while its max_retries allow (and the rounds do)."""
        scope = Scope(thread_id, goal_id=goal_id)
        clean_exhausted = (
            result.status == "exhausted" and not result.failed_steps and result.completed_steps
        )
        would_complete = result.answer.strip() and (
            result.status == "done" or (clean_exhausted and final_round)
        )
        unmet = await self._criteria_unmet(goal_id, result, scope) if would_complete else ""
        if unmet:
            return await self._not_met(goal_id, unmet, scope, final_round, round_no)
        if result.status == "done" and result.answer.strip():
            # An answer made from the workspace facts after planning failed says so in
            # its text (answer_check.FROM_FACTS_NOTE) and in the validation reason.
            reason = "answered from the workspace facts" if result.from_facts else "assessed done"
            if self.context.get_goal(goal_id).criteria:
                reason = "every done-when criterion met"
            await self.context.validate_goal(goal_id, reason=reason)
            await self.context.complete_goal(goal_id, findings=result.answer)
            await self.memory.store(
                result.answer, thread_id=thread_id, goal_id=goal_id, kind="finding"
            )
            return True, ""
        if clean_exhausted and final_round and result.answer.strip():
            # Every step succeeded; only the user's iteration bound stopped the loop. The
            # answer says so where the user reads it; nothing is stored as a finding.
            limit = self.settings.loop.max_iterations
            result.answer = (
                f"{result.answer.rstrip()}\n\n_Stopped at the iteration limit ({limit}); "
                "the goal may be incomplete._"
            )
            await self.context.complete_goal(
                goal_id, findings=result.answer, report="iteration limit reached"
            )
            return True, ""
        if result.status == "done":
            failure = "the loop said done but produced no answer"
        elif clean_exhausted and not result.answer.strip():
            failure = "the iteration limit was reached and the model gave no answer"
        elif clean_exhausted:
            failure = result.error or "iteration limit reached"
        else:
            failure = result.error or "the steps failed"
            if result.failed_steps and not result.error:
                failure += ": " + ", ".join(result.failed_steps)
        reflection = await self._reflect(goal_id, failure, scope) if not final_round else ""
        previous = f"Round {round_no}: {failure}" + (f"\n{reflection}" if reflection else "")
        if result.status == "done" or clean_exhausted:
            if final_round:
                goal = await self.context.fail_goal(goal_id, error=failure, allow_retry=False)
            else:
                goal = await self.context.send_back_goal(goal_id, reason=failure)
        else:
            retry = result.retryable and not final_round and "not worth retrying" not in reflection
            goal = await self.context.fail_goal(goal_id, error=failure, allow_retry=retry)
        if goal.status != "pending":
            self.bus.publish(ErrorEvent(message=clip(failure, 300), kind="loop", **scope.fields()))
        return goal.status != "pending", previous

    async def _criteria_unmet(self, goal_id: str, result: LoopResult, scope: Scope) -> str:
        """A goal with done-when criteria about to complete: the verifier's one call
        (``loop.verifier``); the criteria not met, as one line ("" when all are, or the
        goal has none: then no call is made)."""
        if not self.context.get_goal(goal_id).criteria:
            return ""
        judged = await self.loop.verifier.check(goal_id, result.answer, ids=scope)
        return unmet_text(judged)

    async def _not_met(
        self, goal_id: str, unmet: str, scope: Scope, final_round: bool, round_no: int
    ) -> tuple[bool, str]:
        """Done by the loop's account, but the verifier found criteria not met: the
        reasons go to the ledger (the next round's planner reads them) and the goal is
        sent back (send_back_goal: failed once its send-backs are spent); in the last
        round it fails, its error naming the criteria."""
        await self.context.append_ledger(
            goal_id, "system", clip(unmet, 600), "verify", thread_id=scope.thread_id
        )
        if final_round:
            goal = await self.context.fail_goal(goal_id, error=unmet, allow_retry=False)
        else:
            goal = await self.context.send_back_goal(goal_id, reason=unmet)
        if goal.status != "pending":
            self.bus.publish(
                ErrorEvent(message=clip(goal.error or unmet, 300), kind="loop", **scope.fields())
            )
        return goal.status != "pending", f"Round {round_no}: {unmet}"

    async def _reflect(self, goal_id: str, failure: str, scope: Scope) -> str:
        """One small structured call: what failed and what to try next (bounded)."""
        ctx = self.loop.planning_context(goal_id)
        try:
            got = await self.loop.planner.reflect(ctx, failure, ids=scope)
        except PlanningFailed:
            return ""  # the next round still gets the failure itself
        except LLMError as exc:
            if exc.kind.value in STOP_KINDS:
                raise  # the run cannot go on (a stalled server, the run's limits)
            return ""
        text = f"Reflection: {got.what_failed}. Try next: {got.try_next}."
        if not got.worth_retrying:
            text += " (The model judged it not worth retrying.)"
        await self.context.append_ledger(
            goal_id, "assistant", clip(text, 400), "verify", thread_id=scope.thread_id
        )
        return clip(text, 500)

    def _answer_of(self, goal_id: str, result: LoopResult) -> str:
        goal = self.context.get_goal(goal_id)
        if goal.status == "completed":
            return goal.findings or result.answer
        if goal.status == "pending" and result.status == "failed":
            # Retries remained but the rounds ran out.
            return f"The goal could not be completed: {result.error}"
        return f"The goal could not be completed: {goal.error or result.error}"

    # --- subagent: one step straight through CoreAgent -------------------------------

    async def _direct(self, text: str, thread_id: str, subagent: str, work: Groundwork) -> str:
        if subagent not in ("core", "agent"):
            raise ValueError(f"unknown subagent '{subagent}'; available: core")
        goal = await self.context.create_goal(text, thread_id=thread_id, source="user")
        await self._bootstrap(goal.id, work)  # the step's context bundle carries it
        await self.context.activate_goal(goal.id, loop_id=f"{goal.id}-direct")
        scope = Scope(thread_id, loop_id=f"{goal.id}-direct", goal_id=goal.id)
        outcome = await self.agent.run_step(
            goal=text,
            step_id="D-01",
            description=text,
            expected_output="the answer",
            context_text=self.context.project(goal.id).render(),
            evidence_text="",
            scope=scope.at(step_id="D-01"),
        )
        if outcome.ok and (why := missing_change(outcome.tool_outcomes, text)):
            outcome = outcome.model_copy(update={"ok": False, "error": why})
        if outcome.ok:
            await self.context.complete_goal(goal.id, findings=outcome.answer)
            self.bus.publish(FinalAnswer(text=outcome.answer, **scope.fields()))
            return outcome.answer
        await self.context.fail_goal(goal.id, error=outcome.error or "", allow_retry=False)
        raise RuntimeError(outcome.error or "the agent failed")
