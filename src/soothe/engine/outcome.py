"""RunOutcome: what one request (or a resume, or a scheduler pass) ended with.

A run's events go out on the bus, once; the caller that started the run gets this value
back instead of a second copy of every event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

OutcomeStatus = Literal["answered", "failed", "interrupted"]


@dataclass(frozen=True, slots=True)
class RunOutcome:
    thread_id: str
    status: OutcomeStatus
    answer: str = ""
    """The final answer (or report) shown to the user; empty when there is none."""
    error: str = ""
    """One line saying why the run failed (status ``failed``)."""
    kind: str = ""
    """The error's kind (e.g. ``unreachable``, ``model_not_found``) when it failed."""
    goal_ids: tuple[str, ...] = field(default_factory=tuple)
    model_calls: int = 0
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "answered"
