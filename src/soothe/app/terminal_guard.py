"""The app writes no control sequence it did not make itself.

Every cell Textual puts on the terminal goes through ``Strip.render`` (the compositor's
full, partial and inline updates): each segment's text, wrapped in its style's escape
codes. Rich and Textual keep ESC, BEL, C1 and the other controls in a text (Rich drops
only a few, and not ESC), so a model's answer holding ``ESC ] 0 ; title BEL`` set the
terminal's title from the app, and OSC 52 wrote the clipboard through tmux.

The view model makes engine text plain before it is laid out (``ViewState.feed``,
``sanitize.plain``). This guard is the last door, for text that reaches a widget another
way (a notification quoting an exception, a screen reading the session, a tooltip): it
takes the control characters out of each segment's text (C0, DEL, C1, bidi overrides and
isolates; all zero cells wide, so the layout measured is the layout written). A
segment Textual marks as a control (its own cursor moves) passes as it is. The check is
one regex search per segment, once per strip (Textual caches a strip's render).
"""

from __future__ import annotations

from rich.color import ColorSystem
from rich.console import Console
from textual.strip import Strip

from soothe.engine.sanitize import drop_controls

__all__ = ["install", "installed"]

TEXTUAL_RENDER = Strip.render
"""Textual's own ``Strip.render`` (the guard replaces it)."""


def _render(self: Strip, console: Console) -> str:
    """``Strip.render`` (textual 8.2.8) with each text segment made safe."""
    if self._render_cache is None:
        color_system = console._color_system or ColorSystem.TRUECOLOR
        render = self.render_style
        parts: list[str] = []
        for text, style, control in self._segments:
            shown = text if control else drop_controls(text)
            parts.append(
                shown if style is None else render(style, shown, color_system=color_system)
            )
        self._render_cache = "".join(parts)
    return self._render_cache


def install() -> None:
    """Put the guard in place (once; idempotent)."""
    Strip.render = _render  # type: ignore[method-assign]


def installed() -> bool:
    return Strip.render is _render
