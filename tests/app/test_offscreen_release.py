"""Drawn lines of widgets out of view are let go (issue 32 item 12), on the real Session.

In the real process the stream's blocks scrolled out of view kept every line they had
drawn (Textual's per-widget render caches: 8,000 strips and 56,000 strip caches after 30
demo requests). Headless tests draw nothing unless asked: here the screen is drawn after
each request as the terminal draws it (``screen_text`` renders every visible widget)."""

from __future__ import annotations

from textual.widget import Widget

from soothe.app.main import SootheApp
from soothe.widgets.offscreen import rendered_lines
from tests.app.real_harness import Rig, readme_flow, ready, screen_text, send, settle, until


def offscreen_lines(app: SootheApp) -> int:
    """Lines held by widgets of the screen that the screen does not show."""
    visible = app.screen._compositor.visible_widgets
    return sum(rendered_lines(w) for w in app.screen.walk_children(Widget) if w not in visible)


async def test_blocks_scrolled_out_of_view_keep_no_drawn_lines(rig: Rig) -> None:
    requests = 4
    for n in range(requests):
        readme_flow(rig.brain, final=f"Answer {n}: Soothe is a terminal workbench.")
    app = rig.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        peak = 0
        for n in range(requests):
            await send(app, pilot, f"Summarise README.md ({n})")
            await settle(app, pilot)
            shown = screen_text(app)  # the terminal draws the screen
            peak = max(peak, offscreen_lines(app))
            # the widgets out of view let go of their lines (the app does it while idle)
            await until(lambda: offscreen_lines(app) == 0, pilot, timeout=10)
            assert screen_text(app) == shown  # what is in view is drawn the same
        assert len(app.main.stream.children) > 12  # most of them out of view
        assert peak > 0  # what each drawn screen left behind (the cause)
        held = sum(rendered_lines(w) for w in app.screen.walk_children(Widget))
        assert held < 12 * 24, held  # the visible rows, drawn by a few nested widgets each

        # scrolled back, the earlier blocks are drawn again, whole
        stream = app.main.stream
        stream.scroll_home(animate=False)
        await pilot.pause()
        await settle(app, pilot)
        top = screen_text(app)
        assert "Summarise README.md (0)" in top or "Answer 0" in top or "S-01" in top
        for widget in app.screen.walk_children(Widget):  # as if never released: redraw
            widget.refresh()
        await pilot.pause()
        assert screen_text(app) == top
