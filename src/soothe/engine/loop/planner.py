"""LLMPlanner: two-phase planning (a small assessment, then a plan only when needed)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from soothe.engine.context.errors import PlanError
from soothe.engine.context.models import StepSpec
from soothe.engine.context.steps import StepDAG, step_number
from soothe.engine.llm.packer import (
    HISTORY,
    LEDGER,
    MEMORY,
    REQUEST,
    REQUEST_FLOOR_CHARS,
    RESULTS,
    RULES,
    STEP,
    WORKSPACE,
    Part,
    Prompt,
)
from soothe.engine.llm.structured import parse_structured
from soothe.engine.loop import prompts
from soothe.engine.loop.schemas import (
    Classification,
    GoalDecomposition,
    PlanGeneration,
    PlanStep,
    Reflection,
    StatusAssessment,
)
from soothe.engine.text import clip
from soothe.engine.words import WORK_WORDS, content_words

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from soothe.engine.llm.factory import Role
    from soothe.engine.llm.hub import IdsLike, ModelHub

TIGHTER = (
    "For this try: at most 3 steps; a step depends only on OTHER steps of this plan "
    "that come before it; describe the work, do not copy these rules."
)
"""Added to the re-ask after a semantic problem, so the second try differs from the first."""

T = TypeVar("T", bound=BaseModel)

STEERING_TITLE = "The user's notes while this goal runs (follow them)"
STEERING_FLOOR_CHARS = 400
CRITERIA_FLOOR_CHARS = 600
"""The done-when criteria keep at least this much of a tight window (they decide done)."""


@dataclass
class PlanningContext:
    """Everything the planner may show the model, already bounded by the caller."""

    goal: str
    projection: str = ""
    evidence: str = ""
    steps: str = ""
    history: str = ""
    skill: str = ""
    memory: str = ""
    reasoning: str = ""
    """The planner's reasoning of earlier iterations (from the ledger), newest last."""
    previous_failure: str = ""
    """Round 2 and later: what failed in the round before and what to try instead."""
    steering: str = ""
    """The user's notes to this goal while it runs (``/steer``), oldest first: kept in
    the prompt as the request is (the user's own words)."""
    criteria: str = ""
    """The goal's done-when criteria, numbered, each with the verifier's last verdict
    (``verifier.numbered``): the user's own words, kept as the request is."""

    def topic(self) -> str:
        """What a step may be about: the goal and what is known around it."""
        return "\n".join((self.goal, self.skill, self.history, self.projection, self.memory))

    def parts(self) -> list[Part]:
        """The sections as packer parts (``llm.packer``): the goal is the request (kept,
        clipped last), then the skill, the steps and the evidence (newest first), the
        failure and reasoning of earlier rounds, the conversation (newest kept), the
        projection and what memory recalled; in ``render``'s order."""
        return [
            Part("Goal", self.goal, REQUEST, "ends", REQUEST_FLOOR_CHARS),
            Part(STEERING_TITLE, self.steering, REQUEST, "tail", STEERING_FLOOR_CHARS),
            Part(prompts.CRITERIA_TITLE, self.criteria, REQUEST, "head", CRITERIA_FLOOR_CHARS),
            Part("Skill instructions", self.skill, STEP),
            Part("Conversation so far", self.history, HISTORY, keep="tail"),
            Part("Context", self.projection, WORKSPACE),
            Part("Recalled from earlier work", self.memory, MEMORY),
            Part("The previous attempt failed", self.previous_failure, LEDGER),
            Part("Why the plans so far were made", self.reasoning, LEDGER, keep="tail"),
            Part("Steps so far", self.steps, STEP, keep="tail"),
            Part("Evidence", self.evidence, RESULTS),
        ]

    def prompt(self, system: str, *extra: Part) -> Prompt:
        """A prompt of these sections and ``extra`` parts (rules, kept whole), packed by the
        hub to each call's window."""
        return Prompt(system, [*self.parts(), *extra])

    def render(self) -> str:
        """The sections whole (not packed: ``prompt`` is what goes to a model)."""
        parts = [
            prompts.section("Goal", self.goal),
            prompts.section(STEERING_TITLE, self.steering),
            prompts.section(prompts.CRITERIA_TITLE, self.criteria),
            prompts.section("Skill instructions", self.skill),
            prompts.section("Conversation so far", self.history),
            prompts.section("Context", self.projection),
            prompts.section("Recalled from earlier work", self.memory),
            prompts.section("The previous attempt failed", self.previous_failure),
            prompts.section("Why the plans so far were made", self.reasoning),
            prompts.section("Steps so far", self.steps),
            prompts.section("Evidence", self.evidence),
        ]
        return "\n".join(p for p in parts if p)


class PlanningFailed(Exception):
    """The model could not produce a valid plan after repair and re-asks."""

    def __init__(self, what: str, error: str, attempts: int, context: str = "") -> None:
        window = f"; {context} (a larger window may help)" if context else ""
        super().__init__(
            f"could not get a valid {what} from the model after {attempts} tries: {error}{window}"
        )
        self.attempts = attempts
        self.context = context
        """When the window shaped the prompt (``StructuredResult.context``); else ''."""


def _specs(plan: PlanGeneration) -> list[StepSpec]:
    return [StepSpec.model_validate(s.model_dump()) for s in plan.steps]


def _rule_lines() -> set[str]:
    lines = set()
    for text in (
        prompts.PLANNER_SYSTEM,
        prompts.GENERATE_RULES,
        prompts.GENERATE_RULES_SMALL,
        prompts.ASSESS_RULES,
        TIGHTER,
    ):
        for line in text.splitlines():
            norm = _norm(line)
            if len(norm) >= 20:
                lines.add(norm)
    return lines


def _norm(text: str) -> str:
    return " ".join(text.lower().lstrip("- ").split()).rstrip(".")


OFF_TOPIC_WORDS = 3
"""A step description needs this many subject words before it can be judged off-topic."""


def off_topic(description: str, topic: str) -> bool:
    """True when a step has nothing to do with its goal: it has a few content words
    (``engine.words``, less the verbs of work) and shares none with ``topic`` (the goal,
    its context and the workspace facts). A 135M model plans "Write a function that returns
    the longest string" for "Read notes.txt and count the files"."""
    if not topic.strip():
        return False
    words = content_words(description) - WORK_WORDS
    if len(words) < OFF_TOPIC_WORDS:
        return False
    return not words & content_words(topic)


def plan_problems(plan: PlanGeneration, dag: StepDAG | None = None, topic: str = "") -> list[str]:
    """What makes a schema-valid plan unusable: self-dependencies, dependencies on steps
    that do not exist, steps copying a rule line of our prompt, steps off the topic of
    the goal (``off_topic``), and step cycles (the cycle check is the step DAG's own, run
    on a copy: ``StepDAG.planned``)."""
    problems: list[str] = []
    ids = {s.id for s in plan.steps} | set(dag.steps if dag else ())
    numbers = {n for i in ids if (n := step_number(i)) is not None}
    rules = _rule_lines()
    for step in plan.steps:
        for dep in step.dependencies:
            if dep == step.id or (dep.isdigit() and step_number(step.id) == int(dep)):
                problems.append(f"step {step.id} depends on itself")
            elif dep not in ids and not (dep.isdigit() and int(dep) in numbers):
                problems.append(f"step {step.id} depends on {dep}, which is not a step")
        if not re.search(r"[^\W\d_]", step.description):  # "1. 2. 3.": no letter at all
            problems.append(f"step {step.id} has no description")
        elif _norm(step.description) in rules:
            problems.append(f"step {step.id} copies a rule of the prompt instead of a task")
        elif step.kind == "action" and off_topic(step.description, topic):
            problems.append(f"step {step.id} has nothing to do with the goal")
    if not problems:
        try:
            (dag or StepDAG("plan")).planned(_specs(plan), 0, 0.0, unknown_deps="drop")
        except PlanError as exc:
            problems.append(exc.why)
    return problems


def repair_plan(
    plan: PlanGeneration | None, goal: str, dag: StepDAG | None = None, topic: str = ""
) -> tuple[PlanGeneration, list[str]]:
    """The deterministic fallback when re-asks did not give a usable plan: drop the
    offending edges, copied and off-topic steps; if that leaves nothing usable, one step
    that does the goal. Returns the plan and what was changed (for the ledger)."""
    notes: list[str] = []
    if plan is not None:
        rules = _rule_lines()
        steps = [
            s
            for s in plan.steps
            if _norm(s.description) not in rules and re.search(r"[^\W\d_]", s.description)
        ]
        if len(steps) < len(plan.steps):
            notes.append(
                f"dropped {len(plan.steps) - len(steps)} step(s) copying a prompt rule or "
                "without a description"
            )
        kept = [s for s in steps if s.kind != "action" or not off_topic(s.description, topic)]
        if len(kept) < len(steps):
            notes.append(f"dropped {len(steps) - len(kept)} step(s) off the goal's topic")
        steps = kept
        ids = {s.id for s in steps} | set(dag.steps if dag else ())

        def keep(step: PlanStep, dep: str) -> bool:
            if dep == step.id or (dep.isdigit() and step_number(step.id) == int(dep)):
                return False
            return dep in ids or dep.isdigit()

        fixed = []
        for step in steps:
            deps = [d for d in step.dependencies if keep(step, d)]
            if deps != step.dependencies:
                dropped = sorted(set(step.dependencies) - set(deps))
                notes.append(f"{step.id}: dropped dependencies {', '.join(dropped)}")
            fixed.append(step.model_copy(update={"dependencies": deps}))
        for _ in range(len(fixed) * 8):  # break cycles one edge at a time
            if not fixed:
                break
            candidate = plan.model_copy(update={"steps": fixed})
            try:
                (dag or StepDAG("plan")).planned(_specs(candidate), 0, 0.0, unknown_deps="drop")
                return candidate, notes
            except PlanError as exc:
                cycle = exc.why.removeprefix("step cycle ").split(" -> ")
                if len(cycle) < 2:
                    break
                src, dst = cycle[-2], cycle[-1]
                notes.append(f"{src}: dropped dependency on {dst} (cycle)")
                fixed = [
                    s.model_copy(
                        update={
                            "dependencies": [
                                d
                                for d in s.dependencies
                                if not (d == dst or (d.isdigit() and step_number(dst) == int(d)))
                            ]
                        }
                    )
                    if s.id == src
                    else s
                    for s in fixed
                ]
    notes.append("replaced the plan by one step that does the goal")
    one = PlanStep(id="S-01", description=clip(goal, 590), expected_output="the answer")
    return PlanGeneration(steps=[one], reasoning="fallback: one step for the whole goal"), notes


class LLMPlanner:
    def __init__(self, hub: ModelHub, *, small: bool = False) -> None:
        self.hub = hub
        self.small = small
        """The small profile: plan and decompose rules without examples (prompts.py)."""
        self.fallback_notes: list[str] = []
        """What the last ``generate`` changed in the model's plan (empty: nothing)."""

    async def _ask(
        self,
        schema: type[T],
        system: str,
        user: list[Part],
        role: Role,
        ids: IdsLike,
        validate: Callable[[T], list[str]] | None = None,
    ) -> T:
        result = await self._call(schema, system, user, role, ids, validate)
        if result.value is None:
            reason = "; ".join(result.problems) or result.error or "invalid output"
            raise PlanningFailed(schema.__name__, reason, result.attempts, result.context)
        return result.value

    async def _call(
        self,
        schema: type[T],
        system: str,
        user: list[Part],
        role: Role,
        ids: IdsLike,
        validate: Callable[[T], list[str]] | None = None,
    ) -> Any:
        """One structured call of ``user``'s parts, packed by the hub to its window."""
        return await self.hub.structured(
            Prompt(system, user),
            schema,
            role=role,
            ids=ids,
            validate=validate,
        )

    async def assess(self, ctx: PlanningContext, ids: IdsLike = None) -> StatusAssessment:
        user = [*ctx.parts(), Part("", prompts.ASSESS_RULES, RULES)]
        return await self._ask(StatusAssessment, prompts.PLANNER_SYSTEM, user, "fast", ids)

    async def generate(
        self,
        ctx: PlanningContext,
        ids: IdsLike = None,
        *,
        prepare: Callable[[PlanGeneration], PlanGeneration] | None = None,
        dag: StepDAG | None = None,
    ) -> PlanGeneration:
        """A plan checked inside the structured re-ask path (``plan_problems``); when the
        re-asks still give an unusable plan, the deterministic ``repair_plan`` fallback.
        ``prepare`` maps the model's plan to what will be installed (renamed ids)."""
        prep = prepare or (lambda p: p)

        # Only the small profile's plans are judged for topic: a bigger model's step may
        # well be about something the goal does not name ("Ask about dates and budget"
        # for "Plan a weekend in Lisbon").
        topic = ctx.topic() if self.small else ""

        def validate(plan: PlanGeneration) -> list[str]:
            problems = plan_problems(prep(plan), dag, topic)
            return [*problems, TIGHTER] if problems else []

        self.fallback_notes = []
        user = [*ctx.parts(), Part("", prompts.generate_rules(self.small), RULES)]
        result = await self._call(
            PlanGeneration, prompts.PLANNER_SYSTEM, user, "default", ids, validate
        )
        if result.value is not None:
            return prep(result.value)
        # A reply cut at the token limit only parses as a lenient repair of half a
        # step ("Read no"): never install it.
        last = parse_structured(result.raw, PlanGeneration, truncated=result.truncated).value
        if last is None:  # never a schema-valid plan: the model cannot plan at all
            reason = "; ".join(result.problems) or result.error or "invalid output"
            raise PlanningFailed("PlanGeneration", reason, result.attempts, result.context)
        plan, self.fallback_notes = repair_plan(prep(last), ctx.goal, dag, topic)
        return plan

    async def reflect(self, ctx: PlanningContext, failure: str, ids: IdsLike = None) -> Reflection:
        user = [
            *ctx.parts(),
            Part("What went wrong", failure, STEP, floor=200),
            Part("", prompts.REFLECT_RULES, RULES),
        ]
        return await self._ask(Reflection, prompts.PLANNER_SYSTEM, user, "fast", ids)

    async def classify(
        self,
        text: str,
        history: str = "",
        ids: IdsLike = None,
        tools: Sequence[str] = (),
    ) -> Classification:
        """``tools``: the offered tools, one bounded line each (``classify.tool_lines``),
        listed before the conversation and the request (the request stays last)."""
        user = [
            Part(prompts.TOOLS_TITLE, "\n".join(tools), STEP),
            Part("Conversation so far", history, HISTORY, keep="tail"),
            Part("", text, REQUEST, "ends", REQUEST_FLOOR_CHARS),
        ]
        return await self._ask(Classification, prompts.CLASSIFY_SYSTEM, user, "fast", ids)

    async def decompose(self, ctx: PlanningContext, ids: IdsLike = None) -> GoalDecomposition:
        user = [*ctx.parts(), Part("", prompts.decompose_rules(self.small), RULES)]
        return await self._ask(GoalDecomposition, prompts.PLANNER_SYSTEM, user, "default", ids)
