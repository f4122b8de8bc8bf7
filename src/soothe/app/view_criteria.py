"""The view model's done-when events: a goal's criteria on its GoalView (the goal's
details draw them), and a note in the conversation and the goal's view when they are set
or the verifier has judged them (ViewState inherits this part; the names it uses below
are ViewState's). Replayed from the store, the notes come back where they were."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from soothe.app.view_port import CONVERSATION
from soothe.engine.goal_verdicts import criterion_line, verdict_summary

if TYPE_CHECKING:
    from soothe.engine import events as ev
    from soothe.engine.goal_contract import Criterion
    from soothe.engine.views import GoalView
    from soothe.widgets.transcript import NoteKind


def criteria_note(goal_id: str, head: str, criteria: Sequence[Criterion]) -> str:
    """``G1 HEAD`` and one indented line per criterion (``✓ text — reason (E-G1-2)``)."""
    return "\n".join([f"{goal_id} {head}", *(f"  {criterion_line(c)}" for c in criteria)])


class CriteriaEvents:
    if TYPE_CHECKING:  # defined by ViewState

        def note(self, keys: Iterable[str], text: str, kind: NoteKind = "info") -> None: ...

        def _update_goal(self, goal_id: str, **changes: Any) -> GoalView: ...

    def _criteria_created(self, goal_id: str, criteria: Sequence[Criterion]) -> None:
        """A new goal with criteria: they follow its creation line."""
        if criteria:
            self.note([CONVERSATION, goal_id], criteria_note(goal_id, "done when:", criteria))

    def _goal_criteria_set(self, event: ev.GoalCriteriaSet) -> None:
        if not event.goal_id:
            return
        self._update_goal(event.goal_id, criteria=list(event.criteria))
        head = "done when:" if event.criteria else "done when: no criteria now"
        self.note([CONVERSATION, event.goal_id], criteria_note(event.goal_id, head, event.criteria))

    def _goal_verified(self, event: ev.GoalVerified) -> None:
        if not event.goal_id:
            return
        self._update_goal(event.goal_id, criteria=list(event.criteria))
        head = f"verified: {verdict_summary(event.criteria)}"
        kind: NoteKind = "ok" if event.met else "warn"
        self.note(
            [CONVERSATION, event.goal_id], criteria_note(event.goal_id, head, event.criteria), kind
        )
