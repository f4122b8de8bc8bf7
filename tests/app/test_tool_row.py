"""A tool row in a step card opens (enter on it, or a click) to show the call's full
arguments and result, sanitised, and closes again; at 80x24 the row itself is cut at
the panel's edge, so this is how its arguments are read."""

from __future__ import annotations

from textual.widgets._collapsible import CollapsibleTitle

from soothe.widgets.tool_call import ToolCallBlock
from tests.app.real_harness import (
    Rig,
    assess,
    classify,
    plan,
    ready,
    screen_text,
    send,
    settle,
    step,
)
from tests.fakes import FakeReply

LONG_PATH = "docs/" + "very-long-folder-name/" * 4 + "README.md"


async def test_a_tool_row_opens_with_enter_or_a_click_and_closes(rig: Rig) -> None:
    folder = rig.workspace / LONG_PATH.rsplit("/", 1)[0]
    folder.mkdir(parents=True)
    (folder / "README.md").write_text("Hidden \x1b]0;pwned\x07title and \x1b[2Jclear: the end.\n")
    brain = rig.brain
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01", "Read the deep README")))
    brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "read_file", "args": {"path": LONG_PATH}}]),
        "It says the end.",
    )
    brain.add("StatusAssessment", assess("done", progress="complete"))
    brain.add("complete", "It says the end.")
    app = rig.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Summarise the README")
        await settle(app, pilot)
        blocks = list(app.main.stream.query(ToolCallBlock))
        assert blocks, "a tool row in the card"
        block = blocks[0]
        title = block.query_one(CollapsibleTitle)
        assert block.collapsed
        app.main.stream.scroll_to_widget(block, animate=False)
        title.focus()
        await settle(app, pilot)
        await pilot.press("enter")
        await settle(app, pilot)
        assert not block.collapsed
        app.main.stream.scroll_to_widget(block, animate=False, top=True)
        await settle(app, pilot)
        text = screen_text(app)
        assert "arguments:" in text and "result:" in text, text
        body = str(block.query_one(".tool-body").render())
        assert LONG_PATH in body  # whole, where the row showed its first 48 characters
        assert "title and clear: the end." in body and "\x1b" not in body  # sanitised
        assert "the end." in text
        await pilot.press("enter")
        await settle(app, pilot)
        assert block.collapsed
        await pilot.click(title)
        await settle(app, pilot)
        assert not block.collapsed
        await pilot.click(title)
        await settle(app, pilot)
        assert block.collapsed
