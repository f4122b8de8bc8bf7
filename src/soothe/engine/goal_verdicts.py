"""A goal's done-when criteria as lines of text, the same in the goal view, the
conversation, ``soothe threads show`` and the export: ``✓ TEXT — reason (E-G1-2)``.
Light (no heavy imports): the screen draws these before the engine loads. The text is
the user's and a model's: callers show it through ``sanitize`` (the view model's one door,
the export's ``plain``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from soothe.engine.glyphs import VERDICT_GLYPHS

if TYPE_CHECKING:  # pydantic is not loaded before the first frame
    from soothe.engine.goal_contract import Criterion


def verdict_mark(criterion: Criterion) -> str:
    """✓ met, ✗ unmet, ? unknown, · not checked yet."""
    return VERDICT_GLYPHS.get(criterion.verdict or "", VERDICT_GLYPHS[""])


def criterion_line(criterion: Criterion) -> str:
    """``✓ TEXT — reason (E-G1-2, E-G1-3)``; unchecked: ``· TEXT``."""
    line = f"{verdict_mark(criterion)} {' '.join(criterion.text.split())}"
    if criterion.reason:
        line += f" — {' '.join(criterion.reason.split())}"
    if criterion.evidence:
        line += f" ({', '.join(criterion.evidence)})"
    return line


def verdict_summary(criteria: Sequence[Criterion]) -> str:
    """``2 of 3 done-when criteria met`` (``done when: not checked yet`` before any check)."""
    if not any(c.verdict for c in criteria):
        return "done when: not checked yet"
    met = sum(c.verdict == "met" for c in criteria)
    noun = "criterion" if len(criteria) == 1 else "criteria"
    return f"{met} of {len(criteria)} done-when {noun} met"
