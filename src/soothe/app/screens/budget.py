"""b in the goal tree (and resuming a goal suspended at a cap): a goal's budget, edited as
``--budget`` takes it (``calls=40,tokens=200k,time=30m``; ``KEY=none`` lifts a cap)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from soothe.app.screens.base import BOX_CSS, CLOSE

if TYPE_CHECKING:  # pydantic models: not imported for the first frame
    from soothe.engine.goal_contract import GoalBudget


class BudgetDialog(ModalScreen["GoalBudget | None"]):
    """Dismissed with the budget read from the input (None: cancelled). A budget it
    cannot read stays open with the one-line reason."""

    BINDINGS: ClassVar[list[BindingType]] = CLOSE
    DEFAULT_CSS = (
        BOX_CSS.format(name="BudgetDialog")
        + """
    BudgetDialog .problem { color: $error; height: auto; }
    """
    )

    def __init__(self, title: str, lead: str, budget: GoalBudget, enter: str = "sets") -> None:
        super().__init__()
        self.title_text = title
        self.lead = lead
        self.budget = budget
        self.enter = enter

    def compose(self) -> ComposeResult:
        from soothe.engine.goal_args import format_budget

        with Vertical() as box:
            box.border_title = self.title_text
            box.border_subtitle = f"enter {self.enter} · esc cancels"
            yield Static(self.lead, classes="lead")
            yield Input(
                format_budget(self.budget),
                placeholder="calls=40,tokens=200k,time=30m",
                id="budget-text",
            )
            yield Static("", classes="problem", id="budget-problem")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        from soothe.engine.goal_args import parse_budget
        from soothe.engine.goal_contract import GoalBudget

        event.stop()
        text = event.value.strip()
        try:
            # the field is the whole budget: a key left out (or an emptied field) is no cap
            budget = parse_budget(text) if text else GoalBudget()
        except ValueError as exc:
            self.query_one("#budget-problem", Static).update(str(exc))
            return
        self.dismiss(budget)

    def action_close(self) -> None:
        self.dismiss(None)
