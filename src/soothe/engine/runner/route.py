"""SootheRunner: the one entry point the TUI and the headless CLI both call.

``run`` grounds a request (the deterministic loader: named files, the workspace listing,
project instructions), classifies it and dispatches it (subagent -> direct, autonomous ->
goals, quiz -> answer, otherwise the agentic observe-act-verify loop). A grounded request,
``/task TEXT`` and ``--task`` never take the quiz route; a quiz answer that echoes our own
labels or schema is rerouted to the task path. Its events go out on the
bus, once; the caller gets a ``RunOutcome`` back (so do ``resume`` and ``run_goals``).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from soothe.engine.agent.workspace import Workspace
from soothe.engine.classify import OfferedTool, mcp_offered
from soothe.engine.events import (
    Classified,
    FinalAnswer,
    RunFinished,
    RunStarted,
)
from soothe.engine.llm.budget import run_budget
from soothe.engine.loader import ground, split_task
from soothe.engine.outcome import RunOutcome
from soothe.engine.runner.base import Groundwork
from soothe.engine.runner.resume import ResumeRunner
from soothe.engine.scope import Scope
from soothe.engine.skills import UnknownSkill, load_skill, parse_invocation

if TYPE_CHECKING:
    from collections.abc import Sequence

    from soothe.engine.loop.strange_loop import Intake

FOLLOW_UP_GOALS = 3
"""How many of a thread's last finished goals inform a follow-up request."""


class SootheRunner(ResumeRunner):
    # --- the public entry -------------------------------------------------------------

    async def run(
        self,
        text: str,
        thread_id: str | None = None,
        autonomous: bool = False,
        subagent: str | None = None,
        criteria: Sequence[str] = (),
    ) -> RunOutcome:
        """Run one request; its events go out on the bus, the caller gets the outcome.
        ``/task TEXT`` forces the task path (never a quiz answer), and so do done-when
        ``criteria`` (the goal the request becomes carries them; ``soothe -p --done-when``)."""
        text, forced = split_task(text)
        thread_id = await self.ensure_thread(thread_id, text)
        return await self._route(text, thread_id, autonomous, subagent, forced, tuple(criteria))

    async def resume(self, thread_id: str) -> RunOutcome:
        """Continue the unfinished goals of a thread from their checkpoints."""
        return await self._guarded(thread_id, self._resume)

    async def run_goals(self, thread_id: str) -> RunOutcome:
        """Run every ready goal of the thread through the scheduler (the TUI's /goal)."""
        return await self._guarded(thread_id, self._run_ready)

    async def _run_ready(self, thread_id: str) -> tuple[str, tuple[str, ...]]:
        """The ready goals, run: (no answer of its own, the goals it ran)."""
        return "", tuple(await self._schedule(thread_id, None))

    async def _route(
        self,
        text: str,
        thread_id: str,
        autonomous: bool,
        subagent: str | None,
        forced: bool = False,
        criteria: tuple[str, ...] = (),
    ) -> RunOutcome:
        started = time.perf_counter()
        calls_before = self.hub.usage.calls
        before = self._goal_ids(thread_id)
        mode = "subagent" if subagent else "autonomous" if autonomous else "auto"
        self.bus.publish(RunStarted(text=text, mode=mode, thread_id=thread_id))
        try:  # from RunStarted on, an interrupt is said (RunFailed), however early
            history = await self._history(thread_id)
            await self.context.add_message(thread_id, "user", text)
            with run_budget(self.settings.run):  # run.deadline, run.max_model_calls
                answer = await self._dispatch(
                    text, thread_id, autonomous, subagent, history, forced=forced, criteria=criteria
                )
        except asyncio.CancelledError:
            await self._settle(self._interrupted(thread_id))
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

    async def _dispatch(
        self,
        text: str,
        thread_id: str,
        autonomous: bool,
        subagent: str | None,
        history: str,
        *,
        forced: bool = False,
        criteria: tuple[str, ...] = (),
    ) -> str:
        scope = Scope(thread_id)
        forced = forced or bool(criteria)  # a goal with a finish line, never a quiz answer
        skill_text = ""
        skill_name = ""
        invocation = parse_invocation(text)
        if invocation:
            name, rest = invocation
            try:
                skill = load_skill(self.settings, name)
            except UnknownSkill as exc:
                raise ValueError(str(exc)) from None
            skill_text, skill_name = skill.text(), name
            text = rest or f"Follow the '{name}' skill."
        if subagent and subagent not in ("core", "agent"):
            raise ValueError(f"unknown subagent '{subagent}'; available: core")
        workspace = Workspace.at(self.settings.tools.resolved_workspace())
        grounding = ground(text, workspace, forced=forced or bool(invocation))
        work = Groundwork(grounding, workspace, skill_name, skill_text)
        # Every route grounds: the loader's facts, the instructions and the skill become
        # bootstrap evidence of the goal the route creates (sub-goals see their root's).
        if subagent:
            return await self._direct(text, thread_id, subagent, work)
        if autonomous:
            if criteria:  # the root completes from its sub-goals' report, unverified
                raise ValueError("done-when criteria go on one goal: not with --autonomous")
            return await self._autonomous(text, thread_id, history, work)
        if invocation:
            label = "complex"
        else:
            result = await self.classifier.classify(
                text,
                history=history,
                ids=dict(scope.fields()),
                task=grounding.task,
                tools=await self._offered_tools(thread_id),
            )
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
        earlier = self._earlier_goals(thread_id)
        goal = await self.context.create_goal(
            text, thread_id=thread_id, source="user", criteria=criteria
        )
        await self._bootstrap(goal.id, work)
        # The skill text reaches every prompt through the goal's context bundle (plan,
        # step and completion), not only the planner's.
        intake = await self._follow_up(goal.id, earlier)
        answer = await self._agentic(goal.id, thread_id, label, history, intake=intake)
        self.bus.publish(FinalAnswer(text=answer, thread_id=thread_id, goal_id=goal.id))
        return answer

    async def _offered_tools(self, thread_id: str) -> list[OfferedTool]:
        """The tools a step may be offered, for routing: ours, then the configured MCP
        servers' (started here if they were not yet: a server that fails is its one
        error line, and routing goes on without its tools)."""
        from soothe.engine.agent.tools import tool_summaries

        tools = [OfferedTool(name, description) for name, description in tool_summaries()]
        mcp = getattr(self.agent.tool_ctx_factory, "mcp", None)
        if mcp is not None and mcp.configured:
            mcp.ids = {"thread_id": thread_id}
            tools += mcp_offered(await mcp.tools())
        return tools

    def _earlier_goals(self, thread_id: str) -> list[str]:
        """The thread's last finished top-level goals (completed or failed), oldest first:
        what a follow-up request in this thread may already be answered by."""
        done = [
            g.id
            for g in self.context.list_goals(thread_id=thread_id)
            if g.parent_id is None and g.status in ("completed", "failed")
        ]
        return done[-FOLLOW_UP_GOALS:]

    async def _follow_up(self, goal_id: str, earlier: list[str]) -> Intake:
        """A request in a thread with finished goals is a follow-up: those goals inform it
        (their findings and evidence summaries reach its prompts through the projection,
        bounded there) and its loop starts with an assessment (continuation intake), which
        may answer from what is already known without a new plan."""
        for gid in earlier:
            await self.context.add_informs(gid, goal_id)
        return "continuation" if earlier else "fresh"
