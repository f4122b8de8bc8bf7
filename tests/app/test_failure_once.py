"""A goal that fails for good is said to have failed once in the app (real Session, fake
Ollama): its ✗ line and its "Goal G1 failed" toast. The runner's error event after it
(kind ``loop``, which ``soothe -p`` prints) repeated both: a second red line with the same
text and a toast titled "loop". Live and on reopen."""

from __future__ import annotations

from soothe.app.main import SootheApp
from soothe.app.view_state import CONVERSATION
from tests.app.real_harness import Rig, assess, classify, plan, ready, send, settle, step
from tests.fakes import FakeReply

FAILURE = "CUDA error: out of memory"


def failing_flow(rig: Rig) -> None:
    rig.configure(loop={"max_iterations": 1, "agentic_max_iterations": 1})
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Read nope.txt")))
    rig.brain.step("S-01", FakeReply(text="Let me look", error=FAILURE))
    rig.brain.always["StatusAssessment"] = assess("replan", progress="none")
    rig.brain.add("complete", "nope.txt could not be read.")


def failure_lines(app: SootheApp) -> list[str]:
    blocks = app.handler.state.blocks(CONVERSATION)
    return [
        b["note"] for b in blocks if b.get("kind") == "error" and "iteration limit" in b["note"]
    ]


async def test_a_goal_that_fails_is_said_to_fail_once(rig: Rig) -> None:
    failing_flow(rig)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Summarise nope.txt")
        await settle(app, pilot)
        assert app.handler.goals["G1"].status == "failed"
        lines = failure_lines(app)
        assert len(lines) == 1 and lines[0].startswith("G1 failed: iteration limit"), lines
        titles = [n.title for n in app._notifications]
        assert titles.count("Goal G1 failed") == 1 and "loop" not in titles, titles
        thread_id = app.require_session().thread_id
    assert not rig.brain.unscripted
    again = rig.app(thread_id)
    async with again.run_test(size=(120, 40)) as pilot:
        await ready(again, pilot)
        assert failure_lines(again) == lines


def answer_bars(app: SootheApp) -> list[tuple[str, bool]]:
    """The answer blocks in the Conversation panel: their text and whether they are drawn
    as a failure (the error bar, not the success bar)."""
    from textual.widgets import Markdown

    return [
        (block.source, block.has_class("-failed"))
        for block in app.main.stream.query(Markdown)
        if block.has_class("answer")
    ]


async def test_a_failed_goal_s_answer_is_not_drawn_as_a_success(rig: Rig) -> None:
    """'The goal could not be completed: …' sat in the green bar of a good answer (seen in
    the snapshot test_failed_step). It is drawn with the error colour, live and on reopen."""
    failing_flow(rig)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Summarise nope.txt")
        await settle(app, pilot)
        bars = answer_bars(app)
        assert bars and all(failed for _text, failed in bars), bars
        assert bars[-1][0].startswith("The goal could not be completed"), bars
        thread_id = app.require_session().thread_id
    again = rig.app(thread_id)
    async with again.run_test(size=(120, 40)) as pilot:
        await ready(again, pilot)
        await settle(again, pilot)
        assert answer_bars(again) == bars
