"""Getting the user's attention when a run ends or a question waits (``ui.notify``).

``bell`` rings the terminal bell; ``osc9`` and ``osc777`` ask the terminal for a desktop
notification (OSC 9: iTerm2, WezTerm, Windows Terminal, kitty; OSC 777: VTE terminals
such as GNOME Terminal, foot); ``off`` does nothing. The text is stripped of control
characters so a model's answer cannot inject escape sequences.
"""

from __future__ import annotations

from typing import Literal

NotifyKind = Literal["bell", "osc9", "osc777", "off"]

RUN_WORTH_TELLING_S = 2.0
"""A run shorter than this ends while the user is still looking: no alert."""


def _clean(text: str, limit: int = 120) -> str:
    flat = "".join(c if c.isprintable() else " " for c in text)
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def sequence(kind: str, title: str, body: str) -> str:
    """The bytes to write to the terminal for ``kind`` (empty for ``off``)."""
    if kind == "bell":
        return "\a"
    if kind == "osc9":
        return f"\x1b]9;{_clean(f'{title}: {body}')}\x07"
    if kind == "osc777":
        return f"\x1b]777;notify;{_clean(title).replace(';', ',')};{_clean(body)}\x07"
    return ""
