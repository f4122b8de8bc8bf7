"""The evidence panel alone (``tiny_app.One``), for the tests of how it wraps and follows:
entries that wrap once the scrollbar takes a column, and the rows the panel shows."""

from __future__ import annotations

from soothe.engine.views import EvidenceView
from soothe.widgets.evidence_panel import EvidencePanel
from tests.app.real_harness import screen_text
from tests.app.tiny_app import One

SIZE = (40, 12)
"""The panel fills the screen: 36 columns inside its border, 34 for an entry's text beside
its padding, 33 once the scrollbar takes one; 10 rows."""


def entries(start: int, count: int, goal_id: str = "G1") -> list[EvidenceView]:
    """Entries E{start}..: each summary is 34 characters, one line without the scrollbar
    and two beside it (an entry is then 3 rows with its header)."""
    return [
        EvidenceView(
            evidence_id=f"E{n}",
            kind="tool",
            summary=f"entry {n:02d} was read, a poem written.",
            goal_id=goal_id,
            step_id="S-01",
        )
        for n in range(start, start + count)
    ]


def panel_rows(app: One, panel: EvidencePanel) -> list[str]:
    """The rows the panel shows on screen, inside its border and padding."""
    region = panel.scrollable_content_region
    lines = screen_text(app).splitlines()[region.y : region.bottom]
    return [line[region.x : region.right].strip() for line in lines]
