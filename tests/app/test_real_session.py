"""Pilot tests on the real engine: the app, the real Session, the fake Ollama server."""

from __future__ import annotations

from soothe.engine.session import Session
from tests.app.real_harness import (
    Rig,
    classify,
    panel,
    parallel_flow,
    quiz,
    readme_flow,
    ready,
    screen_text,
    send,
    settle,
    wait_event,
)


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


async def test_a_goal_with_a_tool_step_fills_tree_stream_and_evidence(rig: Rig) -> None:
    readme_flow(rig.brain, final="Soothe is a terminal workbench.")
    app = rig.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Summarise README.md")
        await settle(app, pilot)
        assert not rig.brain.unscripted, rig.brain.kinds()
        goal = app.main.goal_tree.goal("G1")
        assert goal is not None and goal.status == "completed"
        assert [(s.id, s.status) for s in goal.steps] == [
            ("S-01", "completed"),
            ("S-02", "completed"),
        ]
        summaries = [e.summary for e in app.main.evidence.entries.values()]
        assert any("read_file" in s and "README.md" in s for s in summaries), summaries
        text = screen_text(app)
        assert text.count("Soothe is a terminal workbench.") == 1  # the answer, once


async def test_two_parallel_steps_stream_into_their_own_blocks(rig: Rig) -> None:
    first, second = parallel_flow(rig.brain)
    app = rig.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Read the README and write a haiku")
        await wait_event(first.reached, pilot)
        await wait_event(second.reached, pilot)
        await app.handler.wait_idle()
        await pilot.pause()
        goal = app.main.goal_tree.goal("G1")
        assert goal is not None
        assert [(s.id, s.status) for s in goal.steps] == [("S-01", "active"), ("S-02", "active")]
        live = screen_text(app)
        assert "The README describes a small" in live  # five words of S-01 so far
        assert "Green checks at dawn, the fake server" in live  # seven of S-02
        first.release.set()
        second.release.set()
        await settle(app, pilot)
        done = screen_text(app)
        assert "and one line of text." in done
        assert "real engine replies." in done
        assert not rig.brain.unscripted, rig.brain.kinds()


async def test_no_server_then_a_request_keeps_the_conversation(rig: Rig) -> None:
    rig.server.stop()
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.session.provider_status == "unreachable"
        before = screen_text(app)
        assert "No model server" in before and "Conversation" in before
        await send(app, pilot, "What is 2+2?")
        await settle(app, pilot)
        after = screen_text(app)
        assert "No model server" in after and "Conversation" in after
        assert "What is 2+2?" in after
        assert "Interrupt" not in after.splitlines()[-1]  # the footer knows the run ended
        assert not [n for n in app._notifications if "Display error" in n.title]
        # the server comes back: the next request runs and the status line follows
        rig.server.start()
        quiz(rig.brain, "4")
        await send(app, pilot, "What is 2+2, now?")
        await settle(app, pilot)
        assert app.session.provider_status == "reachable"
        assert app.main.status.info.provider == "reachable"
        assert "No model server" not in screen_text(app)


async def test_a_reopened_thread_shows_what_was_there(rig: Rig) -> None:
    readme_flow(rig.brain)
    app = rig.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Summarise README.md")
        await settle(app, pilot)
        thread = app.session.thread_id
        shown = screen_text(app)
    reopened = rig.app(thread)
    async with reopened.run_test(size=(140, 40)) as pilot:
        await ready(reopened, pilot)
        again = screen_text(reopened)
    assert "Summarise README.md" in again  # the user's request is back
    assert again.count("Soothe is a terminal workbench.") == 1
    live = [row for row in panel(shown, "Conversation") if "done in" not in row]
    assert [row for row in panel(again, "Conversation") if "done in" not in row] == live
    assert panel(again, "Goals") == panel(shown, "Goals")
