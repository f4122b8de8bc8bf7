"""SootheRunner: the one entry point the TUI and the headless CLI both call.

``run`` routes a request (subagent -> direct, autonomous -> goals, quiz -> answer,
otherwise the agentic observe-act-verify loop). Its events go out on the bus, once; the
caller gets a ``RunOutcome`` back (so do ``resume`` and ``run_goals``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from soothe.engine.events import (
    Classified,
    ErrorEvent,
    FinalAnswer,
    FinalReport,
    RunFailed,
    RunFinished,
    RunStarted,
)
from soothe.engine.loop.executor import clip
from soothe.engine.loop.planner import PlanningContext, PlanningFailed
from soothe.engine.loop.strange_loop import LoopExtras, LoopResult, StrangeLoop
from soothe.engine.outcome import OutcomeStatus, RunOutcome
from soothe.engine.skills import UnknownSkill, load_skill, parse_invocation

if TYPE_CHECKING:
    from soothe.engine.agent.core import CoreAgent
    from soothe.engine.bus import EventBus
    from soothe.engine.classify import UnifiedClassifier
    from soothe.engine.config import Settings
    from soothe.engine.context import ContextEngine
    from soothe.engine.context.models import GoalNode
    from soothe.engine.llm.hub import ModelHub
    from soothe.engine.memory import Memory

TERMINAL = ("completed", "failed", "cancelled")
MAX_HISTORY_CHARS = 2000


class SootheRunner:
    def __init__(
        self,
        *,
        settings: Settings,
        bus: EventBus,
        context: ContextEngine,
        hub: ModelHub,
        loop: StrangeLoop,
        agent: CoreAgent,
        classifier: UnifiedClassifier,
        memory: Memory,
    ) -> None:
        self.settings = settings
        self.bus = bus
        self.context = context
        self.hub = hub
        self.loop = loop
        self.agent = agent
        self.classifier = classifier
        self.memory = memory

    # --- the public entry -------------------------------------------------------------

    async def run(
        self,
        text: str,
        thread_id: str | None = None,
        autonomous: bool = False,
        subagent: str | None = None,
    ) -> RunOutcome:
        """Run one request; its events go out on the bus, the caller gets the outcome."""
        thread_id = await self.ensure_thread(thread_id, text)
        return await self._route(text, thread_id, autonomous, subagent)

    async def resume(self, thread_id: str) -> RunOutcome:
        """Continue the unfinished goals of a thread from their checkpoints."""
        return await self._guarded(thread_id, self._resume)

    async def run_goals(self, thread_id: str) -> RunOutcome:
        """Run every ready goal of the thread through the scheduler (the TUI's /goal)."""
        started = time.perf_counter()
        calls_before = self.hub.usage.calls
        before = self._goal_ids(thread_id)
        ran = await self._schedule(thread_id, None)
        return self._outcome(
            thread_id, "answered", started, calls_before, before, touched=tuple(ran)
        )

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

    async def ensure_thread(self, thread_id: str | None, text: str = "") -> str:
        if thread_id:
            if self.context.get_thread(thread_id) is None:
                raise LookupError(f"no thread '{thread_id}' (see `soothe threads`)")
            return thread_id
        title = " ".join(text.split())[:60] or "new thread"
        return (await self.context.create_thread(title)).id

    # --- plumbing ---------------------------------------------------------------------

    def _goal_ids(self, thread_id: str) -> set[str]:
        return set(self._goal_ids_ordered(thread_id))

    def _goal_ids_ordered(self, thread_id: str) -> list[str]:
        return [g.id for g in self.context.list_goals(thread_id=thread_id)]

    def _outcome(
        self,
        thread_id: str,
        status: OutcomeStatus,
        started: float,
        calls_before: int,
        goals_before: set[str],
        *,
        answer: str = "",
        error: str = "",
        kind: str = "",
        touched: tuple[str, ...] = (),
    ) -> RunOutcome:
        """What the run ended with: the goals it created or resumed, its figures."""
        new = [g for g in self._goal_ids_ordered(thread_id) if g not in goals_before]
        return RunOutcome(
            thread_id=thread_id,
            status=status,
            answer=answer,
            error=error,
            kind=kind,
            goal_ids=tuple(dict.fromkeys((*touched, *new))),
            model_calls=self.hub.usage.calls - calls_before,
            duration_s=time.perf_counter() - started,
        )

    async def _route(
        self, text: str, thread_id: str, autonomous: bool, subagent: str | None
    ) -> RunOutcome:
        started = time.perf_counter()
        calls_before = self.hub.usage.calls
        before = self._goal_ids(thread_id)
        mode = "subagent" if subagent else "autonomous" if autonomous else "auto"
        self.bus.publish(RunStarted(text=text, mode=mode, thread_id=thread_id))
        history = await self._history(thread_id)
        await self.context.add_message(thread_id, "user", text)
        try:
            answer = await self._dispatch(text, thread_id, autonomous, subagent, history)
        except asyncio.CancelledError:
            await asyncio.shield(self._interrupted(thread_id))
            raise
        except Exception as exc:
            error, kind = await self._failed(thread_id, exc)
            return self._outcome(
                thread_id, "failed", started, calls_before, before, error=error, kind=kind
            )
        await self.context.add_message(thread_id, "assistant", answer)
        await self.context.touch_thread(thread_id)
        outcome = self._outcome(thread_id, "answered", started, calls_before, before, answer=answer)
        self.bus.publish(
            RunFinished(
                duration_s=outcome.duration_s,
                model_calls=outcome.model_calls,
                thread_id=thread_id,
            )
        )
        return outcome

    async def _interrupted(self, thread_id: str) -> None:
        await self._suspend_active(thread_id, "interrupted by the user")
        await self.context.add_message(thread_id, "system", "run interrupted")

    async def _failed(self, thread_id: str, exc: Exception) -> tuple[str, str]:
        """A run that raised: report it, and pause (not abandon) the goals it left active,
        so the thread can be resumed once the cause (e.g. a stopped server) is fixed."""
        message, kind = _one_line(exc), _kind(exc)
        await self._suspend_active(thread_id, f"run failed: {message}"[:300])
        self.bus.publish(RunFailed(error=message, kind=kind, thread_id=thread_id))
        await self.context.add_message(thread_id, "error", message)
        return message, kind

    async def _suspend_active(self, thread_id: str, reason: str) -> None:
        for goal in self.context.list_goals(thread_id=thread_id):
            if goal.status == "active":
                await self.context.suspend_goal(goal.id, reason=reason)

    async def _guarded(
        self, thread_id: str, work: Callable[[str], Awaitable[tuple[str, tuple[str, ...]]]]
    ) -> RunOutcome:
        """Errors and interrupts of a resume end like those of a request (``_route``)."""
        started = time.perf_counter()
        calls_before = self.hub.usage.calls
        before = self._goal_ids(thread_id)
        try:
            answer, touched = await work(thread_id)
        except asyncio.CancelledError:
            await asyncio.shield(self._interrupted(thread_id))
            raise
        except Exception as exc:
            error, kind = await self._failed(thread_id, exc)
            return self._outcome(
                thread_id, "failed", started, calls_before, before, error=error, kind=kind
            )
        return self._outcome(
            thread_id, "answered", started, calls_before, before, answer=answer, touched=touched
        )

    async def _history(self, thread_id: str) -> str:
        messages = await self.context.messages(thread_id, limit=12)
        lines = [f"{m.role}: {' '.join(m.content.split())}" for m in messages]
        text = "\n".join(lines)
        return text[-MAX_HISTORY_CHARS:]

    async def _dispatch(
        self, text: str, thread_id: str, autonomous: bool, subagent: str | None, history: str
    ) -> str:
        ids = {"thread_id": thread_id}
        skill_text = ""
        invocation = parse_invocation(text)
        if invocation:
            name, rest = invocation
            try:
                skill = load_skill(self.settings, name)
            except UnknownSkill as exc:
                raise ValueError(str(exc)) from None
            skill_text = skill.text()
            text = rest or f"Follow the '{name}' skill."
        if subagent:
            return await self._direct(text, thread_id, subagent)
        if autonomous:
            return await self._autonomous(text, thread_id, history, skill_text)
        if invocation:
            label = "complex"
        else:
            result = await self.classifier.classify(text, history=history, ids=ids)
            self.bus.publish(
                Classified(
                    label=result.label,
                    reason=result.reason,
                    answered=bool(result.answer.strip()) and result.label in ("quiz", "trivial"),
                    thread_id=thread_id,
                )
            )
            if result.label in ("quiz", "trivial") and result.answer.strip():
                self.bus.publish(FinalAnswer(text=result.answer, thread_id=thread_id))
                return result.answer
            label = result.label
        goal = await self.context.create_goal(text, thread_id=thread_id, source="user")
        answer = await self._agentic(goal.id, thread_id, label, history, skill_text)
        self.bus.publish(FinalAnswer(text=answer, thread_id=thread_id, goal_id=goal.id))
        return answer

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
        ids = {"thread_id": thread_id, "loop_id": f"{goal.id}-direct", "goal_id": goal.id}
        outcome = await self.agent.run_step(
            goal=text,
            step_id="D-01",
            description=text,
            expected_output="the answer",
            context_text=self.context.project(goal.id).render(),
            evidence_text="",
            ids={**ids, "step_id": "D-01"},
        )
        if outcome.ok:
            await self.context.complete_goal(goal.id, findings=outcome.answer)
            self.bus.publish(FinalAnswer(text=outcome.answer, **ids))
            return outcome.answer
        await self.context.fail_goal(goal.id, error=outcome.error or "", allow_retry=False)
        raise RuntimeError(outcome.error or "the agent failed")

    # --- autonomous: goals, decomposition, scheduler ----------------------------------

    async def _autonomous(self, text: str, thread_id: str, history: str, skill: str) -> str:
        root = await self.context.create_goal(text, thread_id=thread_id, source="user")
        ctx = PlanningContext(goal=text, history=history, skill=skill)
        try:
            plan = await self.loop.planner.decompose(ctx, ids={"thread_id": thread_id})
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
        scheduler = self.context.planning.scheduler
        running: dict[asyncio.Task[None], str] = {}
        ran: list[str] = []

        def schedulable(goal: GoalNode) -> bool:
            busy = running.values()
            return (
                goal.thread_id == thread_id
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

    # --- resume -----------------------------------------------------------------------

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
            await self.context.activate_goal(goal.id, loop_id=loop_id)
            history = await self._history(thread_id)
            result = await self.loop.run(
                goal_id=goal.id,
                loop_id=loop_id,
                thread_id=thread_id,
                intake="continuation",
                extras=LoopExtras(history=history),
            )
            await self._verify(goal.id, thread_id, result, final_round=True)
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

    async def _last_loop_id(self, goal_id: str) -> str:
        """The latest of the goal's loops (named by ``_agentic``) with unfinished work."""
        for round_no in range(self.settings.loop.agentic_max_iterations, 0, -1):
            loop_id = f"{goal_id}-L{round_no}"
            if await self.loop.has_checkpoint(loop_id):
                return loop_id
        return f"{goal_id}-L1"


def _first_loop_id(goal: GoalNode) -> str:
    """The loop a scheduled goal starts in: round 1 of ``_agentic``."""
    return f"{goal.id}-L1"


def _one_line(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())[:400]


def _kind(exc: BaseException) -> str:
    kind = getattr(exc, "kind", None)
    return str(kind) if kind else type(exc).__name__
