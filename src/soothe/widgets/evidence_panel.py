"""EvidencePanel: evidence entries (kind, summary, the step they came from).

It follows the selection: with a goal or a step selected it lists only that goal's or
step's entries (the title says so); ``a`` shows them all until the selection changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from soothe.engine.views import EvidenceView


EMPTY_ID = "__empty__"
KIND_STYLES = {"tool": "$secondary", "bootstrap": "$accent", "ledger": "$primary"}
WINDOW = 200
"""Rows listed at once: the newest entries the selection lets through (the view model
keeps every entry; older rows are let go, like the stream's blocks)."""


def _prompt(entry: EvidenceView) -> Content:
    origin = "/".join(part for part in (entry.goal_id, entry.step_id) if part) or "run"
    summary = " ".join(entry.summary.split())
    return Content.assemble(
        (f"{entry.kind:<8} ", KIND_STYLES.get(entry.kind, "$text-muted")),
        (origin, "$text-muted"),
        "\n",
        summary,
    )


class EvidencePanel(OptionList):
    DEFAULT_CSS = """
    EvidencePanel {
        height: 1fr;
        scrollbar-size-vertical: 1;
        & > .option-list--option { padding: 0 1; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "show_all", "All evidence", id="evidence.show_all"),
    ]

    class Opened(Message):
        def __init__(self, entry: EvidenceView) -> None:
            super().__init__()
            self.entry = entry

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.entries: dict[str, EvidenceView] = {}
        """Every entry of the thread; ``shown`` are those the selection lets through."""
        self.shown: list[str] = []
        self.hidden = 0
        """Entries the selection lets through that are older than the rows listed."""
        self.scope: tuple[str | None, str | None] = (None, None)
        self._show_empty()

    def watch_show_vertical_scrollbar(self) -> None:
        """Measure and draw the rows again when the vertical scrollbar comes or goes.

        OptionList keeps each option's height (its wrapped lines) and its drawn rows (a
        cache not keyed on the width) from the content width of the moment, and drops
        them only on a resize. Adding options can bring the scrollbar (one column
        narrower: a line wraps once more) without a resize. A reopened thread refills the
        panel in one go: the heights were those of the wider width, the rows drawn at the
        narrower one, and every such entry lost its last wrapped line. Live, the entries
        listed before the scrollbar came kept rows drawn one column too wide. TextArea
        rewraps on this same change; this is OptionList's resize handling (_clear_caches).
        """
        self._clear_caches()

    def _show_empty(self) -> None:
        goal_id, step_id = self.scope
        where = "/".join(p for p in (goal_id, step_id) if p)
        text = (
            f"No evidence for {where} — press a to show all."
            if where and self.entries
            else "No evidence yet — tool results and findings land here."
        )
        self.add_option(Option(Content.styled(text, "italic"), id=EMPTY_ID, disabled=True))

    def _wanted(self, entry: EvidenceView) -> bool:
        goal_id, step_id = self.scope
        if goal_id is None:
            return True
        if entry.goal_id != goal_id:
            return False
        return step_id is None or entry.step_id == step_id

    def add_entries(self, entries: list[EvidenceView]) -> None:
        fresh = [e for e in entries if e.evidence_id not in self.entries]
        if not fresh:
            return
        for entry in fresh:
            self.entries[entry.evidence_id] = entry
        visible = [e for e in fresh if self._wanted(e)]
        if visible:
            if not self.shown:
                self.clear_options()
            self.shown += [e.evidence_id for e in visible]
            self.add_options(Option(_prompt(e), id=e.evidence_id) for e in visible)
            self._trim()
        self._retitle()

    def _trim(self) -> None:
        """Keep the newest WINDOW rows: each row holds its rendered lines."""
        excess = len(self.shown) - WINDOW
        if excess <= 0:
            return
        highlighted = self.highlighted
        for evidence_id in self.shown[:excess]:
            self.remove_option(evidence_id)
        del self.shown[:excess]
        self.hidden += excess
        if highlighted is not None:
            self.highlighted = max(0, highlighted - excess)

    def set_entries(self, entries: list[EvidenceView]) -> None:
        self.entries = {e.evidence_id: e for e in entries}
        self._refill()

    def follow(self, goal_id: str | None, step_id: str | None = None) -> None:
        """Show the entries of the selected goal or step (None: the whole thread)."""
        if (goal_id, step_id) != self.scope:
            self.scope = (goal_id, step_id)
            self._refill()

    def action_show_all(self) -> None:
        self.follow(None)

    def _refill(self) -> None:
        self.clear_options()
        wanted = [e for e in self.entries.values() if self._wanted(e)]
        self.hidden = max(0, len(wanted) - WINDOW)
        visible = wanted[self.hidden :]
        self.shown = [e.evidence_id for e in visible]
        if visible:
            self.add_options(Option(_prompt(e), id=e.evidence_id) for e in visible)
        else:
            self._show_empty()
        self._retitle()

    def _retitle(self) -> None:
        total = len(self.entries)
        goal_id, step_id = self.scope
        where = "/".join(p for p in (goal_id, step_id) if p)
        if where:
            self.border_title = f"Evidence · {where} ({len(self.shown) + self.hidden} of {total})"
        else:
            self.border_title = f"Evidence ({total})" if total else "Evidence"

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        entry = self.entries.get(event.option.id or "")
        if entry is not None:
            self.post_message(self.Opened(entry))
