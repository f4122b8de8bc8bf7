"""The engine's requests that need an answer: clarification questions and tool approval.

The app opens them from ``ClarificationRequested`` / ``ApprovalRequested`` events and hands
the result to the interact broker. What they ask comes from a model (a command, a path,
a question): every control character in it is shown (``sanitize.visible``: ``␛``, ``␍``,
``␉`` ...), so a command holding CR and erase-line looks like what runs, not like
the text after them.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from soothe.app.screens.base import REQUEST_CSS
from soothe.engine.agent.change_preview import ChangePreview
from soothe.engine.sanitize import plain, visible


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
        self.asker = plain(asker)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as dialog:
            dialog.border_title = "Clarification needed"
            dialog.border_subtitle = "enter next · ctrl+s submit · esc skip"
            who = self.asker or "The agent"
            yield Static(Content(f"{who} needs answers to continue."), classes="dialog-lead")
            with VerticalScroll(classes="answers"):
                for index, question in enumerate(self.questions):
                    shown = visible(question, keep_newlines=True)
                    yield Label(Content(f"{index + 1}. {shown}"), classes="question")
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


def request_title(tool: str, goal_id: str | None, step_id: str | None) -> str:
    """ "G1/S-02 wants to write_file" (as much of the goal/step as the request names)."""
    where = "/".join(visible(part) for part in (goal_id, step_id) if part)
    return f"{where or 'The agent'} wants to {visible(tool)}"


def always_label(tool: str, args: dict[str, Any]) -> Content:
    """What "always" covers: the tool, or for run_shell the command's program (bold)."""
    if tool != "run_shell":
        return Content.assemble("Always ", (visible(tool), "bold"))
    from soothe.engine.agent.approval import shell_program

    program = shell_program(str(args.get("command", "")))
    return (
        Content.assemble("Always ", (visible(program), "bold"))
        if program
        else Content("Always this command")
    )


class ApprovalModal(ModalScreen[Choice]):
    """A tool call waiting for permission: once, always (this tool; for run_shell this
    program), or deny. File changes show as a unified diff against the file on disk,
    run_shell's command as a command."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "choose('approve_once')", "Approve once", id="approval.once"),
        Binding("A", "choose('approve_always')", "Always", id="approval.always"),
        Binding("d,escape", "choose('deny')", "Deny", id="approval.deny"),
    ]
    DEFAULT_CSS = (
        REQUEST_CSS.format(name="ApprovalModal")
        + """
    ApprovalModal > .dialog {
        width: 100;
        border: round $warning;
        border-title-color: $warning;
    }
    ApprovalModal .field { color: $text-muted; }
    ApprovalModal .tool { text-style: bold; }
    ApprovalModal .change { text-style: bold; color: $warning; margin-top: 1; }
    ApprovalModal .problem { color: $error; }
    ApprovalModal .args {
        height: auto;
        max-height: 20;  /* fewer on a short terminal: ApprovalModal._fit */
        background: $background;
        padding: 0 1;
        margin: 1 0;
    }
    """
    )

    def __init__(
        self,
        request_id: str,
        tool: str,
        args: dict[str, Any],
        path: str = "",
        asker: str = "",
        *,
        goal_id: str | None = None,
        step_id: str | None = None,
        change: ChangePreview | None = None,
    ) -> None:
        super().__init__()
        self.request_id = request_id
        self.tool = tool
        self.args = args
        self.path = path
        self.asker = plain(asker)
        self.title_text = request_title(tool, goal_id, step_id)
        self.change = change

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog") as dialog:
            dialog.border_title = self.title_text
            dialog.border_subtitle = "a once · A always · d/esc deny"
            if self.asker:
                yield Static(Content(self.asker), classes="dialog-lead")
            tool = visible(self.tool)
            yield Static(Content.assemble(("tool      ", "$text-muted"), (tool, "bold")))
            if self.path:
                label = "workspace " if self.tool == "run_shell" else "file      "
                yield Static(Content.assemble((label, "$text-muted"), visible(self.path)))
            yield from self._body()
            with Horizontal(classes="buttons"):
                yield Button("Deny", id="deny", variant="error")
                yield Button(always_label(self.tool, self.args), id="approve_always")
                yield Button("Approve once", id="approve_once", variant="success")

    def _body(self) -> ComposeResult:
        change = self.change
        if change is not None:
            yield Static(Content(plain(change.summary)), classes="change")
            if change.problem:
                yield Static(Content(plain(change.problem)), classes="problem")
        if change is not None and change.command:
            with VerticalScroll(classes="args"):
                command = visible(change.command, keep_newlines=True)
                yield Static(self._syntax(command, "bash"), id="command")
            timeout = self.args.get("timeout")
            if isinstance(timeout, int | float):
                yield Static(Content.assemble(("timeout   ", "$text-muted"), f"{timeout:g} s"))
        elif change is not None and change.diff:
            with VerticalScroll(classes="args"):
                diff = visible(change.diff, keep_newlines=True)
                yield Static(self._syntax(diff, "diff"), id="diff")
        elif change is None or change.problem:
            # json escapes C0 (\u001b); visible shows what it leaves (DEL, C1, bidi)
            text = visible(
                json.dumps(self.args, indent=2, ensure_ascii=False, default=str),
                keep_newlines=True,
            )
            with VerticalScroll(classes="args"):
                yield Static(Content(text), id="args")

    def _syntax(self, code: str, lexer: str) -> Any:
        from rich.syntax import Syntax

        theme = self.app.current_theme
        dark = theme.dark if theme else True
        # one background across the block (the .args box's own): a token's colour must
        # not stop where its text does, leaving a ragged edge
        background = (theme.background if theme else None) or ("#000000" if dark else "#ffffff")
        return Syntax(
            code.rstrip("\n"),
            lexer,
            theme="ansi_dark" if dark else "ansi_light",
            background_color=background,
            word_wrap=True,
        )

    ARGS_ROWS = 20
    """The diff/command box's rows at most; fewer on a short terminal (the box scrolls)."""

    def _fixed_rows(self) -> int:
        """The rows the dialog needs besides the box: border and padding 4, the asker 2,
        tool and file 2, the change 2, the box's margins 2, the buttons 4; a problem and
        a timeout line 1 each; and the 10% the dialog leaves the screen (its max-height),
        counted as 3 (2.4 at 24 rows, rounded up)."""
        change = self.change
        extra = int(bool(change and change.problem)) + int("timeout" in self.args)
        return 16 + extra + 3

    def _fit(self, height: int) -> None:
        """At 80x24 a diff of 8 lines pushed the buttons out of the dialog: the box gives
        way first, so the buttons always show."""
        rows = max(3, min(self.ARGS_ROWS, height - self._fixed_rows()))
        for box in self.query(".args"):
            box.styles.max_height = rows

    def on_mount(self) -> None:
        self._fit(self.app.size.height)
        self.query_one("#approve_once", Button).focus()

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.height)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id or "deny")

    def action_choose(self, choice: str) -> None:
        if choice not in ("approve_once", "approve_always", "deny"):
            choice = "deny"
        self.dismiss(choice)  # type: ignore[arg-type]
