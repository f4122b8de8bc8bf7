"""PastedRequest: a long request (a paste) in the conversation, folded to one line.

A request of FOLD_LINES lines or more shows as ``› pasted 200 lines · its first line``
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
    lines = text.splitlines()
    head = one_line(next((line for line in lines if line.strip()), ""), width)
    return f"pasted {len(lines)} lines · {head}"


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
