"""What each goal has spent and not yet stored: the meter behind per-goal budgets.

The hub charges a goal each model request it made for it (one call, the tokens the server
counted: prompt + completion). Time is the wall clock while the goal is ``active`` in this
process (not while it waits in the queue, for the user, or suspended): the clock starts
when the goal moves to active and stops when it leaves. ``GoalOps`` stores the spend
through the one write path: before each model call of the goal (``ContextEngine.
admit_goal``, so a killed process loses at most the call in flight) and in the move that
takes it out of ``active``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from soothe.engine.goal_contract import GoalSpend


@dataclass
class _Unsaved:
    calls: int = 0
    tokens: int = 0


@dataclass
class SpendMeter:
    unsaved: dict[str, _Unsaved] = field(default_factory=dict)
    since: dict[str, float] = field(default_factory=dict)
    """goal id -> monotonic time its clock (last) started or was last stored."""

    def charge(self, goal_id: str, calls: int, tokens: int) -> None:
        got = self.unsaved.setdefault(goal_id, _Unsaved())
        got.calls += calls
        got.tokens += max(tokens, 0)

    def start(self, goal_id: str) -> None:
        self.since.setdefault(goal_id, time.monotonic())

    def current(self, goal_id: str, stored: GoalSpend, now: float | None = None) -> GoalSpend:
        """``stored`` plus what is not stored yet (calls, tokens, the running clock)."""
        got = self.unsaved.get(goal_id)
        began = self.since.get(goal_id)
        running = ((now or time.monotonic()) - began) if began is not None else 0.0
        if got is None and not running:
            return stored
        return GoalSpend(
            calls=stored.calls + (got.calls if got else 0),
            tokens=stored.tokens + (got.tokens if got else 0),
            time_s=round(stored.time_s + max(running, 0.0), 3),
        )

    def pending(self, goal_id: str) -> bool:
        """Something to store: calls or tokens not stored, or a running clock."""
        return goal_id in self.unsaved or goal_id in self.since

    def stored(
        self, goal_id: str, spent: GoalSpend, base: GoalSpend, now: float, *, running: bool
    ) -> None:
        """``spent`` (what ``current(goal_id, base, now)`` gave) is stored: forget the
        part of it that was unsaved (a call charged meanwhile stays), and the clock goes
        on from ``now`` while the goal still runs."""
        got = self.unsaved.get(goal_id)
        if got is not None:
            got.calls -= spent.calls - base.calls
            got.tokens -= spent.tokens - base.tokens
            if got.calls <= 0 and got.tokens <= 0:
                del self.unsaved[goal_id]
        if running:
            self.since[goal_id] = now
        else:
            self.since.pop(goal_id, None)

    def forget(self, goal_id: str) -> None:
        self.unsaved.pop(goal_id, None)
        self.since.pop(goal_id, None)
