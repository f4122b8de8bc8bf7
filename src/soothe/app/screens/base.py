"""What every modal shares: the dialog box CSS and the close key.

Two box styles: ``BOX_CSS`` (the app's own dialogs: a plain ``Vertical`` box) and
``REQUEST_CSS`` (the engine's requests, clarification and approval: a padded ``.dialog``
box with a row of buttons). A dialog formats one with its class name and appends its own
rules.
"""

from __future__ import annotations

from textual.binding import Binding, BindingType

CLOSE: list[BindingType] = [Binding("escape", "close", "Close", id="dialog.close")]

BOX_CSS = """
{name} {{ align: center middle; background: $background 60%; }}
{name} > Vertical {{
    width: 72;
    max-width: 95%;
    height: auto;
    max-height: 90%;
    padding: 0 1;
    border: round $primary;
    border-title-color: $primary;
    border-subtitle-color: $text-muted;
    background: $surface;
}}
{name} .lead {{ color: $text-muted; margin: 1 0; }}
"""

REQUEST_CSS = """
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
