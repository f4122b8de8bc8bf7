"""Text helpers every layer shares: one place for how text is clipped."""

from __future__ import annotations

ELLIPSIS = "…"


def clip(text: str, limit: int, *, flatten: bool = True) -> str:
    """``text`` in at most ``limit`` characters, ending in an ellipsis when cut.

    ``flatten`` folds all white space (newlines included) into single spaces first, for
    one-line summaries; pass False to keep the text's lines (only its ends are stripped).
    """
    text = " ".join(text.split()) if flatten else text.strip()
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    return text[: limit - 1].rstrip() + ELLIPSIS
