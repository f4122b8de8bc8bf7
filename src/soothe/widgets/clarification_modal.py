"""ClarificationModal: the questions a goal asked, one field each; submit or skip.

Dismisses with the answers (a list, one per question) or None when skipped.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from soothe.app.keymap import CLARIFY, bindings

DIALOG_CSS = """
{name} {{
    align: center middle;
    background: $background 60%;
}}
{name} > .dialog {{
    width: 76;
    max-width: 95%;
    height: auto;
    max-height: 90%;
    padding: 1 2;
    border: round $accent;
    border-title-color: $accent;
    border-subtitle-color: $text-muted;
    background: $surface;
}}
{name} .dialog-lead {{ color: $text-muted; margin-bottom: 1; }}
{name} .buttons {{ height: auto; margin-top: 1; align-horizontal: right; }}
{name} .buttons Button {{ margin-left: 2; }}
"""


class ClarificationModal(ModalScreen[list[str] | None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings(CLARIFY)
    DEFAULT_CSS = (
        DIALOG_CSS.format(name="ClarificationModal")
        + """
    ClarificationModal .question { margin-top: 1; text-style: bold; }
    ClarificationModal .answers { height: auto; max-height: 20; }
    """
    )

    def __init__(self, request_id: str, questions: list[str], asker: str = "") -> None:
        super().__init__()
        self.request_id = request_id
        self.questions = list(questions) or ["(no question given)"]
        self.asker = asker

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as dialog:
            dialog.border_title = "Clarification needed"
            dialog.border_subtitle = "enter next · ctrl+s submit · esc skip"
            who = self.asker or "The agent"
            yield Static(Content(f"{who} needs answers to continue."), classes="dialog-lead")
            with VerticalScroll(classes="answers"):
                for index, question in enumerate(self.questions):
                    yield Label(Content(f"{index + 1}. {question}"), classes="question")
                    yield Input(placeholder="your answer", id=f"answer-{index}")
            with Horizontal(classes="buttons"):
                yield Button("Skip", id="skip")
                yield Button("Submit", id="submit", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#answer-0", Input).focus()

    def answers(self) -> list[str]:
        return [self.query_one(f"#answer-{i}", Input).value for i in range(len(self.questions))]

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        index = int((event.input.id or "answer-0").split("-")[1])
        if index + 1 < len(self.questions):
            self.query_one(f"#answer-{index + 1}", Input).focus()
        else:
            self.action_submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "submit":
            self.action_submit()
        else:
            self.action_skip()

    def action_submit(self) -> None:
        self.dismiss(self.answers())

    def action_skip(self) -> None:
        self.dismiss(None)
