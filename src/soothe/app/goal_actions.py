"""Goal actions: the goal tree's keys (new, depends on, cancel, suspend, retry, priority,
details) and the panels' selections.

Each command calls the session and nothing more: what it changed comes back on the bus as
goal.created / goal.updated / goal.status_changed, and the handler draws it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from soothe.app.budget_actions import ask_budget, resume_at_cap
from soothe.app.screens.criteria import CriteriaDialog
from soothe.app.screens.dialogs import ConfirmDialog, EvidenceDialog
from soothe.app.screens.goals import DependencyDialog, GoalDetailDialog, GoalInputDialog
from soothe.app.screens.main import MainScreen
from soothe.app.view_port import one_line
from soothe.widgets.evidence_panel import EvidencePanel
from soothe.widgets.goal_tree import GoalTree, NodeRef
from soothe.widgets.step_card import card_facts

if TYPE_CHECKING:
    from soothe.app.base import SootheBase
    from soothe.app.session_api import SessionAPI
    from soothe.engine.goal_contract import GoalBudget
    from soothe.engine.views import GoalView

    _Base = SootheBase
else:
    _Base = object

PRIORITY_STEP = 10
TERMINAL = ("completed", "failed", "cancelled")


class GoalActions(_Base):
    def add_goal(
        self,
        description: str,
        priority: int = 50,
        criteria: Sequence[str] = (),
        budget: GoalBudget | None = None,
    ) -> None:
        # the goal.created event shows it (one line, with the ctrl+r hint)
        self.call_session(
            lambda s: s.add_goal(description, priority=priority, criteria=criteria, budget=budget),
            what="add the goal",
        )

    def goal_command(self, line: str) -> None:
        """``/goal TEXT --done-when "…" --budget calls=40,tokens=200k,time=30m``: a flag it
        cannot read is one warning line and nothing is added."""
        from soothe.engine.goal_args import parse_goal_args

        try:
            args = parse_goal_args(line)
        except ValueError as exc:
            self.notify(f"/goal: {exc}", severity="warning")
            return
        self.add_goal(args.text, criteria=args.criteria, budget=args.budget)

    def on_goal_tree_command(self, event: GoalTree.Command) -> None:
        event.stop()
        if event.command == "new":
            dialog = GoalInputDialog(criteria=[])

            def described(text: str | None) -> None:
                if text:
                    self.add_goal(text, criteria=dialog.criteria())

            self.push_screen(dialog, described)
            return
        goal = self.handler.goals.get(event.goal_id or "")
        if goal is None:
            self.notify("Select a goal first (up/down in the goal tree).", severity="warning")
            return
        actions: dict[str, Callable[[GoalView], None]] = {
            "details": lambda g: self._goal_details(g, event.step_id),
            "criteria": self._edit_criteria,
            "steer": self._ask_steer,
            "depend": self._pick_dependency,
            "undepend": self._pick_removal,
            "cancel": self._cancel_goal,
            "suspend": self._toggle_suspend,
            "resume": self._toggle_suspend,
            "retry": self._retry_goal,
            "budget": lambda g: ask_budget(self, g),  # budget_actions: b
            "priority_up": lambda g: self._shift_priority(g, PRIORITY_STEP),
            "priority_down": lambda g: self._shift_priority(g, -PRIORITY_STEP),
        }
        action = actions.get(event.command)
        if action is not None:
            action(goal)

    def _edit_criteria(self, goal: GoalView) -> None:
        """e on a goal: its done-when criteria in a dialog, one per line (goal.criteria_set
        redraws them; a completed goal's are final)."""
        if goal.status == "completed":
            self.notify(
                f"{goal.id} is completed: its done-when criteria are final.", severity="warning"
            )
            return
        dialog = CriteriaDialog(goal.id, [c.text for c in goal.criteria])

        def saved(criteria: list[str] | None) -> None:
            if criteria is not None:
                self.call_session(
                    lambda s: s.set_criteria(goal.id, criteria), what=f"set {goal.id}'s criteria"
                )

        self.push_screen(dialog, saved)

    def _ask_steer(self, goal: GoalView) -> None:
        """enter on a running goal: a note to it (as ``/steer TEXT``)."""

        def written(text: str | None) -> None:
            if text:
                self.call_session(lambda s: s.steer(goal.id, text), what=f"steer {goal.id}")

        self.push_screen(
            GoalInputDialog(
                title=f"Note to {goal.id}",
                lead="The planner reads it at the goal's next assessment.",
                placeholder="e.g. Skip the tests folder",
                enter="sends",
            ),
            written,
        )

    def _goal_details(self, goal: GoalView, step_id: str | None = None) -> None:
        evidence = sum(1 for e in self.handler.evidence.values() if e.goal_id == goal.id)
        answer = self.handler.answers.get(goal.id, "")
        facts = ""
        card = self.handler.state.cards.get(f"{goal.id}/{step_id}") if step_id else None
        if card is not None:
            detail = [one_line(card.detail, 300)] if card.detail else []
            facts = " · ".join([*card_facts(card), *detail])
        self.push_screen(
            GoalDetailDialog(goal, answer, evidence, step_id=step_id, step_facts=facts)
        )

    def _pick_dependency(self, goal: GoalView) -> None:
        gid = goal.id
        if self.session is None:
            self.notify("The engine is not loaded yet.", severity="warning")
            return
        allowed = set(self.session.dependency_candidates(gid))  # the engine's cycle check
        candidates = [g for g in self.handler.goals.values() if g.id in allowed]
        if not candidates:
            self.notify("No other goal to wait for (without a cycle).", severity="warning")
            return

        def picked(other: str | None) -> None:
            if other:
                self.call_session(lambda s: s.add_dependency(gid, other), what="add the dependency")

        self.push_screen(DependencyDialog(goal, candidates), picked)

    def _pick_removal(self, goal: GoalView) -> None:
        """D: pick one of the goals this one waits for; it stops waiting for it."""
        gid = goal.id
        waits_for = [g for d in goal.depends_on if (g := self.handler.goals.get(d)) is not None]
        if not waits_for:
            self.notify(f"{gid} waits for no other goal.", severity="warning")
            return

        def picked(other: str | None) -> None:
            if other:
                self.call_session(
                    lambda s: s.remove_dependency(gid, other), what="remove the dependency"
                )

        self.push_screen(DependencyDialog(goal, waits_for, removing=True), picked)

    def _cancel_goal(self, goal: GoalView) -> None:
        gid = goal.id
        if goal.status in TERMINAL:
            self.notify(f"{gid} is already {goal.status}.", severity="warning")
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.call_session(lambda s: s.cancel_goal(gid), what=f"cancel {gid}")

        question = f"Cancel {gid} “{goal.description[:60]}”? (r on it resumes it later)"
        self.push_screen(ConfirmDialog(question), confirmed)

    def _toggle_suspend(self, goal: GoalView) -> None:
        if resume_at_cap(self, goal):  # suspended at a cap: offers it raised first
            return
        self.call_session(lambda s: s.toggle_suspend(goal.id), what=f"suspend {goal.id}")

    def _retry_goal(self, goal: GoalView) -> None:
        if resume_at_cap(self, goal):  # r on a goal suspended at a cap: the same offer
            return
        self.call_session(lambda s: s.retry_goal(goal.id), what=f"retry {goal.id}")

    def _shift_priority(self, goal: GoalView, step: int) -> None:
        """+ / -: keys in one burst come before the first change is back as an event, so
        each shifts what the key before asked for (until the screen shows it), not the
        priority as last drawn (``+ + +`` raised it once)."""
        asked: dict[str, int] = self.__dict__.setdefault("_priority_asked", {})
        base = asked.get(goal.id, goal.priority)
        priority = max(0, min(100, base + step))
        if priority == base:
            return
        asked[goal.id] = priority

        async def shift(session: SessionAPI) -> None:
            try:
                await session.set_priority(goal.id, priority)
                with contextlib.suppress(TimeoutError):  # drawn from its event by now
                    await self.handler.wait_idle()
            finally:
                if asked.get(goal.id) == priority:  # no later key asked for more
                    del asked[goal.id]

        self.call_session(shift, what=f"reprioritise {goal.id}")

    def on_goal_tree_user_scrolled(self, event: GoalTree.UserScrolled) -> None:
        event.stop()
        self.handler.port.user_moved()

    def on_goal_tree_stream_chosen(self, event: GoalTree.StreamChosen) -> None:
        event.stop()
        if event.ref != self.main.goal_tree.selected_ref:
            return  # stale: the cursor moved on since (its own message follows)
        if event.ref.key != self.handler.visible:
            self.handler.select(event.ref, from_tree=True)

    def show_goal(self, goal_id: str) -> None:
        """The palette's "Goal G1: ..." entry: put the cursor on it."""
        if not isinstance(self.screen, MainScreen):
            return
        self.main.goal_tree.show_ref(NodeRef("goal", goal_id))
        self.main.goal_tree.focus()

    def on_evidence_panel_opened(self, event: EvidencePanel.Opened) -> None:
        event.stop()
        self.push_screen(EvidenceDialog(event.entry))
