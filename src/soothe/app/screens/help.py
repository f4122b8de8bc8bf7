"""HelpScreen (F1): every key by scope, with the user's overrides, and the slash commands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from soothe.app.commands import COMMANDS
from soothe.app.keymap import help_rows
from soothe.app.screens.base import BOX_CSS

KEY_WIDTH = 20
DESC_WIDTH = 22


def help_content(overrides: Mapping[str, str]) -> Content:
    parts: list[Content | tuple[str, str] | str] = []
    for scope, rows in help_rows(overrides):
        parts.append((f"{scope}\n", "bold $primary"))
        for keys, description, binding_id in rows:
            parts.append((f"  {keys:<{KEY_WIDTH}}", "$accent"))
            parts.append(f"{description:<{DESC_WIDTH}}")
            parts.append((f"{binding_id}\n", "$text-muted"))
        parts.append("\n")
    parts.append(("Commands (type in the prompt)\n", "bold $primary"))
    for command in COMMANDS:
        parts.append((f"  {command.word:<{KEY_WIDTH}}", "$accent"))
        parts.append(f"{command.summary}\n")
    parts.append("\n")
    parts.append(
        (
            "Change any key by its id in config.toml, for example\n"
            '  [ui.keymap]\n  "tree.cancel" = "delete"',
            "$text-muted",
        )
    )
    return Content.assemble(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="dialog.close"),
    ]
    DEFAULT_CSS = (
        BOX_CSS.format(name="HelpScreen")
        + """
    HelpScreen > Vertical { width: 84; max-width: 96%; height: 90%; }
    HelpScreen VerticalScroll { scrollbar-size-vertical: 1; }
    """
    )

    def __init__(self, overrides: Mapping[str, str]) -> None:
        super().__init__()
        self.overrides = dict(overrides)

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Soothe — keys and commands"
            box.border_subtitle = "esc closes"
            with VerticalScroll():
                yield Static(help_content(self.overrides), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
