"""StrangeLoop: one goal, iterated plan -> execute -> record, as a compiled LangGraph.

The graph state holds only plain data (ids, counters, the plan as a dict); goals and
steps stay in the ContextEngine. The graph checkpoints under ``loop_id`` so a loop that
was killed resumes from the node it was in, and the executor skips steps the
ContextEngine already has as completed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from soothe.engine.context.projection import bootstrap_tag
from soothe.engine.context.records import STEER_PHASE
from soothe.engine.context.steps import step_number
from soothe.engine.events import (
    IterationCompleted,
    IterationStarted,
    PlanAssessed,
    PlanCreated,
    PlannedStep,
    StepThinking,
    StepToken,
)
from soothe.engine.loop import answer_check, prompts, verifier
from soothe.engine.loop.executor import Executor, change_failed, clip, made_change
from soothe.engine.loop.planner import LLMPlanner, PlanningContext, PlanningFailed
from soothe.engine.loop.schemas import PlanGeneration, PlanResult
from soothe.engine.scope import Scope

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from soothe.engine.bus import EventBus
    from soothe.engine.context import ContextEngine
    from soothe.engine.llm.hub import ModelHub
    from soothe.engine.llm.packer import Prompt

Intake = Literal["fresh", "continuation"]


class LoopState(TypedDict, total=False):
    goal_id: str
    loop_id: str
    thread_id: str
    intake: str
    label: str
    iteration: int
    max_iterations: int
    status: str
    plan: dict[str, Any] | None
    plans_made: int
    terminal_after_execute: bool
    require_goal_completion: bool
    last_answer: str
    final_answer: str
    error: str
    error_kind: str
    last_failed: int
    rejected_done: int


@dataclass
class LoopResult:
    status: Literal["done", "exhausted", "failed"]
    answer: str
    iterations: int
    error: str = ""
    retryable: bool = True
    failed_steps: tuple[str, ...] = ()
    """Steps of the goal that ended failed or skipped (what the answer cannot rest on)."""
    completed_steps: int = 0
    from_facts: str = ""
    """Why planning failed when the answer was made from the workspace facts instead
    (``answer_check.facts_bear_on``); empty otherwise."""


@dataclass
class LoopExtras:
    """Context the runner gathered before the loop (bounded by the runner)."""

    history: str = ""
    memory: str = ""
    skill: str = ""
    previous_failure: str = ""
    """Round 2 and later: the earlier round's failure and the reflection on it."""


PLAN_LEDGER_ENTRIES = 4
"""How many of the planner's earlier reasonings a (re)plan sees."""

MAX_REFUSED_DONE = 2
"""A loop whose model says "done" this many times while the steps cannot carry it
(``_done_refused``) ends failed: another plan would be judged the same way, and the
iteration bound alone let a model that keeps failing the same edit spend ~40 calls."""


class StrangeLoop:
    def __init__(
        self,
        *,
        context: ContextEngine,
        hub: ModelHub,
        executor: Executor,
        bus: EventBus,
        checkpointer: Any,
        max_iterations: int = 8,
        execution_mode: Literal["parallel", "dependency"] = "parallel",
        small_model: bool = False,
    ) -> None:
        self.context = context
        self.hub = hub
        self.small_model = small_model
        self.planner = LLMPlanner(hub, small=small_model)
        self.verifier = verifier.Verifier(hub, context)
        """Checks a done goal's done-when criteria (called by the runner's verify)."""
        self.executor = executor
        self.bus = bus
        self.checkpointer = checkpointer
        self.max_iterations = max_iterations
        self.execution_mode = execution_mode
        self._extras: dict[str, LoopExtras] = {}
        self._graph = self._build()

    # --- graph ------------------------------------------------------------------------

    def _build(self) -> Any:
        from langgraph.graph import END, START, StateGraph

        graph = StateGraph(LoopState)
        graph.add_node("plan_assess", self._plan_assess)
        graph.add_node("plan_generate", self._plan_generate)
        graph.add_node("execute", self._execute)
        graph.add_node("record_iteration", self._record_iteration)
        graph.add_node("goal_completion", self._goal_completion)
        graph.add_conditional_edges(START, self._route_intake, ["plan_assess", "plan_generate"])
        graph.add_conditional_edges(
            "plan_assess",
            self._route_assess,
            ["plan_generate", "execute", "goal_completion", END],
        )
        graph.add_conditional_edges(
            "plan_generate", self._route_generated, ["execute", "goal_completion", END]
        )
        graph.add_edge("execute", "record_iteration")
        graph.add_conditional_edges(
            "record_iteration", self._route_record, ["plan_assess", "goal_completion"]
        )
        graph.add_edge("goal_completion", END)
        return graph.compile(checkpointer=self.checkpointer)

    @staticmethod
    def _route_intake(state: LoopState) -> str:
        fresh = state.get("intake") == "fresh" and not state.get("plan")
        return "plan_generate" if fresh else "plan_assess"

    @staticmethod
    def _route_assess(state: LoopState) -> str:
        from langgraph.graph import END

        if state.get("status") in ("done", "exhausted"):
            return "goal_completion"
        if state.get("status") == "failed":
            return END  # "done" refused too often (MAX_REFUSED_DONE)
        return "execute" if state.get("plan") else "plan_generate"

    @staticmethod
    def _route_generated(state: LoopState) -> str:
        from langgraph.graph import END

        if state.get("status") == "from_facts":
            return "goal_completion"  # planning failed; the facts answer instead
        return END if state.get("status") == "failed" else "execute"

    @staticmethod
    def _route_record(state: LoopState) -> str:
        if state.get("status") == "exhausted":
            return "goal_completion"
        if state.get("terminal_after_execute") and not state.get("last_failed"):
            return "goal_completion"
        return "plan_assess"

    # --- helpers ----------------------------------------------------------------------

    def _scope(self, state: LoopState) -> Scope:
        return Scope(state.get("thread_id", ""), loop_id=state["loop_id"], goal_id=state["goal_id"])

    async def _ledger_plan(self, state: LoopState, text: str) -> None:
        """The planner's reasoning for this iteration, so a later replan sees why."""
        if text.strip():
            iteration = state.get("iteration", 0) + 1
            await self.context.append_ledger(
                state["goal_id"],
                "assistant",
                clip(f"iteration {iteration}: {text}", 400),
                "plan",
                thread_id=state.get("thread_id", ""),
            )

    def _done_refused(self, goal_id: str) -> str:
        """Why the steps cannot carry a "done" ("" when they can).

        With steps: some step must have completed, and when the steps tried to change
        files (``executor.missing_change``), some change must have happened: a goal whose
        every attempted write or edit failed is not done, whatever the model says. With
        no step at all (a follow-up answered from what is known): when the request is
        about the workspace (the loader grounded it), the evidence of the thread's
        earlier goals must bear on it (``answer_check.thread_bears_on``); else it plans.
        """
        steps = list(self.context.step_dag(goal_id).steps.values())
        evidence = self.context.evidence(goal_id)
        if steps:
            failed = change_failed(steps)
            if failed and not made_change(steps, evidence):
                return f"the change did not happen ({', '.join(failed[-3:])} failed)"
            if not any(s.status == "completed" for s in steps):
                return "no step succeeded"
            return ""
        loader = {"listing", "file", "missing"}
        if not any(e.kind == "bootstrap" and bootstrap_tag(e.summary) in loader for e in evidence):
            return ""
        goal = self.context.get_goal(goal_id)
        earlier = [
            entry
            for g in self.context.list_goals(thread_id=goal.thread_id)
            if goal_id in g.informs
            for entry in self.context.evidence(g.id)
        ]
        if answer_check.thread_bears_on(goal.description, evidence, earlier):
            return ""
        return "no new step, and nothing this thread found bears on the request"

    def _planning_context(self, state: LoopState) -> PlanningContext:
        return self.planning_context(state["goal_id"], state["loop_id"])

    def planning_context(self, goal_id: str, loop_id: str = "") -> PlanningContext:
        """What the planner shows the model about this goal (also the reflection's view)."""
        goal = self.context.get_goal(goal_id)
        extras = self._extras.get(loop_id, LoopExtras())
        bundle = self.context.project(goal_id)
        # the user's notes have their own part (steering, kept when the window is tight):
        # not again in the ledger lines
        bundle = bundle.model_copy(
            update={"ledger": [line for line in bundle.ledger if line.phase != STEER_PHASE]}
        )
        steps = [
            f"- {s.id} [{s.status}] {clip(s.description, 100)}"
            + (f" => {clip(s.result_summary or '', 200)}" if s.result_summary else "")
            + (f" (error: {clip(s.error or '', 120)})" if s.error else "")
            for s in self.context.step_dag(goal_id).steps.values()
        ]
        return PlanningContext(
            goal=goal.description,
            projection=bundle.render(),
            evidence=self.context.evidence_summary(goal_id),
            steps="\n".join(steps[-10:]),
            history=extras.history,
            memory=extras.memory,
            skill=extras.skill,
            reasoning="\n".join(
                e.content
                for e in self.context.get_ledger_entries(goal_id, phases=["plan"])[
                    -PLAN_LEDGER_ENTRIES:
                ]
            ),
            previous_failure=extras.previous_failure,
            steering="\n".join(f"- {note}" for note in self.context.steering(goal_id)),
            criteria=verifier.numbered(goal.criteria),
        )

    def _gate(self, state: LoopState) -> bool:
        return state.get("iteration", 0) >= state.get("max_iterations", self.max_iterations)

    # --- nodes ------------------------------------------------------------------------

    async def _plan_assess(self, state: LoopState) -> dict[str, Any]:
        if self._gate(state):
            return {"status": "exhausted"}
        scope = self._scope(state)
        try:
            assessment = await self.planner.assess(self._planning_context(state), ids=scope)
        except PlanningFailed as exc:
            # An unreadable assessment is not fatal: plan afresh instead.
            return {"plan": None, "error": str(exc)}
        self.bus.publish(
            PlanAssessed(
                status=assessment.status,
                goal_progress=assessment.goal_progress,
                reasoning=assessment.reasoning,
                **scope.fields(),
            )
        )
        # "new" is what plan_generate then supplies; the decision here carries no plan yet.
        action = assessment.plan_action if assessment.status == "continue" else "new"
        result = PlanResult(
            status=assessment.status,
            goal_progress=assessment.goal_progress,
            plan_action="keep",
            confidence=assessment.confidence,
            execution_hint=assessment.execution_hint,
            next_action=assessment.next_action,
            reasoning=assessment.reasoning,
            require_goal_completion=assessment.require_goal_completion,
        )
        why = " ".join(
            x
            for x in (
                f"assessed {result.status} (progress {result.goal_progress}, "
                f"confidence {result.confidence}, plan {action}).",
                result.reasoning,
                f"Next: {result.next_action}" if result.next_action else "",
            )
            if x
        )
        goal_id = state["goal_id"]
        if result.status == "done":
            refused = "no progress" if result.goal_progress == "none" else ""
            refused = refused or self._done_refused(goal_id)
            if not refused:
                await self._ledger_plan(state, why)
                return {"status": "done", "require_goal_completion": result.require_goal_completion}
            # "done" with no progress, resting on no step that succeeded, on changes that
            # did not happen, or (no step at all) on nothing the thread found: not believed.
            why += f" Not accepted: {refused}."
            await self._ledger_plan(state, why)
            rejected = state.get("rejected_done", 0) + 1
            steps = list(self.context.step_dag(goal_id).steps.values())
            if rejected >= MAX_REFUSED_DONE and steps:
                failed = [s for s in steps if s.status in ("failed", "skipped") and s.error]
                error = f"the model said the goal was done, but {refused}"
                if failed:
                    error += f"; {failed[-1].id}: {clip(failed[-1].error, 240)}"
                return {"status": "failed", "error": error, "rejected_done": rejected}
            return {"status": "running", "plan": None, "rejected_done": rejected}
        await self._ledger_plan(state, why)
        has_ready = bool(self.context.step_dag(goal_id).ready_steps())
        if result.status == "continue" and action == "keep" and has_ready:
            return {"status": "running"}  # the plan is kept: no new plan call
        return {"status": "running", "plan": None}

    async def _plan_generate(self, state: LoopState) -> dict[str, Any]:
        if self._gate(state):
            return {"status": "exhausted"}
        scope = self._scope(state)
        goal_id = state["goal_id"]
        plan_no = state.get("plans_made", 0) + 1
        try:
            plan = await self.planner.generate(
                self._planning_context(state),
                ids=scope,
                prepare=lambda p: self._rename_colliding(goal_id, p, plan_no),
                dag=self.context.step_dag(goal_id),
            )
        except PlanningFailed as exc:
            # The model could not plan after repair and re-asks: another round would only
            # repeat that. When the loader's facts bear on a request that changes nothing,
            # they answer it (goal_completion); otherwise the runner fails the goal
            # without retrying (a change cannot be made from facts).
            if answer_check.answerable_from_facts(
                self.context.get_goal(goal_id).description, self.context.evidence(goal_id)
            ):
                await self.context.append_ledger(
                    goal_id,
                    "system",
                    clip(f"planning failed ({exc}); answering from the workspace facts", 400),
                    "plan",
                    thread_id=state.get("thread_id", ""),
                )
                return {"status": "from_facts", "error": str(exc)}
            return {"status": "failed", "error": str(exc), "error_kind": "planning"}
        if self.planner.fallback_notes:
            await self.context.append_ledger(
                goal_id,
                "system",
                clip("plan repaired: " + "; ".join(self.planner.fallback_notes), 400),
                "plan",
                thread_id=state.get("thread_id", ""),
            )
        await self._ledger_plan(state, f"new plan {plan_no}: {plan.reasoning or '(no reason)'}")
        await self.context.set_plan(
            state["goal_id"],
            [s.model_dump() for s in plan.steps],
            state.get("iteration", 0) + 1,
            unknown_deps="drop",  # small models name steps that do not exist
        )
        self.bus.publish(
            PlanCreated(
                iteration=state.get("iteration", 0) + 1,
                steps=[PlannedStep(**s.model_dump()) for s in plan.steps],
                execution_mode=plan.execution_mode,
                reasoning=plan.reasoning,
                **scope.fields(),
            )
        )
        first_fresh = state.get("intake") == "fresh" and state.get("plans_made", 0) == 0
        single = len(plan.steps) == 1 and plan.steps[0].kind == "action"
        terminal = first_fresh and single and state.get("label") in ("simple", "trivial")
        result = PlanResult(
            status="continue",
            plan_action="new",
            plan=plan,
            reasoning=plan.reasoning,
            terminal_after_execute=terminal,
            require_goal_completion=not terminal,
        )
        return {
            "status": "running",
            "plan": plan.model_dump(),
            "plans_made": state.get("plans_made", 0) + 1,
            "terminal_after_execute": result.terminal_after_execute,
            "require_goal_completion": result.require_goal_completion,
        }

    def _rename_colliding(self, goal_id: str, plan: PlanGeneration, plan_no: int) -> PlanGeneration:
        existing = set(self.context.step_dag(goal_id).steps)
        clash = {s.id for s in plan.steps if s.id in existing}
        if not clash:
            return plan
        renamed = {old: f"{old}.{plan_no}" for old in clash}
        # "01"-style dependencies meant this plan's own steps; a renamed id no longer ends
        # in that number ("S-01.2" is step 2), so bind them to the exact (new) ids.
        numbered: dict[int, list[str]] = {}
        for s in plan.steps:
            if (number := step_number(s.id)) is not None:
                numbered.setdefault(number, []).append(s.id)

        def target(dep: str) -> str:
            own = numbered.get(int(dep), []) if dep.isdigit() else []
            if len(own) == 1:
                dep = own[0]
            return renamed.get(dep, dep)

        steps = [
            s.model_copy(
                update={
                    "id": renamed.get(s.id, s.id),
                    "dependencies": [target(d) for d in s.dependencies],
                }
            )
            for s in plan.steps
        ]
        return plan.model_copy(update={"steps": steps})

    async def _execute(self, state: LoopState) -> dict[str, Any]:
        scope = self._scope(state)
        iteration = state.get("iteration", 0) + 1
        self.bus.publish(
            IterationStarted(
                iteration=iteration,
                max_iterations=state.get("max_iterations", self.max_iterations),
                **scope.fields(),
            )
        )
        plan = state.get("plan") or {}
        mode = plan.get("execution_mode") or self.execution_mode
        if self.execution_mode == "dependency":
            mode = "dependency"
        report = await self.executor.run(state["goal_id"], mode=mode, scope=scope)
        await self.context.append_ledger(
            state["goal_id"],
            "system",
            f"iteration {iteration}: completed {report.completed or '-'}, "
            f"failed {report.failed or '-'}, skipped {report.skipped or '-'}",
            "execute",
            thread_id=state.get("thread_id", ""),
        )
        return {
            "last_answer": report.last_answer or state.get("last_answer", ""),
            "last_failed": len(report.failed) + len(report.skipped),
            "iteration": iteration,
        }

    async def _record_iteration(self, state: LoopState) -> dict[str, Any]:
        scope = self._scope(state)
        iteration = state.get("iteration", 0)
        dag = self.context.step_dag(state["goal_id"])
        done = sum(1 for s in dag.steps.values() if s.status == "completed")
        failed = sum(1 for s in dag.steps.values() if s.status in ("failed", "skipped"))
        self.bus.publish(
            IterationCompleted(
                iteration=iteration,
                completed_steps=done,
                failed_steps=failed,
                **scope.fields(),
            )
        )
        update: dict[str, Any] = {}
        finished = state.get("terminal_after_execute") and not state.get("last_failed")
        if finished and self._steered_after_plan(state["goal_id"]):
            # the user wrote the goal a note the planner has not read: assess first
            update["terminal_after_execute"] = finished = False
        if iteration >= state.get("max_iterations", self.max_iterations) and not finished:
            update["status"] = "exhausted"
        if state.get("last_failed"):
            update["plan"] = None  # a failed plan is replaced, not kept
        return update

    def _steered_after_plan(self, goal_id: str) -> bool:
        """The goal's newest note from the user (``/steer``) came after its last plan or
        assessment: the planner has not read it yet."""
        entries = self.context.get_ledger_entries(goal_id, phases=["plan", STEER_PHASE])
        return bool(entries) and entries[-1].phase == STEER_PHASE

    async def _goal_completion(self, state: LoopState) -> dict[str, Any]:
        """The final answer, judged before the user gets it (``answer_check``): the last
        step's answer when the plan said it is the answer, else one completion call; an
        answer that is none gets one compact facts-and-question re-ask, then the facts.
        After a failed planning (``from_facts``) only the facts-and-question call is made,
        then the facts; the answer ends with a note saying so."""
        from_facts = state.get("status") == "from_facts"
        status = "exhausted" if state.get("status") == "exhausted" else "done"
        goal_id = state["goal_id"]
        goal = self.context.get_goal(goal_id).description
        evidence = self.context.evidence(goal_id)
        facts = answer_check.facts_text(evidence)
        grounds = answer_check.grounds_text(evidence)
        # Prose about named files is held to them on every profile (the small profile's
        # is always), and so is an answer made from the facts.
        grounding = self.small_model or from_facts or answer_check.names_files(evidence)
        instructions = [prompts.COMPLETE_RULES, answer_check.FACTS_SYSTEM]
        scope = self._scope(state)

        def on_token(text: str) -> None:
            self.bus.publish(StepToken(text=text, **scope.fields()))

        def on_thinking(text: str) -> None:
            self.bus.publish(StepThinking(text=text, **scope.fields()))

        async def ask(messages: list[Any] | Prompt) -> str:
            reply = await self.hub.stream_text(
                messages, on_token=on_token, ids=scope, purpose="final", on_thinking=on_thinking
            )
            text = reply.content if isinstance(reply.content, str) else str(reply.content)
            return answer_check.unwrap_json(text)

        def problem(text: str) -> str | None:
            return answer_check.final_answer_problem(
                text,
                goal=goal,
                grounds=grounds,
                instructions=instructions,
                require_grounding=grounding,
            )

        from langchain_core.messages import HumanMessage, SystemMessage

        if from_facts:
            return await self._answer_from_facts(state, ask, problem, facts)
        last = answer_check.unwrap_json(state.get("last_answer", ""))
        if not state.get("require_goal_completion", True) and last.strip():
            answer = last
        else:
            note = ""
            if status == "exhausted":
                note = "\nThe iteration limit was reached: say what is done and what is not."
            ctx = self._planning_context(state)
            answer = await ask(ctx.prompt(prompts.COMPLETE_RULES + note))
        why = problem(answer)
        if why is None:
            return {"final_answer": answer, "status": status}
        if answer is not last and last.strip() and problem(last) is None:
            return {"final_answer": last, "status": status}  # the last step said it
        retry = await ask(
            [
                SystemMessage(content=answer_check.FACTS_SYSTEM),
                HumanMessage(content=answer_check.facts_prompt(goal, facts)),
            ]
        )
        again = problem(retry)
        if again is None:
            final = retry
        elif facts:
            final = answer_check.raw_answer(facts)
        else:
            final = ""  # no answer and nothing to show: the goal cannot complete on it
        await self.context.append_ledger(
            goal_id,
            "system",
            clip(
                f"final answer rejected ({why}); re-asked with the facts: "
                + ("accepted" if again is None else f"rejected ({again})")
                + ("" if again is None else "; the facts are the answer" if facts else ""),
                400,
            ),
            "verify",
            thread_id=state.get("thread_id", ""),
        )
        return {"final_answer": final, "status": status}

    async def _answer_from_facts(
        self,
        state: LoopState,
        ask: Callable[[list[Any]], Awaitable[str]],
        problem: Callable[[str], str | None],
        facts: str,
    ) -> dict[str, Any]:
        """Planning failed but the loader's facts bear on the request: one direct call
        with the facts and the question, else the facts themselves (marked); either way
        the answer says it came from the facts, and the goal is done on it."""
        from langchain_core.messages import HumanMessage, SystemMessage

        goal = self.context.get_goal(state["goal_id"]).description
        reply = await ask(
            [
                SystemMessage(content=answer_check.FACTS_SYSTEM),
                HumanMessage(content=answer_check.facts_prompt(goal, facts)),
            ]
        )
        why = problem(reply)
        answer = reply if why is None else answer_check.raw_answer(facts)
        reason = clip(state.get("error", ""), 200)
        note = answer_check.FROM_FACTS_NOTE.format(why=reason or "planning failed")
        await self.context.append_ledger(
            state["goal_id"],
            "system",
            clip(
                "answered from the workspace facts: "
                + ("accepted" if why is None else f"the reply was rejected ({why}); the facts"),
                400,
            ),
            "verify",
            thread_id=state.get("thread_id", ""),
        )
        return {"final_answer": f"{answer.rstrip()}\n\n{note}", "status": "from_facts"}

    # --- running ----------------------------------------------------------------------

    async def run(
        self,
        *,
        goal_id: str,
        loop_id: str,
        thread_id: str = "",
        intake: Intake = "fresh",
        label: str = "complex",
        extras: LoopExtras | None = None,
        max_iterations: int | None = None,
    ) -> LoopResult:
        """Run (or resume, when a checkpoint for ``loop_id`` exists) the loop to its end."""
        config = {"configurable": {"thread_id": loop_id}, "recursion_limit": 200}
        # "sync": each checkpoint is on disk before the next node starts. The default
        # ("async") writes it while the next node runs, so a kill during the long execute
        # node could lose the checkpoint that leads into it.
        durable = {"durability": "sync"}
        self._extras[loop_id] = extras or LoopExtras()
        try:
            snapshot = await self._graph.aget_state(config)
            if snapshot.next:
                final = await self._graph.ainvoke(None, config, **durable)
            else:
                initial: LoopState = {
                    "goal_id": goal_id,
                    "loop_id": loop_id,
                    "thread_id": thread_id,
                    "intake": intake,
                    "label": label,
                    "iteration": 0,
                    "max_iterations": max_iterations or self.max_iterations,
                    "status": "running",
                    "plan": None,
                    "plans_made": 0,
                    "terminal_after_execute": False,
                    "require_goal_completion": True,
                    "last_answer": "",
                    "final_answer": "",
                    "error": "",
                    "error_kind": "",
                    "last_failed": 0,
                    "rejected_done": 0,
                }
                final = await self._graph.ainvoke(initial, config, **durable)
        finally:
            self._extras.pop(loop_id, None)
        status = final.get("status", "done")
        from_facts = ""
        if status == "from_facts":
            status, from_facts = "done", final.get("error", "") or "planning failed"
        steps = list(self.context.step_dag(goal_id).steps.values())
        failed = tuple(s.id for s in steps if s.status in ("failed", "skipped"))
        completed = sum(1 for s in steps if s.status == "completed")
        if status == "failed":
            return LoopResult(
                "failed",
                "",
                final.get("iteration", 0),
                final.get("error", ""),
                retryable=final.get("error_kind") != "planning",
                failed_steps=failed,
                completed_steps=completed,
            )
        error = ""
        if status == "exhausted":
            errors = [f"{s.id}: {clip(s.error or s.status, 120)}" for s in steps if s.id in failed]
            error = "iteration limit reached" + (
                "; failed steps: " + "; ".join(errors[-3:]) if errors else ""
            )
        return LoopResult(
            "exhausted" if status == "exhausted" else "done",
            final.get("final_answer", ""),
            final.get("iteration", 0),
            error,
            failed_steps=failed,
            completed_steps=completed,
            from_facts=from_facts,
        )

    async def has_checkpoint(self, loop_id: str) -> bool:
        snapshot = await self._graph.aget_state({"configurable": {"thread_id": loop_id}})
        return bool(snapshot.next)
