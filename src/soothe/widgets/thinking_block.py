"""ThinkingBlock: a step's reasoning, dimmed and folded to one line until opened.

A thinking model's trace is not the step's answer: the card shows it above its text as
``▸ thinking… · 1.2k chars``, which opens (a click, or enter when focused, as a tool
call's row) on the whole reasoning, dimmed. Its body is only laid out while open: a
folded block costs one line per batch however long the trace grows.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Collapsible, Static

from soothe.widgets.transcript import StepCard

__all__ = ["ThinkingBlock", "thinking_title"]


def _size(chars: int) -> str:
    return f"{chars / 1000:.1f}k chars" if chars >= 1000 else f"{chars} chars"


def thinking_title(card: StepCard) -> Content:
    """``thinking… · 1.2k chars`` while the step runs, ``thought · 1.2k chars`` after."""
    word = "thinking…" if card.status == "active" else "thought"
    return Content.assemble(
        (word, "italic $text-muted"), (f" · {_size(card.thought)}", "$text-muted")
    )


class ThinkingBlock(Collapsible):
    DEFAULT_CSS = """
    ThinkingBlock {
        padding-bottom: 0;
        border-top: none;
        background: transparent;
        margin: 0 0 0 1;
    }
    ThinkingBlock > Contents {
        padding: 0 0 0 2;
    }
    ThinkingBlock .thinking-body {
        color: $text-muted;
        text-style: italic;
    }
    """

    def __init__(self, card: StepCard) -> None:
        self.card = card
        self.seen_version = -1
        self._shown = ""
        self._body = Static("", classes="thinking-body")
        super().__init__(self._body, title=thinking_title(card), collapsed=True)  # type: ignore[arg-type]

    def sync(self) -> None:
        """Bring the title (and, while open, the body) up to date with the card."""
        if self.card.version == self.seen_version:
            return
        self.seen_version = self.card.version
        self.title = thinking_title(self.card)  # type: ignore[assignment]
        if not self.collapsed:
            self._fill()

    def _fill(self) -> None:
        text = self.card.thinking
        if text != self._shown:
            self._shown = text
            self._body.update(Content(text.strip()))

    def on_collapsible_expanded(self, event: Collapsible.Expanded) -> None:
        if event.collapsible is self:
            self._fill()
