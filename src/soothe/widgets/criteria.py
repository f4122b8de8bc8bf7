"""A goal's done-when criteria on screen: the "Done when" block of the goal's details
(each criterion with ✓ met, ✗ unmet, ? unknown or · not checked yet, the verifier's
reason and the evidence ids it rests on), and the text area they are written in (one
criterion per line; ctrl+s saves it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import TextArea

from soothe.engine.goal_verdicts import criterion_line, verdict_mark, verdict_summary

if TYPE_CHECKING:  # pydantic is not loaded before the first frame
    from soothe.engine.goal_contract import Criterion

MARK_STYLES = {"met": "$success", "unmet": "$error", "unknown": "$warning"}


def criteria_block(criteria: Sequence[Criterion]) -> Content:
    """``Done when · 1 of 2 done-when criteria met`` then one line per criterion (its
    mark coloured by its verdict); empty Content when the goal has none."""
    if not criteria:
        return Content("")
    parts: list[tuple[str, str] | str] = [
        ("\ndone when", "$text-muted"),
        (f"  {verdict_summary(criteria)}\n", "$text-muted"),
    ]
    for c in criteria:
        mark = verdict_mark(c)
        line = criterion_line(c)[len(mark) :]
        parts += ["  ", (mark, MARK_STYLES.get(c.verdict or "", "$text-muted")), line, "\n"]
    return Content.assemble(*parts)


def criteria_lines(text: str) -> list[str]:
    """The criteria typed in a text area: one per non-blank line."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


class CriteriaArea(TextArea):
    """Where done-when criteria are written, one per line; ctrl+s saves (``Save``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", id="criteria.save"),
    ]

    class Save(Message):
        """ctrl+s in the criteria: the dialog takes what is written."""

    def action_save(self) -> None:
        self.post_message(self.Save())
