"""EvidencePanel: evidence entries (kind, summary, the step they came from)."""

from __future__ import annotations

from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from soothe.engine.views import EvidenceView

EMPTY_ID = "__empty__"
KIND_STYLES = {"tool": "$secondary", "bootstrap": "$accent", "ledger": "$primary"}


def _prompt(entry: EvidenceView) -> Content:
    origin = "/".join(part for part in (entry.goal_id, entry.step_id) if part) or "run"
    summary = " ".join(entry.summary.split())
    return Content.assemble(
        (f"{entry.kind:<9}", KIND_STYLES.get(entry.kind, "$text-muted")),
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

    class Opened(Message):
        def __init__(self, entry: EvidenceView) -> None:
            super().__init__()
            self.entry = entry

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.entries: dict[str, EvidenceView] = {}
        self._show_empty()

    def _show_empty(self) -> None:
        self.add_option(
            Option(
                Content.styled("No evidence yet — tool results and findings land here.", "italic"),
                id=EMPTY_ID,
                disabled=True,
            )
        )

    def add_entries(self, entries: list[EvidenceView]) -> None:
        fresh = [e for e in entries if e.evidence_id not in self.entries]
        if not fresh:
            return
        if not self.entries:
            self.clear_options()
        for entry in fresh:
            self.entries[entry.evidence_id] = entry
        self.add_options(Option(_prompt(e), id=e.evidence_id) for e in fresh)
        self._retitle()

    def set_entries(self, entries: list[EvidenceView]) -> None:
        self.entries.clear()
        self.clear_options()
        if entries:
            self.add_entries(entries)
        else:
            self._show_empty()
            self._retitle()

    def _retitle(self) -> None:
        count = len(self.entries)
        self.border_title = f"Evidence ({count})" if count else "Evidence"

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        entry = self.entries.get(event.option.id or "")
        if entry is not None:
            self.post_message(self.Opened(entry))
