"""Read-only views of goals, steps, evidence and threads for the screen.

Plain frozen pydantic models: the widgets hold these, never the ContextEngine's own
objects, so the screen cannot change the engine's state behind its back.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from soothe.engine.events import EvidenceKind, GoalStatus, StepKind, StepStatus
from soothe.engine.goal_contract import Criterion, GoalBudget, GoalSpend

ProviderStatus = Literal["unknown", "reachable", "unreachable", "demo"]


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)  # first frame


class StepView(_View):
    id: str
    description: str = ""
    kind: StepKind = "action"
    status: StepStatus = "pending"
    dependencies: list[str] = Field(default_factory=list)


class GoalView(_View):
    id: str
    description: str
    status: GoalStatus = "pending"
    priority: int = 50
    parent_id: str | None = None
    depends_on: list[str] = Field(default_factory=list)
    steps: list[StepView] = Field(default_factory=list)
    findings: str = ""
    error: str = ""
    criteria: list[Criterion] = Field(default_factory=list)
    budget: GoalBudget = GoalBudget()
    spent: GoalSpend = GoalSpend()


class EvidenceView(_View):
    evidence_id: str
    kind: EvidenceKind
    summary: str
    content: str = ""
    goal_id: str | None = None
    step_id: str | None = None


class ThreadView(_View):
    id: str
    title: str = ""
    created_at: datetime | None = None
    last_active: datetime | None = None
    goal_count: int = 0


class ThreadSnapshot(_View):
    """What the screen needs to show a stored thread again.

    ``answers`` maps a goal id to that goal's final answer; the key ``""`` holds answers
    given without a goal (quick replies), oldest first, joined by blank lines.
    ``transcript`` is the thread's stored events in order (``{"event": ..., "tokens": n}``,
    a step's tokens coalesced), which the screen replays to show what it showed before;
    empty for a thread stored before transcripts were kept.
    """

    thread_id: str
    title: str = ""
    goals: list[GoalView] = Field(default_factory=list)
    evidence: list[EvidenceView] = Field(default_factory=list)
    answers: dict[str, str] = Field(default_factory=dict)
    transcript: list[dict[str, Any]] = Field(default_factory=list)
