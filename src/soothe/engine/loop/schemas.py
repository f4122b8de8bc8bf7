"""What the planner asks of the model, and what the loop makes of it.

Every string and list sent to a model is bounded: a small model given an unbounded
string field can repeat itself until the token limit (NOTES.md). Model-facing classes
carry comments, not docstrings: a docstring becomes the schema's description, and a
small model copies it into its answer.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

Short = Annotated[str, StringConstraints(max_length=200)]
Medium = Annotated[str, StringConstraints(max_length=600)]
StepId = Annotated[
    str, StringConstraints(min_length=1, max_length=24, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
]
Status = Literal["continue", "replan", "done"]
Progress = Literal["none", "low", "medium", "high", "complete"]


class StatusAssessment(BaseModel):
    # The cheap 'are we done?' check that runs before any new plan.

    model_config = ConfigDict(title="StatusAssessment")

    status: Status
    goal_progress: Progress
    # keep: the pending steps of the current plan still serve; new: a fresh plan is needed.
    plan_action: Literal["keep", "new"] = "keep"
    confidence: Literal["low", "medium", "high"] = "medium"
    execution_hint: Literal["parallel", "dependency"] = "parallel"
    next_action: Short = ""
    reasoning: Short = ""
    require_goal_completion: bool = True


class Reflection(BaseModel):
    # After a failed or exhausted loop: what went wrong and what a second round should try.

    model_config = ConfigDict(title="Reflection")

    what_failed: Short
    try_next: Short
    worth_retrying: bool = True


class PlanStep(BaseModel):
    model_config = ConfigDict(title="PlanStep")

    id: StepId
    description: Medium
    expected_output: Short = ""
    dependencies: list[StepId] = Field(default_factory=list, max_length=8)
    kind: Literal["action", "ask_user"] = "action"
    questions: list[Short] = Field(default_factory=list, max_length=4)

    @model_validator(mode="after")
    def _ask_user_needs_questions(self) -> PlanStep:
        if self.kind == "ask_user" and not [q for q in self.questions if q.strip()]:
            raise ValueError(f"step {self.id}: an ask_user step needs at least one question")
        return self


class PlanGeneration(BaseModel):
    model_config = ConfigDict(title="PlanGeneration")

    steps: list[PlanStep] = Field(min_length=1, max_length=8)
    execution_mode: Literal["parallel", "dependency"] = "parallel"
    reasoning: Short = ""

    @model_validator(mode="after")
    def _unique_ids(self) -> PlanGeneration:
        seen: set[str] = set()
        for step in self.steps:
            if step.id in seen:
                raise ValueError(f"duplicate step id {step.id}")
            seen.add(step.id)
        return self


class PlanResult(BaseModel):
    """The loop's decision for one iteration: assessment, plan, and routing flags."""

    status: Status
    goal_progress: Progress = "none"
    plan_action: Literal["keep", "new"] = "keep"
    confidence: Literal["low", "medium", "high"] = "medium"
    execution_hint: Literal["parallel", "dependency"] = "parallel"
    next_action: str = ""
    plan: PlanGeneration | None = None
    reasoning: str = ""
    require_goal_completion: bool = True
    terminal_after_execute: bool = False
    evidence_summary: str = ""

    @model_validator(mode="after")
    def _new_needs_steps(self) -> PlanResult:
        if self.plan_action == "new" and self.status != "done" and not self.plan:
            raise ValueError("plan_action 'new' needs a plan with steps unless status is 'done'")
        return self


class Classification(BaseModel):
    # One call that routes a request and, for a plain question, already answers it.

    model_config = ConfigDict(title="Classification")

    label: Literal["quiz", "trivial", "simple", "complex"]
    answer: Annotated[str, StringConstraints(max_length=800)] = ""
    reason: Short = ""


class GoalDecomposition(BaseModel):
    # Autonomous mode: a goal split into sub-goals with relations between them.

    model_config = ConfigDict(title="GoalDecomposition")

    subgoals: list[SubGoal] = Field(default_factory=list, max_length=6)
    reasoning: Short = ""


class SubGoal(BaseModel):
    model_config = ConfigDict(title="SubGoal")

    key: Annotated[str, StringConstraints(min_length=1, max_length=12)]
    description: Medium
    depends_on: list[Annotated[str, StringConstraints(max_length=12)]] = Field(
        default_factory=list, max_length=5
    )
    informs: list[Annotated[str, StringConstraints(max_length=12)]] = Field(
        default_factory=list, max_length=5
    )
    conflicts_with: list[Annotated[str, StringConstraints(max_length=12)]] = Field(
        default_factory=list, max_length=5
    )
    priority: int = Field(50, ge=0, le=100)


GoalDecomposition.model_rebuild()


EvidenceId = Annotated[str, StringConstraints(max_length=32)]


class CriterionCheck(BaseModel):
    model_config = ConfigDict(title="CriterionCheck")

    number: int = Field(ge=1, le=99)
    verdict: Literal["met", "unmet", "unknown"]
    reason: Short = ""
    evidence: list[EvidenceId] = Field(default_factory=list, max_length=8)


class Verification(BaseModel):
    # The verifier: each done-when criterion of a goal checked against its evidence.

    model_config = ConfigDict(title="Verification")

    criteria: list[CriterionCheck] = Field(min_length=1, max_length=24)
