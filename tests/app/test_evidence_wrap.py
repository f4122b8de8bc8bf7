"""Every wrapped line of an evidence entry is shown, also once the scrollbar appears.

OptionList measures an option's height (its wrapped lines) at the content width of the
moment and forgets it only on a resize. Filling the panel brings the vertical scrollbar,
one column narrower, without a resize: the heights stayed those of the wider width while
the rows were drawn at the narrower one, so a reopened thread (the panel refilled at once
by set_entries) showed "entry 00 was read, a poem" without its "written." and the next
entry right after it (a new user's trial in tmux). Live, the entries listed before the
scrollbar came kept rows drawn one column too wide ("entry 00 was read, a poem written."
on one row, its padding cut by the scrollbar)."""

from __future__ import annotations

from typing import Any

from textual.geometry import Size
from textual.pilot import Pilot

from soothe.widgets.evidence_panel import EvidencePanel
from tests.app.evidence_rows import SIZE, entries, panel_rows
from tests.app.real_harness import until
from tests.app.tiny_app import One

HEADER = "tool     G1/S-01"


def _shown_entries(app: One, panel: EvidencePanel) -> list[list[str]]:
    """The entries the panel shows whole, each as its rows on the screen."""
    shown: list[list[str]] = []
    for row in panel_rows(app, panel):
        if row.startswith("tool"):
            shown.append([row])
        elif shown:
            shown[-1].append(row)
    return shown[:-1]  # the last may be cut by the panel's bottom edge


def _assert_every_line_shown(app: One, panel: EvidencePanel) -> None:
    assert panel.show_vertical_scrollbar
    shown = _shown_entries(app, panel)
    assert len(shown) >= 2, shown
    first = int(shown[0][1].split()[1])  # the panel follows its end: not always entry 00
    for n, rows in enumerate(shown, first):
        assert rows == [HEADER, f"entry {n:02d} was read, a poem", "written."]
    # every entry, those scrolled out of view too: the list is as long as its entries
    # wrapped at the width they are drawn at
    width = panel.scrollable_content_region.width
    size = Size(*SIZE)
    assert panel.virtual_size.height == panel.get_content_height(size, size, width)


async def _painted(pilot: Pilot[Any]) -> None:
    for _ in range(3):
        await pilot.pause()


async def test_a_reopened_thread_shows_every_wrapped_line() -> None:
    panel = EvidencePanel()
    app = One(panel)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel.set_entries(entries(0, 12))  # as the rebuild of a reopened thread does
        await until(lambda: panel.show_vertical_scrollbar, pilot)
        await _painted(pilot)
        _assert_every_line_shown(app, panel)


async def test_entries_added_live_keep_every_wrapped_line_when_the_scrollbar_comes() -> None:
    panel = EvidencePanel()
    app = One(panel)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for entry in entries(0, 12):
            panel.add_entries([entry])
            await pilot.pause()
        await until(lambda: panel.show_vertical_scrollbar, pilot)
        await _painted(pilot)
        _assert_every_line_shown(app, panel)
