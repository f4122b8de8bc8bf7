"""ApprovalModal: a tool call waiting for permission — once, always for this tool, deny."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from soothe.app.keymap import APPROVAL, bindings
from soothe.widgets.clarification_modal import DIALOG_CSS

Choice = Literal["approve_once", "approve_always", "deny"]


class ApprovalModal(ModalScreen[Choice]):
    BINDINGS: ClassVar[list[BindingType]] = bindings(APPROVAL)
    DEFAULT_CSS = (
        DIALOG_CSS.format(name="ApprovalModal")
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
