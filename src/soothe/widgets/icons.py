"""Status glyphs and the spinner shared by the goal tree and the status line.

The glyphs are the engine's one table (``soothe.engine.glyphs``), shared with the export.
"""

from __future__ import annotations

from soothe.engine.glyphs import GOAL_GLYPHS, STEP_GLYPHS

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

GOAL_ICONS = GOAL_GLYPHS
STEP_ICONS = STEP_GLYPHS

STATUS_WORDS: dict[str, str] = {
    "pending": "pending",
    "active": "active",
    "completed": "completed",
    "validated": "validated",
    "failed": "failed",
    "suspended": "suspended",
    "blocked": "blocked",
    "awaiting_clarification": "awaiting clarification",
    "cancelled": "cancelled",
    "skipped": "skipped",
}


def spinner_frame(tick: int) -> str:
    return SPINNER[tick % len(SPINNER)]


def status_icon(status: str, tick: int | None, *, step: bool = False) -> str:
    """The glyph for a status; ``tick`` animates ``active`` (None: still frame)."""
    if status == "active" and tick is not None:
        return spinner_frame(tick)
    table = STEP_ICONS if step else GOAL_ICONS
    return table.get(status, "•")
