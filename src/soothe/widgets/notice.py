"""Notice: a dismissible banner above the stream (no model server, engine missing).

A notice has a ``key`` (``"no-server"``), not a DOM id: the screen keeps one notice per
key and replaces its text in place (``Notice.show``), so showing, replacing and removing
the same notice any number of times never mounts two widgets with one id.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Static


class Notice(Vertical):
    DEFAULT_CSS = """
    Notice {
        height: auto;
        padding: 0 1;
        border: round $warning;
        border-title-color: $warning;
        background: $surface;
    }
    Notice.-error { border: round $error; border-title-color: $error; }
    Notice > .notice-body { height: auto; }
    Notice > Horizontal { height: auto; margin-top: 1; }
    Notice Button { margin-right: 2; min-width: 10; }
    """

    class Action(Message):
        def __init__(self, notice: Notice, action: str) -> None:
            super().__init__()
            self.notice = notice
            self.action = action

    def __init__(
        self,
        title: str,
        body: str,
        *,
        actions: tuple[tuple[str, str], ...] = (),
        error: bool = False,
        key: str = "",
    ) -> None:
        super().__init__(classes=f"notice-{key}" if key else "")
        self.key = key
        self.border_title = title
        self.body = body
        self.actions = actions
        self.set_class(error, "-error")

    @property
    def leaving(self) -> bool:
        """Removed, or being removed: a new notice with this key needs a new widget."""
        return not self.is_attached or self._pruning

    def show(self, other: Notice) -> None:
        """Take ``other``'s title, body, actions and severity, in place."""
        self.border_title = other.border_title
        self.set_class(other.has_class("-error"), "-error")
        if (other.body, other.actions) != (self.body, self.actions):
            self.body = other.body
            self.actions = other.actions
            self.refresh(recompose=True)

    def compose(self) -> ComposeResult:
        yield Static(Content(self.body), classes="notice-body")
        with Horizontal():
            for action, label in self.actions:
                yield Button(
                    label,
                    id=f"notice-{action}",
                    compact=True,
                    variant="primary" if action != "dismiss" else "default",
                )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        action = (event.button.id or "").removeprefix("notice-")
        self.post_message(self.Action(self, action))
