"""QueuedRequests: the requests typed while a run goes on, in the order they will be sent.

Shown above the prompt only while it holds something. Each row is one request (its first
line; a long paste as ``pasted N lines``). It takes focus (shift+tab from the prompt, or a
click): up/down move, ``e`` or enter takes the request back into the prompt to edit it,
``d`` or delete removes it, escape goes back to the prompt. The widget only says what the
user asked (``Edit``, ``Remove``): the app owns the queue and sends it when the run ends.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from soothe.engine.sanitize import one_line

FOLD_LINES = 10
"""A request of this many lines or more is shown as ``pasted N lines`` (a long paste)."""


def request_label(text: str, width: int = 70) -> str:
    """One line for a request: its first line, or ``pasted N lines · first line``."""
    lines = text.splitlines()
    head = one_line(next((line for line in lines if line.strip()), ""), width)
    if len(lines) >= FOLD_LINES:
        return f"pasted {len(lines)} lines · {head}"
    return one_line(text, width)


class QueuedRequests(Static, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "Up", show=False, id="queue.cursor_up"),
        Binding("down,j", "move(1)", "Down", show=False, id="queue.cursor_down"),
        Binding("e,enter", "edit", "Edit queued", id="queue.edit"),
        Binding("d,delete,backspace", "remove", "Remove queued", id="queue.remove"),
        Binding("escape", "leave", "Back to prompt", show=False, id="queue.back"),
    ]

    DEFAULT_CSS = """
    QueuedRequests {
        height: auto;
        max-height: 8;
        padding: 0 1;
        color: $text-muted;
        background: $surface;
        border-left: outer $accent;
        &:focus { color: $text; }
    }
    """

    class Edit(Message):
        """Take request ``index`` back into the prompt."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    class Remove(Message):
        """Drop request ``index`` from the queue."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    class Leave(Message):
        """Escape: back to the prompt."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.items: list[str] = []
        self.cursor = 0
        self.held = False
        """The run before was interrupted: the queue waits for the user."""
        self.display = False

    def set_items(self, items: list[str], *, held: bool = False) -> None:
        self.items = list(items)
        self.held = held
        self.cursor = max(0, min(self.cursor, len(self.items) - 1))
        self.display = bool(self.items)
        self._draw()

    def _draw(self) -> None:
        if not self.items:
            self.update("")
            return
        when = (
            "held: the run was interrupted — e puts one back in the prompt"
            if self.held
            else "sent one by one when the run ends"
        )
        keys = "shift+tab here · e edit · d remove"
        parts: list[tuple[str, str] | str] = [
            (f"queued ({len(self.items)}) · {when} · {keys}", "italic"),
        ]
        for index, text in enumerate(self.items):
            mark = "▸ " if index == self.cursor and self.has_focus else "  "
            style = "bold $accent" if index == self.cursor and self.has_focus else ""
            parts.append("\n")
            parts.append((f"{mark}{index + 1}. {request_label(text)}", style))
        self.update(Content.assemble(*parts))

    def on_focus(self, event: events.Focus) -> None:
        self._draw()

    def on_blur(self, event: events.Blur) -> None:
        self._draw()

    def action_move(self, step: int) -> None:
        if self.items:
            self.cursor = (self.cursor + step) % len(self.items)
            self._draw()

    def action_edit(self) -> None:
        if self.items:
            self.post_message(self.Edit(self.cursor))

    def action_remove(self) -> None:
        if self.items:
            self.post_message(self.Remove(self.cursor))

    def action_leave(self) -> None:
        self.post_message(self.Leave())
