"""The approval dialog at 80x24 (real Session, fake Ollama): a diff of eight lines pushed
the buttons out of the dialog (only their top edges showed, no labels); the diff box now
gives way first and scrolls, so the buttons always show."""

from __future__ import annotations

import pytest
from textual.containers import VerticalScroll
from textual.widgets import Button

from soothe.app.screens.requests import ApprovalModal
from tests.app.real_harness import Rig, classify, plan, ready, screen_text, send, step, until
from tests.fakes import FakeReply

NOTES = "# Notes\n- buy milk\n- call Ana\n- water the plants\n"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_buttons_show_whatever_the_diff(rig: Rig, size: tuple[int, int]) -> None:
    (rig.workspace / "notes.md").write_text(NOTES)
    rig.configure(tools={"approval": "ask"})
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Update the notes")))
    edit = {"path": "notes.md", "old": "- call Ana", "new": "- call Ana (Tuesday)"}
    rig.brain.step("S-01", FakeReply(tool_calls=[{"name": "edit_file", "args": edit}]))
    app = rig.app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Call Ana on Tuesday")
        await until(lambda: isinstance(app.screen, ApprovalModal), pilot, timeout=20)
        await pilot.pause()
        modal = app.screen
        dialog = modal.query_one(".dialog")
        for button in modal.query(Button):
            assert dialog.content_region.contains_region(button.region), button.id
        text = screen_text(app)
        assert "Deny" in text and "Approve once" in text, text
        box = modal.query_one(".args", VerticalScroll)
        if size == (80, 24):  # the diff scrolls in its box
            assert box.max_scroll_y > 0
            assert "--- a/notes.md" in text
        else:  # room for all of it
            assert box.max_scroll_y == 0 and "- water the plants" in text
        await pilot.press("d")
