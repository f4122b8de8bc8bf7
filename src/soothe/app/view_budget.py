"""The view model's budget events: a goal's caps and spend on its GoalView, a note when
its caps change, and the running goal's spend on the status line (ViewState inherits
this part; the names it uses below are ViewState's)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from soothe.app.view_port import CONVERSATION

if TYPE_CHECKING:
    from soothe.app.view_port import ViewPort
    from soothe.engine import events as ev
    from soothe.engine.views import GoalView
    from soothe.widgets.transcript import NoteKind


class BudgetEvents:
    goals: dict[str, GoalView]
    live: bool
    port: ViewPort
    _budget_shown: str = ""
    """The goal whose spend the status line shows ("" none)."""

    if TYPE_CHECKING:  # defined by ViewState

        def note(self, keys: Iterable[str], text: str, kind: NoteKind = "info") -> None: ...

        def _update_goal(self, goal_id: str, **changes: Any) -> GoalView: ...

    def _goal_budget_set(self, event: ev.GoalBudgetSet) -> None:
        """New caps (``b``, a resume with a raised cap): on the goal, and one note."""
        from soothe.engine.goal_args import format_budget

        if not event.goal_id:
            return
        self._update_goal(event.goal_id, budget=event.budget, spent=event.spent)
        caps = format_budget(event.budget) or "no cap"
        self.note([CONVERSATION, event.goal_id], f"{event.goal_id} budget: {caps}", "info")
        self._budget_follow(event.goal_id)

    def _goal_spent(self, event: ev.GoalSpent) -> None:
        if event.goal_id:
            self._update_goal(event.goal_id, spent=event.spent)
            self._budget_follow(event.goal_id)

    def _budget_follow(self, goal_id: str) -> None:
        """The status line shows a running goal's spend against its budget; it goes when
        that goal stops running."""
        from soothe.engine.goal_budget import has_budget, spend_line

        goal = self.goals.get(goal_id)
        if goal is None or not self.live:
            return
        if goal.status == "active" and has_budget(goal.budget):
            self._budget_shown = goal_id
            self.port.status(budget=f"{goal_id} {spend_line(goal.budget, goal.spent)}")
        elif self._budget_shown == goal_id:
            self._budget_shown = ""
            self.port.status(budget="")
