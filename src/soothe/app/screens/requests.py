"""The engine's requests that need an answer: clarification questions and tool approval.

The app opens them from ``ClarificationRequested`` / ``ApprovalRequested`` events and hands
the result to the interact broker.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from soothe.app.screens.base import REQUEST_CSS


class ClarificationModal(ModalScreen[list[str] | None]):
    """The questions a goal asked, one field each; dismisses with the answers (one per
    question) or None when skipped."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "submit", "Submit", id="clarify.submit"),
        Binding("escape", "skip", "Skip", id="clarify.skip"),
    ]
    DEFAULT_CSS = (
        REQUEST_CSS.format(name="ClarificationModal")
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


Choice = Literal["approve_once", "approve_always", "deny"]


class ApprovalModal(ModalScreen[Choice]):
    """A tool call waiting for permission: once, always for this tool, or deny."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "choose('approve_once')", "Approve once", id="approval.once"),
        Binding("A", "choose('approve_always')", "Always for this tool", id="approval.always"),
        Binding("d,escape", "choose('deny')", "Deny", id="approval.deny"),
    ]
    DEFAULT_CSS = (
        REQUEST_CSS.format(name="ApprovalModal")
        + """
    ApprovalModal > .dialog { border: round $warning; border-title-color: $warning; }
    ApprovalModal .field { color: $text-muted; }
    ApprovalModal .tool { text-style: bold; }
    ApprovalModal .args {
        height: auto;
        max-height: 14;
        background: $boost;
        padding: 0 1;
        margin: 1 0;
    }
    """
    )

    def __init__(
        self, request_id: str, tool: str, args: dict[str, Any], path: str = "", asker: str = ""
    ) -> None:
        super().__init__()
        self.request_id = request_id
        self.tool = tool
        self.args = args
        self.path = path
        self.asker = asker

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as dialog:
            dialog.border_title = "Approve tool call?"
            dialog.border_subtitle = "a once · A always · d/esc deny"
            who = f"{self.asker} wants to run" if self.asker else "The agent wants to run"
            yield Static(Content(who), classes="dialog-lead")
            yield Static(Content.assemble(("tool      ", "$text-muted"), (self.tool, "bold")))
            if self.path:
                yield Static(Content.assemble(("workspace ", "$text-muted"), self.path))
            text = json.dumps(self.args, indent=2, ensure_ascii=False, default=str)
            with VerticalScroll(classes="args"):
                yield Static(Content(text))
            with Horizontal(classes="buttons"):
                yield Button("Deny", id="deny", variant="error")
                yield Button("Always for this tool", id="approve_always")
                yield Button("Approve once", id="approve_once", variant="success")

    def on_mount(self) -> None:
        self.query_one("#approve_once", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id or "deny")

    def action_choose(self, choice: str) -> None:
        if choice not in ("approve_once", "approve_always", "deny"):
            choice = "deny"
        self.dismiss(choice)  # type: ignore[arg-type]
