"""The Evidence panel follows its end, as the Conversation panel does.

A panel left at its end (or never scrolled: no scrollbar yet) shows the newest entries
once a request adds them; one the user scrolled up to read stays where it is; an entry
the user moved the highlight to stays highlighted and in view. Before, the title went
from "Evidence (19)" to "Evidence (26)" while the new entries stayed below the fold."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from soothe.widgets import evidence_panel
from soothe.widgets.evidence_panel import EvidencePanel
from tests.app.evidence_rows import SIZE, entries, panel_rows
from tests.app.real_harness import until
from tests.app.tiny_app import One


def _in_view(panel: EvidencePanel, index: int) -> bool:
    """Every row of the option at ``index`` is within the panel's visible region."""
    top = panel._index_to_line[index]
    bottom = top + panel._heights[index]
    height = panel.scrollable_content_region.height
    return panel.scroll_y <= top and bottom <= panel.scroll_y + height


def _at_end_showing_last(app: One, panel: EvidencePanel, n: int) -> bool:
    last = panel.option_count - 1
    return (
        panel.get_option_at_index(last).id == f"E{n}"
        and panel.max_scroll_y > 0
        and panel.scroll_y == panel.max_scroll_y
        and _in_view(panel, last)
        and any(row.startswith(f"entry {n:02d}") for row in panel_rows(app, panel))
    )


async def _painted(pilot: Pilot[Any]) -> None:
    for _ in range(3):
        await pilot.pause()


async def _added(pilot: Pilot[Any], panel: EvidencePanel, count: int) -> None:
    """The panel lists ``count`` entries, measured and laid out, then painted."""
    await until(lambda: panel.option_count == count and not panel._end_pending, pilot)
    await _painted(pilot)


async def test_never_scrolled_panel_shows_the_newest_entries() -> None:
    panel = EvidencePanel()
    app = One(panel)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel.add_entries(entries(0, 3))  # 6 rows: no scrollbar yet
        await _added(pilot, panel, 3)
        assert not panel.show_vertical_scrollbar
        panel.add_entries(entries(3, 7))  # one request's entries, well past the fold
        await until(lambda: _at_end_showing_last(app, panel, 9), pilot)
        assert panel.border_title == "Evidence (10)"


async def test_panel_at_its_end_follows_paced_additions() -> None:
    """Added one batch at a time as the pace lets them through; twice without a refresh
    between (the second comes while the scroll for the first is still to come)."""
    panel = EvidencePanel()
    app = One(panel)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel.add_entries(entries(0, 6))
        await until(lambda: _at_end_showing_last(app, panel, 5), pilot)
        for start in range(6, 14, 2):
            panel.add_entries(entries(start, 2))
            await until(lambda start=start: _at_end_showing_last(app, panel, start + 1), pilot)
        panel.add_entries(entries(14, 1))
        panel.add_entries(entries(15, 1))
        await until(lambda: _at_end_showing_last(app, panel, 15), pilot)


async def test_panel_scrolled_up_stays_where_the_user_reads() -> None:
    panel = EvidencePanel()
    app = One(panel)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel.add_entries(entries(0, 10))
        await until(lambda: _at_end_showing_last(app, panel, 9), pilot)
        panel.scroll_to(y=4, animate=False)  # up to read
        await _painted(pilot)
        before = panel_rows(app, panel)
        panel.add_entries(entries(10, 5))
        await _added(pilot, panel, 15)
        assert panel.scroll_y == 4
        assert panel_rows(app, panel) == before


async def test_highlighted_entry_stays_highlighted_and_in_view() -> None:
    panel = EvidencePanel()
    app = One(panel)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel.add_entries(entries(0, 10))
        await until(lambda: _at_end_showing_last(app, panel, 9), pilot)
        panel.focus()
        await pilot.press("end")  # the cursor on the last entry, at the end
        await until(lambda: panel.highlighted == 9, pilot)
        panel.add_entries(entries(10, 8))
        await _added(pilot, panel, 18)
        assert panel.highlighted == 9
        assert panel.highlighted_option is not None
        assert panel.highlighted_option.id == "E9"
        assert _in_view(panel, 9)
        # followed as far as the cursor lets: it is at the top of the view
        assert panel.scroll_y == panel._index_to_line[9]


async def test_rows_let_go_at_the_top_move_neither_a_reader_nor_the_end(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(evidence_panel, "WINDOW", 8)
    panel = EvidencePanel()
    app = One(panel)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel.add_entries(entries(0, 8))
        await until(lambda: _at_end_showing_last(app, panel, 7), pilot)
        # at the end: rows let go at the top, the newest shown
        panel.add_entries(entries(8, 3))
        await until(lambda: _at_end_showing_last(app, panel, 10), pilot)
        assert [panel.get_option_at_index(i).id for i in (0, 7)] == ["E3", "E10"]
        # scrolled up to read: the same entries stay in view as older rows go
        panel.scroll_to(y=7, animate=False)
        await _painted(pilot)
        before = panel_rows(app, panel)
        assert any(row.startswith("entry 05") for row in before), before
        panel.add_entries(entries(11, 2))
        await until(lambda: panel.get_option_at_index(0).id == "E5", pilot)
        await _added(pilot, panel, 8)
        assert panel_rows(app, panel) == before
        assert panel.scroll_y == 1


async def test_a_refilled_panel_opens_at_its_newest_entries() -> None:
    panel = EvidencePanel()
    app = One(panel)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel.set_entries(entries(0, 10) + entries(10, 10, goal_id="G2"))
        await until(lambda: _at_end_showing_last(app, panel, 19), pilot)
        panel.scroll_to(y=0, animate=False)
        await _painted(pilot)
        panel.follow("G1")
        await until(lambda: _at_end_showing_last(app, panel, 9), pilot)
        assert panel.border_title == "Evidence · G1 (10 of 20)"
