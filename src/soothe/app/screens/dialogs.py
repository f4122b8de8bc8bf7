"""Small dialogs: an evidence entry, whole; a yes/no question."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from soothe.app.screens.base import BOX_CSS

if TYPE_CHECKING:
    from soothe.engine.views import EvidenceView


class EvidenceDialog(ModalScreen[None]):
    """An evidence entry, whole."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q", "close", "Close", id="dialog.close")
    ]
    DEFAULT_CSS = (
        BOX_CSS.format(name="EvidenceDialog")
        + """
    EvidenceDialog > Vertical { width: 96; }
    EvidenceDialog VerticalScroll { height: auto; max-height: 36; }
    """
    )

    def __init__(self, entry: EvidenceView) -> None:
        super().__init__()
        self.entry = entry

    def compose(self) -> ComposeResult:
        entry = self.entry
        origin = "/".join(p for p in (entry.goal_id, entry.step_id) if p) or "run"
        with Vertical() as box:
            box.border_title = f"Evidence {entry.evidence_id}"
            box.border_subtitle = f"{entry.kind} · from {origin} · esc closes"
            yield Static(Content(entry.summary), classes="lead")
            with VerticalScroll():
                yield Static(Content(entry.content or "(no content)"))

    def action_close(self) -> None:
        self.dismiss(None)


class ConfirmDialog(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="dialog.yes"),
        Binding("n,escape", "answer(False)", "No", id="dialog.no"),
    ]
    DEFAULT_CSS = (
        BOX_CSS.format(name="ConfirmDialog")
        + """
    ConfirmDialog Horizontal { height: auto; align-horizontal: right; margin-bottom: 1; }
    ConfirmDialog Button { margin-left: 2; }
    """
    )

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Confirm"
            yield Static(Content(self.question), classes="lead")
            with Horizontal():
                yield Button("No (n)", id="no")
                yield Button("Yes (y)", id="yes", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
