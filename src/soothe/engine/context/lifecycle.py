"""The goal lifecycle table (DESIGN.md) and the step lifecycle table.

``check_goal_move`` is consulted by the engine's one transition function; it only knows
the table. Guards that need the graph (dependencies, conflicts, retries left) live in the
engine next to the data they read.
"""

from __future__ import annotations

from typing import get_args

from soothe.engine.context.errors import IllegalStepTransition, IllegalTransition
from soothe.engine.events import GoalStatus, StepStatus

GOAL_STATES: tuple[str, ...] = get_args(GoalStatus)
STEP_STATES: tuple[str, ...] = get_args(StepStatus)

_PAUSED_EXITS = frozenset({"pending", "completed", "failed", "cancelled"})

GOAL_TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"active", "completed", "failed", "suspended", "blocked", "cancelled"}),
    "active": frozenset(
        {
            "completed",
            "validated",
            "failed",
            "suspended",
            "blocked",
            "awaiting_clarification",
            "cancelled",
            "pending",
        }
    ),
    # failed -> pending: a retry. ``retry_goal`` (and fail_goal's automatic retry) only
    # while retries remain (retry_count < max_retries, +1 each); ``retry_goal_fresh``,
    # the user's explicit retry, starts a fresh budget (retry_count back to 0).
    "failed": frozenset({"pending"}),
    "suspended": _PAUSED_EXITS,
    "blocked": _PAUSED_EXITS,
    "awaiting_clarification": _PAUSED_EXITS,
    "validated": frozenset({"completed", "failed", "cancelled"}),
    "cancelled": frozenset({"pending"}),
    "completed": frozenset(),
}

STEP_TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"active", "completed", "failed", "skipped"}),
    "active": frozenset({"completed", "failed", "skipped"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "skipped": frozenset(),
}


def goal_move_allowed(from_status: str, to_status: str) -> bool:
    return to_status in GOAL_TRANSITIONS.get(from_status, frozenset())


def check_goal_move(goal_id: str, from_status: str, to_status: str) -> bool:
    """True when the move changes state, False for a no-op move into the current state.

    Raises IllegalTransition for anything the table does not allow.
    """
    if to_status not in GOAL_STATES:
        raise IllegalTransition(goal_id, from_status, to_status, "unknown status")
    if from_status == to_status:
        return False
    if not goal_move_allowed(from_status, to_status):
        raise IllegalTransition(goal_id, from_status, to_status)
    return True


def check_step_move(goal_id: str, step_id: str, from_status: str, to_status: str) -> bool:
    if to_status not in STEP_STATES:
        raise IllegalStepTransition(goal_id, step_id, from_status, to_status)
    if from_status == to_status:
        return False
    if to_status not in STEP_TRANSITIONS.get(from_status, frozenset()):
        raise IllegalStepTransition(goal_id, step_id, from_status, to_status)
    return True
