"""PastedRequest: a long request (a paste) in the conversation, folded to one line.

A request of FOLD_LINES lines or more shows as ``› pasted 200 lines · first … last line``
instead of one row per line (a 200-line paste was ~600 rows of the conversation). The
title opens it (a click, or enter when it has focus, as a tool call's row) on the whole
text; its body is only laid out while open. What the model gets is the whole text: only
the screen folds it.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Collapsible, Static

from soothe.engine.sanitize import one_line
from soothe.widgets.queued import FOLD_LINES

__all__ = ["FOLD_LINES", "PastedRequest", "folds", "pasted_title"]


def folds(text: str) -> bool:
    """Whether a request is shown folded."""
    return text.count("\n") + 1 >= FOLD_LINES


def pasted_title(text: str, width: int = 80) -> str:
    """``pasted 201 lines · its first line … its last line``: what is typed with a paste
    (a question before it or after it) shows while it is folded."""
    lines = [line for line in text.splitlines() if line.strip()]
    count = len(text.splitlines())
    if not lines:
        return f"pasted {count} lines"
    if len(lines) == 1:
        return f"pasted {count} lines · {one_line(lines[0], width)}"
    head = one_line(lines[0], width * 2 // 5)
    tail = one_line(lines[-1], width * 3 // 5)
    return f"pasted {count} lines · {head} … {tail}"


class PastedRequest(Collapsible):
    DEFAULT_CSS = """
    PastedRequest {
        padding-bottom: 0;
        border-top: none;
        background: transparent;
        margin: 1 0 0 0;
    }
    PastedRequest > CollapsibleTitle {
        color: $primary;
        text-style: bold;
        width: 1fr;  /* wraps: the question typed after the paste ends the title */
    }
    PastedRequest > Contents {
        padding: 0 0 0 2;
    }
    PastedRequest .pasted-body {
        color: $primary;
    }
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._body = Static("", classes="pasted-body")
        self._filled = False
        super().__init__(self._body, title=pasted_title(text), collapsed=True)

    def on_collapsible_expanded(self, event: Collapsible.Expanded) -> None:
        if event.collapsible is self and not self._filled:
            self._filled = True
            self._body.update(Content(self.text))
