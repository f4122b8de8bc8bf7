"""The whole event vocabulary the engine publishes.

Every event is a pydantic model with a literal ``type`` discriminator; ``Event`` is the
union of all of them and ``parse_event`` turns JSON back into the right class. Widgets,
the headless renderer and tests consume these and nothing else.
"""

from __future__ import annotations

import itertools
import time
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
    model_validator,
)

from soothe.engine.bytesafe import escape_in
from soothe.engine.goal_contract import Criterion, GoalBudget, GoalSpend

_SEQ = itertools.count(1)

GoalStatus = Literal[
    "pending",
    "active",
    "completed",
    "failed",
    "suspended",
    "blocked",
    "validated",
    "awaiting_clarification",
    "cancelled",
]
StepStatus = Literal["pending", "active", "completed", "failed", "skipped"]
StepKind = Literal["action", "ask_user"]
EvidenceKind = Literal["tool", "bootstrap", "ledger"]
RequestKind = Literal["quiz", "trivial", "simple", "complex"]


def next_seq() -> int:
    return next(_SEQ)


class EventBase(BaseModel):
    """Fields every event carries. ``seq`` is process-wide and strictly increasing."""

    # defer_build: the 30 event schemas are built on first use (the first event a run
    # publishes), not at import, so the first frame does not wait for them
    model_config = ConfigDict(extra="forbid", defer_build=True)

    seq: int = Field(default_factory=next_seq)
    ts: float = Field(default_factory=time.time)
    thread_id: str = ""
    loop_id: str | None = None
    goal_id: str | None = None
    step_id: str | None = None

    @property
    def is_token(self) -> bool:
        return False

    # Text in events is Unicode: a lone surrogate (a file name's undecodable byte, a
    # model's "\\ud800") is written out on the way in (the screen gets it escaped) and
    # again on the way out (a nested model or a later change), so dumping an event,
    # --json above all, never fails on one (bytesafe).
    @model_validator(mode="before")
    @classmethod
    def _escape_surrogates(cls, data: Any) -> Any:
        return escape_in(data)

    @model_serializer(mode="wrap")
    def _escaped_dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        return escape_in(handler(self))


# --- runs -------------------------------------------------------------------------------


class RunStarted(EventBase):
    type: Literal["run.started"] = "run.started"
    text: str
    mode: Literal["auto", "agentic", "autonomous", "subagent"] = "auto"


class RunFinished(EventBase):
    type: Literal["run.finished"] = "run.finished"
    duration_s: float = 0.0
    model_calls: int = 0


class RunFailed(EventBase):
    type: Literal["run.failed"] = "run.failed"
    error: str
    kind: str = "error"


class ModelProfileResolved(EventBase):
    """The model profile the session runs under, published once when it starts."""

    type: Literal["model.profile"] = "model.profile"
    model: str
    profile: Literal["small", "default"]
    requested: Literal["auto", "small", "default"] = "auto"
    reason: str = ""
    parameter_size: str | None = None
    context_length: int | None = None


class Classified(EventBase):
    type: Literal["classification"] = "classification"
    label: RequestKind
    reason: str = ""
    answered: bool = False


# --- goals ------------------------------------------------------------------------------


class GoalCreated(EventBase):
    type: Literal["goal.created"] = "goal.created"
    description: str
    priority: int = 50
    parent_id: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    source: str = "user"
    criteria: list[str] = Field(default_factory=list)
    """The goal's done-when criteria, as the user wrote them (``goal.verified`` judges them)."""
    budget: GoalBudget = Field(default_factory=GoalBudget)
    """The goal's caps (its own, or the ``goals.budget`` default)."""


class GoalStatusChanged(EventBase):
    """THE event of a goal status move, one per transition.

    ``findings`` is set when the goal completes, ``error`` when it fails; a failure that
    will be retried is one move back to pending with ``will_retry`` set (and ``error``).
    """

    type: Literal["goal.status_changed"] = "goal.status_changed"
    from_status: GoalStatus
    to_status: GoalStatus
    reason: str = ""
    findings: str = ""
    error: str = ""
    will_retry: bool = False


class GoalUpdated(EventBase):
    """A change that is not a status move: priority, edges, findings."""

    type: Literal["goal.updated"] = "goal.updated"
    priority: int | None = None
    depends_on: list[str] | None = None
    informs: list[str] | None = None
    conflicts_with: list[str] | None = None
    findings: str | None = None


class GoalRemoved(EventBase):
    type: Literal["goal.removed"] = "goal.removed"


class GoalSteered(EventBase):
    """The user's note to a goal (``/steer``): kept in its ledger, read by the planner at
    the goal's next assessment."""

    type: Literal["goal.steered"] = "goal.steered"
    text: str


class GoalCriteriaSet(EventBase):
    """The user set a goal's done-when criteria anew (``e`` in the goal tree): the whole
    list, unchecked (a criterion kept word for word keeps its last verdict)."""

    type: Literal["goal.criteria_set"] = "goal.criteria_set"
    criteria: list[Criterion] = Field(default_factory=list)


class GoalVerified(EventBase):
    """The verifier's one call on a goal assessed done: each done-when criterion met,
    unmet or unknown, with a one-line reason and the evidence ids it rests on. ``met``:
    every criterion met (the goal is validated, then completed); otherwise it is sent
    back, or fails when no send-back is left."""

    type: Literal["goal.verified"] = "goal.verified"
    criteria: list[Criterion] = Field(default_factory=list)
    met: bool = False


class GoalBudgetSet(EventBase):
    """A goal's caps changed (``b`` in the goal tree, a resume with a raised cap,
    ``soothe goals resume ID --budget``): the whole budget, and the spend it is held to."""

    type: Literal["goal.budget"] = "goal.budget"
    budget: GoalBudget = Field(default_factory=GoalBudget)
    spent: GoalSpend = Field(default_factory=GoalSpend)


class GoalSpent(EventBase):
    """A goal's spend so far (model calls, tokens, seconds active), as just stored: once
    per model call of the goal (before the next one) and when it stops running."""

    type: Literal["goal.spent"] = "goal.spent"
    spent: GoalSpend = Field(default_factory=GoalSpend)


# --- planning ---------------------------------------------------------------------------


class PlannedStep(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str
    description: str
    kind: StepKind = "action"
    dependencies: list[str] = Field(default_factory=list)
    expected_output: str = ""
    questions: list[str] = Field(default_factory=list)


class PlanAssessed(EventBase):
    type: Literal["plan.assessed"] = "plan.assessed"
    status: Literal["continue", "replan", "done"]
    goal_progress: Literal["none", "low", "medium", "high", "complete"]
    reasoning: str = ""


class PlanCreated(EventBase):
    type: Literal["plan.created"] = "plan.created"
    iteration: int
    steps: list[PlannedStep]
    execution_mode: Literal["parallel", "dependency"] = "dependency"
    reasoning: str = ""


class IterationStarted(EventBase):
    type: Literal["iteration.started"] = "iteration.started"
    iteration: int
    max_iterations: int


class IterationCompleted(EventBase):
    type: Literal["iteration.completed"] = "iteration.completed"
    iteration: int
    completed_steps: int = 0
    failed_steps: int = 0


# --- steps ------------------------------------------------------------------------------


class StepStarted(EventBase):
    type: Literal["step.started"] = "step.started"
    description: str
    kind: StepKind = "action"


class StepToken(EventBase):
    """A streamed piece of a step's model output. May be coalesced by the bus."""

    type: Literal["step.token"] = "step.token"
    text: str

    @property
    def is_token(self) -> bool:
        return True


class StepThinking(EventBase):
    """A piece of a step's reasoning (a thinking model's trace: Ollama's
    ``message.thinking`` or a ``<think>`` block in the content), gathered into pieces of
    ~200 characters or a line. Not the answer: never in ``answer.final``, evidence or the
    ledger."""

    type: Literal["step.thinking"] = "step.thinking"
    text: str


class ToolCalled(EventBase):
    type: Literal["step.tool_call"] = "step.tool_call"
    call_id: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolResult(EventBase):
    type: Literal["step.tool_result"] = "step.tool_result"
    call_id: str
    tool: str
    output: str
    ok: bool = True
    truncated: bool = False


class StepCompleted(EventBase):
    type: Literal["step.completed"] = "step.completed"
    summary: str = ""
    duration_s: float = 0.0


class StepFailed(EventBase):
    type: Literal["step.failed"] = "step.failed"
    error: str
    cancelled: bool = False


class StepSkipped(EventBase):
    type: Literal["step.skipped"] = "step.skipped"
    reason: str = ""


class StepSuspended(EventBase):
    """A running step went back to pending without finishing (Esc, a model that stopped
    answering, a process that died mid-step): its checkpoint continues it on resume."""

    type: Literal["step.suspended"] = "step.suspended"
    reason: str = ""


# --- evidence and interaction -----------------------------------------------------------


class EvidenceAdded(EventBase):
    type: Literal["evidence.added"] = "evidence.added"
    evidence_id: str
    kind: EvidenceKind
    summary: str
    content: str = ""


class ClarificationRequested(EventBase):
    type: Literal["clarification.requested"] = "clarification.requested"
    request_id: str
    questions: list[str]


class ClarificationAnswered(EventBase):
    type: Literal["clarification.answered"] = "clarification.answered"
    request_id: str
    outcome: Literal["answered", "skipped", "auto", "timeout", "cancelled"]
    answers: list[str] = Field(default_factory=list)


class ApprovalRequested(EventBase):
    type: Literal["approval.requested"] = "approval.requested"
    request_id: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    path: str = ""


class ApprovalAnswered(EventBase):
    type: Literal["approval.answered"] = "approval.answered"
    request_id: str
    tool: str = ""
    outcome: Literal["approve_once", "approve_always", "deny", "timeout", "cancelled"]


# --- accounting and results -------------------------------------------------------------


class Usage(EventBase):
    type: Literal["usage"] = "usage"
    model: str = ""
    role: str = "default"
    input_tokens: int = 0
    output_tokens: int = 0
    duration_s: float = 0.0
    prompt_chars: int = 0
    window: int = 0
    """The context window (tokens) the call was packed for; 0: not known."""

    @property
    def answered(self) -> bool:
        """The server answered the call: it counted tokens (a call that failed is
        published too, with none)."""
        return bool(self.input_tokens or self.output_tokens)


class ModelContext(EventBase):
    """A prompt did not fit the window: the server evaluated fewer tokens than were sent
    (it cut the prompt silently from the front). ``action`` is what the hub did about it:
    "repacked" (sent again, smaller) or "failed" (the call failed with a one-line error)."""

    type: Literal["model.context"] = "model.context"
    model: str = ""
    role: str = "default"
    window: int = 0
    sent_tokens: int = 0
    """Our estimate of the prompt we sent."""
    evaluated_tokens: int = 0
    """What the server said it evaluated (Ollama's prompt_eval_count)."""
    action: Literal["repacked", "failed"] = "repacked"


class FinalAnswer(EventBase):
    type: Literal["answer.final"] = "answer.final"
    text: str


class FinalReport(EventBase):
    """End of an autonomous run: one line per goal with its outcome and findings."""

    type: Literal["report.final"] = "report.final"
    goals: list[dict[str, Any]] = Field(default_factory=list)
    text: str = ""


class ErrorEvent(EventBase):
    type: Literal["error"] = "error"
    message: str
    kind: str = "error"


class UndoApplied(EventBase):
    """The user put back what a run changed (``/undo`` in the app): kept with the thread
    like any event, so a reopened thread shows the undo where it happened."""

    type: Literal["undo.applied"] = "undo.applied"
    restored: list[str] = Field(default_factory=list)
    refused: list[str] = Field(default_factory=list)
    """``path: why`` for each file that was not put back."""
    commands: list[str] = Field(default_factory=list)
    """The run's commands, which cannot be undone."""


Event = Annotated[
    RunStarted
    | RunFinished
    | RunFailed
    | ModelProfileResolved
    | Classified
    | GoalCreated
    | GoalStatusChanged
    | GoalUpdated
    | GoalRemoved
    | GoalSteered
    | GoalCriteriaSet
    | GoalVerified
    | GoalBudgetSet
    | GoalSpent
    | PlanAssessed
    | PlanCreated
    | IterationStarted
    | IterationCompleted
    | StepStarted
    | StepToken
    | StepThinking
    | ToolCalled
    | ToolResult
    | StepCompleted
    | StepFailed
    | StepSkipped
    | StepSuspended
    | EvidenceAdded
    | ClarificationRequested
    | ClarificationAnswered
    | ApprovalRequested
    | ApprovalAnswered
    | Usage
    | ModelContext
    | FinalAnswer
    | FinalReport
    | ErrorEvent
    | UndoApplied,
    Field(discriminator="type"),
]

_ADAPTER: list[TypeAdapter[Event]] = []


def event_adapter() -> TypeAdapter[Event]:
    """The union's validator, built on first use (building it costs ~50 ms)."""
    if not _ADAPTER:
        _ADAPTER.append(TypeAdapter(Event))
    return _ADAPTER[0]


def parse_event(data: str | bytes | dict[str, Any]) -> Event:
    if isinstance(data, dict):
        return event_adapter().validate_python(data)
    return event_adapter().validate_json(data)


def event_types() -> list[type[EventBase]]:
    return list(EventBase.__subclasses__())
