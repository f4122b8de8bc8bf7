"""MainScreen: goal tree | stream | evidence, the prompt and the status line."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Static

from soothe.widgets.evidence_panel import EvidencePanel
from soothe.widgets.footer import SteadyFooter
from soothe.widgets.goal_tree import GoalTree
from soothe.widgets.notice import Notice
from soothe.widgets.prompt_input import PromptInput
from soothe.widgets.queued import QueuedRequests
from soothe.widgets.status_line import StatusLine
from soothe.widgets.step_stream import StepStream

EMPTY_GOALS = "No goals yet — type a request below, or press n to add a goal."
WIDE_ENOUGH_FOR_EVIDENCE = 120


class MainScreen(Screen[None]):
    AUTO_FOCUS = "#prompt"

    def __init__(self, prompt: PromptInput, on_ready: Callable[[], None]) -> None:
        super().__init__(id="main")
        self.ready_callback = on_ready
        self.goal_tree = GoalTree(id="goal-tree")
        self.stream = StepStream(id="stream")
        self.evidence = EvidencePanel(id="evidence")
        self.prompt = prompt
        self.queued = QueuedRequests(id="queued")
        self.status = StatusLine(id="status")
        self.goals_empty = Static(EMPTY_GOALS, id="goals-empty")
        self.notices: dict[str, Notice] = {}
        """The notice on screen for each key (one at most)."""
        self.evidence_chosen: bool | None = None
        """The user's explicit show/hide of the evidence panel (None: by width)."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            with Vertical(id="goals-pane") as goals:
                goals.border_title = "Goals"
                yield self.goal_tree
                yield self.goals_empty
            with Vertical(id="center"):
                yield self.stream
            yield self.evidence
        yield self.queued
        yield self.prompt
        yield self.status
        yield SteadyFooter(id="footer")

    def on_mount(self) -> None:
        self.stream.border_title = "Conversation"
        self.evidence.border_title = "Evidence"
        self.goal_tree.move_cursor(self.goal_tree.conversation)
        self._fit_evidence()
        self.ready_callback()

    def on_resize(self) -> None:
        self._fit_evidence()

    def _fit_evidence(self) -> None:
        if self.evidence_chosen is None:
            self.evidence.display = self.size.width >= WIDE_ENOUGH_FOR_EVIDENCE

    def goals_changed(self, count: int) -> None:
        self.goals_empty.display = count == 0

    def show_notice(self, notice: Notice) -> Notice:
        """Show ``notice``; one already on screen with its key takes its text instead."""
        current = self.notices.get(notice.key) if notice.key else None
        if current is not None and not current.leaving:
            current.show(notice)
            return current
        if notice.key:
            self.notices[notice.key] = notice
        self.query_one("#center", Vertical).mount(notice, before=0)
        return notice

    def remove_notice(self, key_or_notice: str | Notice) -> None:
        """Remove a notice (by key or the widget); nothing happens if it is gone already."""
        if isinstance(key_or_notice, Notice):
            notice: Notice | None = key_or_notice
            if self.notices.get(key_or_notice.key) is key_or_notice:
                del self.notices[key_or_notice.key]
        else:
            notice = self.notices.pop(key_or_notice, None)
        if notice is not None and not notice.leaving:
            notice.remove()

    def has_notice(self, key: str) -> bool:
        notice = self.notices.get(key)
        return notice is not None and not notice.leaving

    def toggle_evidence(self) -> None:
        """ctrl+e: show and focus; again (while focused) hide and go back to the prompt."""
        if self.evidence.display and self.evidence.has_focus:
            self.evidence_chosen = False
            self.evidence.display = False
            self.prompt.focus()
        else:
            self.evidence_chosen = True
            self.evidence.display = True
            self.evidence.focus()
