"""EvidencePanel: evidence entries (kind, summary, the step they came from).

It follows the selection: with a goal or a step selected it lists only that goal's or
step's entries (the title says so); ``a`` shows them all until the selection changes.

It follows its end as the Conversation panel does: a panel left at its end (or too short
to scroll) shows the newest entries as they are added; one scrolled up to read stays
where it is. A list refilled for another selection opens at its newest entries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.geometry import Size
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
        self._end_pending = False
        """The list grew while at its end: scroll to the new end after the refresh."""
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

    def watch_virtual_size(self, old: Size, new: Size) -> None:
        """Follow the end: the list grew while it was at its end (judged by the height it
        had before: OptionList measures new options at once when they are added, so this
        is before they are shown), or while a scroll to the end is still to come (entries
        added twice before a refresh; a scrollbar that came and made entries wrap once
        more). The scroll waits for the refresh: the scrollbar that the growth may bring
        is set up by then, and the scroll goes to the end of the size of that moment."""
        if new.height <= old.height or self._end_pending:
            return  # (a scroll to come goes to the end of the new size too)
        viewport = self.container_size.height - self.scrollbar_size_horizontal
        if self.scroll_y >= max(0, old.height - viewport):
            self._follow_end()

    def _follow_end(self) -> None:
        if not self._end_pending:
            self._end_pending = True
            self.call_after_refresh(self._scroll_to_end)

    def _scroll_to_end(self) -> None:
        """Show the newest rows, but keep the highlighted entry (the keyboard cursor) in
        view: the list goes no further than to show it at the top."""
        self._end_pending = False
        end = self.max_scroll_y
        highlighted = self.highlighted
        if highlighted is not None:
            end = min(end, self._index_to_line.get(highlighted, end))
        if end > self.scroll_y:
            self.scroll_to(y=end, animate=False)

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
        # scrolled up to read: the rows in view stay (they move up by the rows let go)
        heights = {} if self._end_pending else self._heights
        removed = sum(heights.get(index, 0) for index in range(excess))
        for evidence_id in self.shown[:excess]:
            self.remove_option(evidence_id)
        del self.shown[:excess]
        self.hidden += excess
        if removed and self.scroll_y:
            self.scroll_to(y=max(0, self.scroll_y - removed), animate=False)
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
        # another selection's list opens at its newest entries, as live ones follow them
        # (the list starts at the top, so it grows "at its end"; said here all the same,
        # for a list refilled before it was laid out)
        self._follow_end()
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
