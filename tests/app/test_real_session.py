"""Pilot tests on the real engine: the app, the real Session, the fake Ollama server."""

from __future__ import annotations

from soothe.engine.session import Session
from tests.app.real_harness import Rig, classify, ready, screen_text, send, settle


async def test_a_quiz_answer_on_the_real_engine(rig: Rig) -> None:
    rig.brain.add("Classification", classify("quiz", "2 + 2 is 4."))
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert isinstance(app.session, Session)
        assert app.session.provider_status == "reachable"
        await send(app, pilot, "What is 2+2?")
        await settle(app, pilot)
        print(screen_text(app))
        assert app.handler.answers[""] == "2 + 2 is 4."
