"""Executor: runs the ready steps of a goal's step DAG in waves.

The step DAG lives in the ContextEngine; the executor only reads it and reports each
step's start, result and failure back to it, so a crash between steps loses nothing and
completed steps are never run twice.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from soothe.engine.agent.read_only import is_read_only_request
from soothe.engine.interact import ClarificationRequest, ClarificationResponse, InteractBroker
from soothe.engine.llm.errors import LLMError, ModelErrorKind
from soothe.engine.scope import Scope
from soothe.engine.text import clip

if TYPE_CHECKING:
    from collections.abc import Sequence

    from soothe.engine.agent.core import CoreAgent
    from soothe.engine.agent.tools import ToolOutcome
    from soothe.engine.context import ContextEngine
    from soothe.engine.context.models import EvidenceEntry, StepNode
    from soothe.engine.llm.usage import UsageTotals

AUTO_ANSWER = "No answer from the user: use your best judgement."

STOP_KINDS = frozenset(
    {
        "unreachable",
        "model_not_found",
        "no_tool_support",
        "bad_credentials",
        "timeout",
        "run_limit",
        "goal_budget",
        "context_overflow",
    }
)
"""Model errors no replanning can get around: the run stops with the model's error and
the step stays pending, to run when the goal is resumed. A timeout is one: a server that
stalled for a step would stall for the replan's steps too (each waiting the timeout
again); so are the run's own limits (``run.deadline``, ``run.max_model_calls``), a goal's
own budget (``goal_budget``: the goal is suspended at its cap), and a
step prompt that cannot fit the context window (every replan's step would not either)."""


CHANGE_TOOLS = frozenset({"write_file", "edit_file"})
"""The tools whose success is a change of the workspace (a file written or edited)."""

NO_CHANGE = "the change did not happen"
"""How the error of a step that tried to change a file and could not begins."""


def missing_change(outcomes: Sequence[ToolOutcome], request: str) -> str | None:
    """Why a step did not make the change it set out to make, or None.

    The rule (issue 31): a step *needed* a change when the user's request asks for one
    (``read_only.is_read_only_request`` is False: it says write, edit, add, fix,
    create...) and the step called ``write_file`` or ``edit_file``: the step's own calls
    say it was the step that changes files. The step description alone does not say it
    ("Write a summary of README.md" is answered in prose), and a read-only request needs
    no change even when its step tries one (a file's planted instructions, a confused
    small model). It *got* none when every one of those calls failed: refused, denied,
    "'old' text not found", invalid arguments. Such a step has not done its work,
    whatever its answer claims, so it fails with this reason. Other tools' failures (a
    test run that exits 1, a missing file read) are results an answer may report."""
    if is_read_only_request(request):
        return None
    tried = [o for o in outcomes if o.tool in CHANGE_TOOLS and not o.source]
    if not tried or any(o.ok for o in tried):
        return None
    seen: dict[str, str] = {}
    for o in tried:
        where = str(o.args.get("path") or "")
        # The output's first clause: what happened, not what the model was told to do.
        seen.setdefault(f"{o.tool}({clip(where, 60)})", clip(o.output.split("; ")[0], 160))
    shown = [f"{call}: {output}" for call, output in list(seen.items())[-2:]]
    times = "" if len(tried) == 1 else f" ({len(tried)} tries)"
    return f"{NO_CHANGE}{times}: " + "; ".join(shown)


def made_change(steps: Sequence[StepNode], evidence: Sequence[EvidenceEntry]) -> bool:
    """True when a completed step of the goal changed a file: it has the tool evidence of
    a ``write_file``/``edit_file`` call (a completed step that called one has had one
    succeed, ``missing_change``)."""
    done = {s.id for s in steps if s.status == "completed"}
    return any(
        e.kind == "tool" and e.step_id in done and e.summary.split("(", 1)[0] in CHANGE_TOOLS
        for e in evidence
    )


def change_failed(steps: Sequence[StepNode]) -> list[str]:
    """The goal's steps that failed because the change they tried did not happen."""
    return [s.id for s in steps if s.status == "failed" and s.error.startswith(NO_CHANGE)]


@dataclass
class WaveReport:
    completed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    last_answer: str = ""
    waves: int = 0
    model_calls: int = 0
    unknown_dependencies: list[str] = field(default_factory=list)
    stopped: LLMError | None = None


class ClarificationPolicy:
    """How an ask_user step gets its answers: ask the user, assume, or fail."""

    def __init__(
        self,
        mode: Literal["ask", "auto", "fail"],
        broker: InteractBroker | None,
        timeout: float | None = None,
    ) -> None:
        self.mode = mode
        self.broker = broker
        self.timeout = timeout

    async def resolve(
        self, questions: list[str], scope: Scope
    ) -> tuple[bool, str, Literal["answered", "skipped", "auto", "timeout", "cancelled", "fail"]]:
        if self.mode == "fail":
            return False, "clarification needed but the policy is 'fail'", "fail"
        if self.mode == "auto" or self.broker is None:
            return True, AUTO_ANSWER, "auto"
        request = ClarificationRequest(questions=questions, **scope.fields())
        response: ClarificationResponse = await self.broker.ask(request, timeout=self.timeout)
        if response.outcome == "answered" and any(a.strip() for a in response.answers):
            lines = [
                f"Q: {q}\nA: {a.strip() or '(no answer)'}"
                for q, a in zip(questions, response.answers, strict=False)
            ]
            return True, "\n".join(lines), "answered"
        if response.outcome == "cancelled":
            return False, "clarification cancelled", "cancelled"
        return True, AUTO_ANSWER, response.outcome


class Executor:
    def __init__(
        self,
        context: ContextEngine,
        agent: CoreAgent,
        clarify: ClarificationPolicy,
        max_parallel: int = 4,
        usage: UsageTotals | None = None,
    ) -> None:
        self.context = context
        self.agent = agent
        self.clarify = clarify
        self.max_parallel = max_parallel
        self.usage = usage
        """The hub's usage totals: a step's tokens are read from them (StepNode.tokens)."""

    async def run(
        self,
        goal_id: str,
        *,
        mode: Literal["parallel", "dependency"],
        scope: Scope,
    ) -> WaveReport:
        report = WaveReport()
        dag = self.context.step_dag(goal_id)
        for step in list(dag.steps.values()):
            if step.status == "active":  # left running by a crash or an interrupt
                await self.context.reset_step(goal_id, step.id, "left running by an earlier run")
        while True:
            ready = [s for s in self.context.step_dag(goal_id).ready_steps()]
            if not ready:
                break
            # Both modes run by the step DAG in waves: every ready step of a wave together,
            # up to max_parallel (the seed's dependency mode runs the DAG's waves, not one
            # step at a time); a step waiting on one of the wave runs in a later wave.
            wave = ready[: self.max_parallel]
            report.waves += 1
            results = await asyncio.gather(
                *(self._run_step(goal_id, s, scope, report) for s in wave)
            )
            if report.stopped is not None:
                raise report.stopped
            for step, (ok, answer) in zip(wave, results, strict=True):
                if ok:
                    report.completed.append(step.id)
                    report.last_answer = answer
                else:
                    report.failed.append(step.id)
        # Also what an earlier, interrupted run of this plan left failed (a cancelled
        # step): the plan did not succeed, whoever ran it.
        for step in self.context.step_dag(goal_id).steps.values():
            if step.status == "skipped" and step.id not in report.skipped:
                report.skipped.append(step.id)
            if step.status == "failed" and step.id not in report.failed:
                report.failed.append(step.id)
        return report

    async def _run_step(
        self,
        goal_id: str,
        step: Any,
        scope: Scope,
        report: WaveReport,
    ) -> tuple[bool, str]:
        step_scope = scope.at(goal_id=goal_id, step_id=step.id)
        started = time.perf_counter()
        tokens_before = self._tokens(goal_id, step.id)
        await self.context.start_step(goal_id, step.id)
        try:
            if step.kind == "ask_user":
                ok, answer = await self._ask_user(goal_id, step, step_scope)
            else:
                ok, answer = await self._action(goal_id, step, step_scope, report)
        except asyncio.CancelledError:
            # Suspended, not failed: back to pending, and the step's checkpoint (CoreAgent)
            # continues it where it was when the goal is resumed.
            await asyncio.shield(
                self.context.reset_step(goal_id, step.id, "interrupted by the user")
            )
            raise
        except LLMError as exc:  # STOP_KINDS, from _action: the step did not really run
            await self.context.reset_step(goal_id, step.id, clip(str(exc), 200))
            report.stopped = report.stopped or exc
            return False, str(exc)
        except Exception as exc:  # an engine bug must fail the step, not the app
            ok, answer = False, f"{type(exc).__name__}: {exc}"
        duration = time.perf_counter() - started
        if ok:
            await self.context.complete_step(
                goal_id,
                step.id,
                summary=clip(answer, 600),
                tokens=self._tokens(goal_id, step.id) - tokens_before,
                duration_s=duration,
            )
            if answer.strip() and step.kind != "ask_user":  # ask_user records its own
                await self.context.add_evidence(
                    goal_id,
                    kind="ledger",
                    summary=f"{step.id}: {clip(answer, 160)}",
                    content=answer,
                    step_id=step.id,
                )
        else:
            await self.context.fail_step(goal_id, step.id, clip(answer, 400))
        return ok, answer

    def _tokens(self, goal_id: str, step_id: str) -> int:
        return self.usage.step(goal_id, step_id).total_tokens if self.usage else 0

    async def _ask_user(self, goal_id: str, step: Any, scope: Scope) -> tuple[bool, str]:
        goal = self.context.get_goal(goal_id)
        waiting = self.clarify.mode == "ask" and self.clarify.broker is not None
        if waiting and goal.status == "active":
            await self.context.await_clarification(goal_id)
        try:
            ok, text, outcome = await self.clarify.resolve(list(step.questions), scope)
        finally:
            if waiting and self.context.get_goal(goal_id).status == "awaiting_clarification":
                await asyncio.shield(self._reactivate(goal_id))
        if ok:
            label = "answers from the user" if outcome == "answered" else f"clarification {outcome}"
            await self.context.add_evidence(
                goal_id,
                kind="ledger",
                summary=f"{step.id}: {label}",
                content=text,
                step_id=step.id,
            )
        return ok, text

    async def _reactivate(self, goal_id: str) -> None:
        # awaiting_clarification may only go back through pending (DESIGN.md table), and
        # pending clears the goal's loop_id: give it back, or the goal leaves its loop.
        loop_id = self.context.get_goal(goal_id).loop_id
        await self.context.resume_goal(goal_id)
        await self.context.activate_goal(goal_id, loop_id=loop_id)

    async def _action(
        self,
        goal_id: str,
        step: Any,
        scope: Scope,
        report: WaveReport,
    ) -> tuple[bool, str]:
        goal = self.context.get_goal(goal_id)
        outcome = await self.agent.run_step(
            goal=goal.description,
            step_id=step.id,
            description=step.description,
            expected_output=getattr(step, "expected_output", "") or "",
            # Projected per step, so a later wave sees what earlier waves found.
            context_text=self.context.project(goal_id).render(),
            evidence_text=self.context.evidence_summary(goal_id),
            scope=scope,
        )
        report.model_calls += outcome.model_calls
        if not outcome.ok and outcome.error_kind in STOP_KINDS:
            raise LLMError(ModelErrorKind(outcome.error_kind), outcome.error or "")
        for tool in outcome.tool_outcomes:
            args = ", ".join(f"{k}={clip(str(v), 40)}" for k, v in tool.args.items())
            await self.context.add_evidence(
                goal_id,
                kind="tool",
                # An MCP tool's evidence names its server (provenance).
                summary=clip(
                    f"{tool.source + ' ' if tool.source else ''}{tool.tool}({args}) -> "
                    f"{tool.output}",
                    160,
                ),
                content=tool.output,
                step_id=step.id,
            )
        if outcome.ok and (why := missing_change(outcome.tool_outcomes, goal.description)):
            return False, why  # it said it was done; its tools say otherwise
        if outcome.ok:
            return True, outcome.answer
        return False, outcome.error or "step failed"
