"""The one contract between the Textual app and the engine.

The app talks to the engine only through an object that satisfies ``SessionAPI``; the
real one lives in ``soothe.engine.session`` (imported lazily, after the first frame), tests
pass an in-memory fake. The view models (plain frozen pydantic) are defined once in
``soothe.engine.views``, so the engine can build them, and re-exported here (on first
use): widgets hold them without reaching into engine internals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from soothe.engine.outcome import RunOutcome

if TYPE_CHECKING:
    from soothe.engine.agent.undo import UndoReport
    from soothe.engine.bus import EventBus
    from soothe.engine.config import Settings
    from soothe.engine.goal_contract import GoalBudget
    from soothe.engine.interact import InteractBroker
    from soothe.engine.views import (
        EvidenceView,
        GoalView,
        ProviderStatus,
        StepView,
        ThreadSnapshot,
        ThreadView,
    )

__all__ = [
    "EvidenceView",
    "GoalView",
    "ProviderStatus",
    "SessionAPI",
    "StepView",
    "ThreadSnapshot",
    "ThreadView",
]

_VIEWS = frozenset(__all__) - {"SessionAPI"}


if not TYPE_CHECKING:  # for mypy the names are the imports above, and no others

    def __getattr__(name: str) -> Any:
        """The view models, imported when first asked for (pydantic: not on the first frame,
        ``soothe.app.lazy`` says why)."""
        if name in _VIEWS:
            from soothe.engine import views

            return getattr(views, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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

    async def run(self, text: str, *, autonomous: bool = False) -> RunOutcome:
        """One request. Its events are published on ``bus`` (read them there); the call
        returns how it ended. Cancelling interrupts it."""
        ...

    def goals(self) -> list[GoalView]: ...

    def evidence(self, goal_id: str | None = None) -> list[EvidenceView]: ...

    async def add_goal(
        self,
        description: str,
        *,
        priority: int = 50,
        criteria: Sequence[str] = (),
        budget: GoalBudget | None = None,
    ) -> str: ...

    async def set_criteria(self, goal_id: str, criteria: Sequence[str]) -> None:
        """Replace the goal's done-when criteria (goal.criteria_set); InvalidGoal (one
        line) for a completed goal."""

    async def add_dependency(self, goal_id: str, depends_on: str) -> None:
        """Raises ValueError with a one-line message when the edge would make a cycle."""

    async def remove_dependency(self, goal_id: str, depends_on: str) -> None:
        """The goal stops waiting for ``depends_on`` (published as goal.updated)."""

    def dependency_candidates(self, goal_id: str) -> list[str]:
        """The goals ``goal_id`` may newly wait for: not itself, not already a dependency,
        none that would close a cycle (the engine's own check)."""
        ...

    async def cancel_goal(self, goal_id: str) -> None: ...

    async def toggle_suspend(self, goal_id: str) -> None: ...

    async def set_budget(self, goal_id: str, budget: GoalBudget) -> None:
        """Replace the goal's caps (goal.budget)."""

    async def resume_with_budget(self, goal_id: str, budget: GoalBudget) -> None:
        """A goal suspended at a cap: its caps raised, then resumed (pending)."""

    async def retry_goal(self, goal_id: str) -> None: ...

    async def set_priority(self, goal_id: str, priority: int) -> None: ...

    async def steer(self, goal_id: str, text: str) -> None:
        """A note to the goal, read by the planner at its next assessment (goal.steered)."""

    async def run_goals(self) -> RunOutcome:
        """Run the thread's ready goals (events on ``bus``, as ``run``)."""
        ...

    async def list_threads(self) -> list[ThreadView]: ...

    async def open_thread(self, thread_id: str) -> ThreadSnapshot: ...

    async def transcript(
        self,
        thread_id: str,
        *,
        before: int | None = None,
        limit: int | None = None,
        before_seq: int | None = None,
        after: int | None = None,
    ) -> list[dict[str, Any]]:
        """Stored transcript records (``id``, ``event``, ``tokens``) oldest first; paging
        back from a record id or a live event's seq."""
        ...

    async def new_thread(self) -> str: ...

    async def delete_thread(self, thread_id: str) -> None: ...

    async def undo_preview(self, thread_id: str) -> list[str]:
        """What ``/undo`` would put back (the thread's last run), newest first."""
        ...

    async def undo(self, thread_id: str) -> UndoReport: ...

    async def export_thread(self, thread_id: str) -> str: ...

    async def list_models(self) -> list[str]: ...

    async def set_model(self, name: str) -> None: ...

    def use_demo(self) -> None: ...
