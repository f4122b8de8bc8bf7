"""20,000 token deltas through the handler: the app keeps answering keys, the log stays capped."""

from __future__ import annotations

from soothe.engine import events as ev
from soothe.widgets.goal_tree import GoalTree
from soothe.widgets.step_card import STREAM_MAX_LINES
from soothe.widgets.stream_text import StreamText
from soothe.widgets.transcript import StepCard, TextRun
from tests.app.conftest import settle, submit
from tests.app.fake_session import FakeSession, Gate, Tokens

TOKENS = 20_000


# FakeSession: 20,000 token events published in one go (a paused 20,000-chunk stream from
# the fake Ollama through the real Session never reached its pause within 60 s here).
async def test_twenty_thousand_tokens_stay_responsive_and_capped(
    make_app, session: FakeSession
) -> None:
    half = Gate()
    session.script = lambda text, auto: [
        ev.GoalCreated(goal_id="G1", description="Write a long essay"),
        ev.StepStarted(goal_id="G1", step_id="S1", description="Write"),
        Tokens("G1", "S1", TOKENS // 2, text="line of streamed text\n"),
        half,
        Tokens("G1", "S1", TOKENS // 2 - 1, text="line of streamed text\n"),
        ev.StepToken(goal_id="G1", step_id="S1", text="the very last line"),
        ev.StepCompleted(goal_id="G1", step_id="S1"),
        ev.RunFinished(duration_s=2.0),
    ]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "essay")
        await half.reached.wait()
        # mid-stream: half the tokens are published, the run is still going
        await pilot.press("ctrl+g")
        assert isinstance(app.focused, GoalTree)
        assert app._run_worker is not None and not app._run_worker.is_finished
        applied_at_key = app.handler.applied
        half.open()
        await settle(app, pilot)

        assert applied_at_key < TOKENS
        blocks = list(app.main.stream.query(StreamText))
        assert len(blocks) == 1
        rows = blocks[0].rows()
        assert len(rows) <= STREAM_MAX_LINES
        assert app.main.stream.stream_line_count() <= STREAM_MAX_LINES
        assert rows[-1] == "the very last line"
        assert rows[-2] == "line of streamed text"
        # the bus coalesced or the pump batched: far fewer repaints than tokens
        assert app.handler.batches < 200
        cards = [s for s in app.handler.transcript("G1/S1").segments if isinstance(s, StepCard)]
        assert len(cards) == 1
        runs = [p for p in cards[0].parts if isinstance(p, TextRun)]
        assert len(runs) == 1 and cards[0].tokens >= 1
        assert runs[0].total == len("line of streamed text\n") * (TOKENS - 1) + len(
            "the very last line"
        )
