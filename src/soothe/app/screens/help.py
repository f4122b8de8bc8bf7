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

from soothe.app.keymap import help_rows
from soothe.widgets.prompt_input import SLASH_COMMANDS

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
    for name, what in SLASH_COMMANDS.items():
        parts.append((f"  {name:<{KEY_WIDTH}}", "$accent"))
        parts.append(f"{what}\n")
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
    DEFAULT_CSS = """
    HelpScreen { align: center middle; background: $background 60%; }
    HelpScreen > Vertical {
        width: 84;
        max-width: 96%;
        height: 90%;
        border: round $primary;
        border-title-color: $primary;
        border-subtitle-color: $text-muted;
        background: $surface;
        padding: 0 1;
    }
    HelpScreen VerticalScroll { scrollbar-size-vertical: 1; }
    """

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
