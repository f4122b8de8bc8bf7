"""Read-only snapshots of goals, steps, evidence, ledger entries and threads.

Every model is frozen: the ContextEngine replaces a snapshot when something changes, so a
reader (the UI, the loop) can hold one safely and nobody can change a status behind the
transition function's back. Edge lists are tuples for the same reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from soothe.engine.events import EvidenceKind, GoalStatus, StepKind, StepStatus
from soothe.engine.goal_contract import Criterion, GoalBudget, GoalSpend

if TYPE_CHECKING:
    from soothe.engine.context.steps import StepDAG

GoalSource = Literal["user", "directive", "file_discovery", "decomposition"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GoalNode(_Frozen):
    id: str
    description: str
    priority: int = Field(50, ge=0, le=100)
    status: GoalStatus = "pending"
    parent_id: str | None = None
    depends_on: tuple[str, ...] = ()
    informs: tuple[str, ...] = ()
    conflicts_with: tuple[str, ...] = ()
    source: GoalSource = "user"
    retry_count: int = 0
    max_retries: int = 2
    send_back_count: int = 0
    max_send_backs: int = 3
    attempts_after_crash: int = 0
    topic: str = ""
    findings: str = ""
    report: str = ""
    error: str = ""
    thread_id: str = ""
    loop_id: str | None = None
    seq: int = 0
    """Creation order (the number in ``G<seq>``); breaks ties between equal priorities."""
    created_at: float = 0.0
    updated_at: float = 0.0
    started_at: float | None = None
    """When the goal was last activated (each activation sets it; None: never ran)."""
    finished_at: float | None = None
    criteria: tuple[Criterion, ...] = ()
    """Done-when criteria (stored as JSON; see ``store.GOAL_JSON``)."""
    budget: GoalBudget = GoalBudget()
    spent: GoalSpend = GoalSpend()
    workspace: str = ""
    """The folder the goal is tied to ('' = none): only a worker or a session with that
    workspace runs it."""

    _dag: StepDAG | None = PrivateAttr(default=None)

    @property
    def step_dag(self) -> StepDAG:
        """The goal's step DAG (shared by every snapshot of this goal)."""
        if self._dag is None:
            raise RuntimeError(f"goal {self.id} is not attached to a ContextEngine")
        return self._dag

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATES


TERMINAL_STATES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
PAUSED_STATES: frozenset[str] = frozenset({"awaiting_clarification", "suspended"})


class StepSpec(BaseModel):
    """One step of a plan as the planner hands it over."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    description: str
    kind: StepKind = "action"
    dependencies: list[str] = Field(default_factory=list)
    expected_output: str = ""
    questions: list[str] = Field(default_factory=list)


class StepNode(_Frozen):
    id: str
    goal_id: str
    description: str
    kind: StepKind = "action"
    status: StepStatus = "pending"
    dependencies: tuple[str, ...] = ()
    dropped_dependencies: tuple[str, ...] = ()
    """Tokens the planner named that matched no step and were dropped (``unknown_deps="drop"``)."""
    iteration: int = 0
    position: int = 0
    expected_output: str = ""
    questions: tuple[str, ...] = ()
    result_summary: str = ""
    error: str = ""
    tokens: int = 0
    duration_s: float = 0.0
    created_at: float = 0.0
    updated_at: float = 0.0


class GoalSpec(BaseModel):
    """Input for batch creation. ``ref`` lets later specs of the same batch point at this one
    (in depends_on / informs / conflicts_with / parent_id) before it has an id."""

    model_config = ConfigDict(extra="forbid")

    description: str
    priority: int = Field(50, ge=0, le=100)
    depends_on: list[str] = Field(default_factory=list)
    informs: list[str] = Field(default_factory=list)
    conflicts_with: list[str] = Field(default_factory=list)
    parent_id: str | None = None
    source: GoalSource = "user"
    thread_id: str = ""
    topic: str = ""
    max_retries: int = Field(2, ge=0)
    criteria: list[str] = Field(default_factory=list)
    """Done-when criteria, each one line the verifier checks against evidence."""
    budget: GoalBudget = GoalBudget()
    workspace: str = ""
    """The folder the goal's tools work in ('' = any): only a worker or a session whose
    workspace it is runs it (``soothe goals add --workspace DIR``)."""
    ref: str | None = None


class EvidenceEntry(_Frozen):
    id: str
    goal_id: str
    n: int
    kind: EvidenceKind
    summary: str
    content: str = ""
    step_id: str | None = None
    created_at: float = 0.0


class LedgerEntry(_Frozen):
    id: int
    goal_id: str | None
    thread_id: str
    role: str
    content: str
    phase: str
    created_at: float = 0.0


class ThreadRecord(_Frozen):
    id: str
    title: str
    created_at: float
    last_active: float


class ThreadMessage(_Frozen):
    id: int
    thread_id: str
    role: str
    content: str
    created_at: float
