"""One glyph per status, for every place that draws one (goal tree, step cards, the
Markdown export): a glyph means the same thing everywhere.

Single-cell characters only, so columns line up in every terminal. ``⊘`` is blocked (a
goal waiting on something that will not happen by itself), ``⊗`` cancelled, ``‖``
suspended.
"""

from __future__ import annotations

GOAL_GLYPHS: dict[str, str] = {
    "pending": "○",
    "active": "◐",  # the tree replaces it by a spinner frame while animating
    "completed": "✓",
    "validated": "✓",
    "failed": "✗",
    "suspended": "‖",
    "blocked": "⊘",
    "awaiting_clarification": "?",
    "cancelled": "⊗",
}

STEP_GLYPHS: dict[str, str] = {
    "pending": "·",
    "active": "◐",
    "completed": "✓",
    "failed": "✗",
    "skipped": "↷",
    "cancelled": "⊗",  # an interrupted step (a step has no status of that name in the store)
    "suspended": "‖",  # a paused step (the store has it pending): its card; in the tree,
    # a pending step of a suspended goal
    "awaiting": "?",  # a running step whose tool call or question waits for the user
}

VERDICT_GLYPHS: dict[str, str] = {
    "met": "✓",
    "unmet": "✗",
    "unknown": "?",
    "": "·",  # not checked yet
}
"""A done-when criterion's last verdict from the verifier (goal view, export, headless)."""
