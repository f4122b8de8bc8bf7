"""A thinking model's reasoning in the step card, on the real Session (fake Ollama): live
under the header, dimmed and folded to one line; a click (or enter) opens it; it is never
the step's text or the answer; a reopened thread shows it the same way."""

from __future__ import annotations

from textual.widgets import Markdown

from soothe.widgets.stream_text import StreamText
from soothe.widgets.thinking_block import ThinkingBlock
from tests.app.real_harness import MODEL, Rig, classify, plan, ready, send, settle, step, until
from tests.fakes import FakeReply
from tests.fakes.ollama_server import FakeOllamaModel

TRACE = [f"weighing option {i}; " for i in range(60)]
"""~1.2k characters of reasoning, in Ollama's message.thinking."""


def thinking_flow(rig: Rig) -> None:
    rig.server.add_model(FakeOllamaModel(MODEL, thinking=True))
    rig.configure(model={"think": True})
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add(
        "PlanGeneration", plan(step("S-01", "Read README.md"), step("S-02", "Summarise", ["S-01"]))
    )
    rig.brain.step(
        "S-01",
        FakeReply(
            tool_calls=[{"name": "read_file", "args": {"path": "README.md"}}], thinking=TRACE
        ),
        FakeReply(text="README.md describes a terminal workbench.", thinking=TRACE[:3]),
    )
    rig.brain.step("S-02", "A terminal workbench for agents.")
    rig.brain.always["StatusAssessment"] = {"status": "done", "goal_progress": "complete"}
    rig.brain.always["complete"] = "Soothe is a terminal workbench."


async def test_reasoning_is_folded_in_the_step_card_and_opens_on_click(rig: Rig) -> None:
    thinking_flow(rig)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Summarise the README")
        await settle(app, pilot)
        assert not rig.brain.unscripted, rig.brain.kinds()
        card = app.handler.state.cards["G1/S-01"]
        assert card.thinking == "".join(TRACE) + "".join(TRACE[:3])
        assert "weighing" not in card.text
        # S-02 thinks too (the model's default trace): each card has its own block
        await until(lambda: len(list(app.main.stream.query(ThinkingBlock))) == 2, pilot)
        (block,) = [b for b in app.main.stream.query(ThinkingBlock) if b.card is card]
        assert block.collapsed
        title = str(block.title)
        assert title.startswith("thought · 1.") and "k chars" in title
        texts = " ".join(b.text for b in app.main.stream.query(StreamText))
        answers = " ".join(md.source for md in app.main.stream.query(Markdown))
        assert "weighing" not in texts and "weighing" not in answers
        await pilot.click(block._title)
        await until(lambda: not block.collapsed, pilot)
        await until(lambda: "weighing option 59" in str(block._body.render()), pilot)

    # reopened from the store: the same reasoning, folded again
    again = rig.app(thread_id=app.session.thread_id)
    async with again.run_test(size=(120, 40)) as pilot:
        await ready(again, pilot)
        await settle(again, pilot)
        await until(lambda: "G1/S-01" in again.handler.state.cards, pilot)
        assert again.handler.state.cards["G1/S-01"].thinking == card.thinking
