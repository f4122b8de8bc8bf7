"""The one contract between the Textual app and the engine.

The app talks to the engine only through an object that satisfies ``SessionAPI``; the
real one lives in ``soothe.engine.session`` (imported lazily, after the first frame), tests
pass an in-memory fake. The view models here are plain frozen pydantic models so widgets
can hold them without reaching into engine internals.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from soothe.engine.events import EventBase, EvidenceKind, GoalStatus, StepKind, StepStatus

if TYPE_CHECKING:
    from soothe.engine.bus import EventBus
    from soothe.engine.config import Settings
    from soothe.engine.interact import InteractBroker

ProviderStatus = Literal["unknown", "reachable", "unreachable", "demo"]


class _View(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


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
    """

    thread_id: str
    title: str = ""
    goals: list[GoalView] = Field(default_factory=list)
    evidence: list[EvidenceView] = Field(default_factory=list)
    answers: dict[str, str] = Field(default_factory=dict)


@runtime_checkable
class SessionAPI(Protocol):
    settings: Settings
    bus: EventBus
    broker: InteractBroker
    thread_id: str
    model_label: str
    provider_status: ProviderStatus

    async def start(self) -> None:
        """Heavy imports, database, server check. Called in a worker after the first frame."""

    async def close(self) -> None: ...

    def run(self, text: str, *, autonomous: bool = False) -> AsyncIterator[EventBase]:
        """One request. Events are also published on ``bus``; cancelling interrupts."""
        ...

    def goals(self) -> list[GoalView]: ...

    def evidence(self, goal_id: str | None = None) -> list[EvidenceView]: ...

    async def add_goal(self, description: str, *, priority: int = 50) -> str: ...

    async def add_dependency(self, goal_id: str, depends_on: str) -> None:
        """Raises ValueError with a one-line message when the edge would make a cycle."""

    async def cancel_goal(self, goal_id: str) -> None: ...

    async def toggle_suspend(self, goal_id: str) -> None: ...

    async def retry_goal(self, goal_id: str) -> None: ...

    async def set_priority(self, goal_id: str, priority: int) -> None: ...

    def run_goals(self) -> AsyncIterator[EventBase]: ...

    async def list_threads(self) -> list[ThreadView]: ...

    async def open_thread(self, thread_id: str) -> ThreadSnapshot: ...

    async def new_thread(self) -> str: ...

    async def delete_thread(self, thread_id: str) -> None: ...

    async def export_thread(self, thread_id: str) -> str: ...

    async def list_models(self) -> list[str]: ...

    async def set_model(self, name: str) -> None: ...

    def use_demo(self) -> None: ...
