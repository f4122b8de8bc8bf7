"""e on a goal in the tree: its done-when criteria, one per line, to edit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from soothe.app.screens.base import BOX_CSS, CLOSE
from soothe.widgets.criteria import CriteriaArea, criteria_lines


class CriteriaDialog(ModalScreen[list[str] | None]):
    """The goal's done-when criteria (prefilled); ctrl+s saves them, esc keeps them."""

    BINDINGS: ClassVar[list[BindingType]] = CLOSE
    DEFAULT_CSS = (
        BOX_CSS.format(name="CriteriaDialog")
        + """
    CriteriaDialog CriteriaArea { height: 8; margin-bottom: 1; }
    """
    )

    def __init__(self, goal_id: str, criteria: Sequence[str]) -> None:
        super().__init__()
        self.goal_id = goal_id
        self.initial = list(criteria)

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"{self.goal_id} is done when…"
            box.border_subtitle = "ctrl+s saves · esc cancels"
            yield Static(
                "One criterion per line; the verifier checks each against the goal's "
                "evidence when the goal is assessed done. Empty: no criteria.",
                classes="lead",
            )
            yield CriteriaArea("\n".join(self.initial), id="criteria")

    def on_mount(self) -> None:
        self.query_one(CriteriaArea).focus()

    def on_criteria_area_save(self, event: CriteriaArea.Save) -> None:
        event.stop()
        self.dismiss(criteria_lines(self.query_one(CriteriaArea).text))

    def action_close(self) -> None:
        self.dismiss(None)
