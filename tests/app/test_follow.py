"""Follow on the real Session (fake Ollama): a new request takes the middle panel unless
the user chose what to look at within the last few seconds (the app's injected clock);
ctrl+o jumps to the active goal, and back to the conversation when nothing runs."""

from __future__ import annotations

from textual.scrollbar import ScrollTo, ScrollUp

from soothe.app.handler import CONVERSATION, FOLLOW_QUIET_S
from tests.app.real_harness import (
    Rig,
    assess,
    parallel_flow,
    plan,
    quiz,
    readme_flow,
    ready,
    screen_text,
    send,
    settle,
    step,
    until,
    wait_event,
)
from tests.app.tiny_app import full_stream


async def test_your_own_request_takes_the_middle_panel_an_engine_start_waits(rig: Rig) -> None:
    """Issue 32 item 3: a request sent right after choosing a view in the tree takes the
    middle panel (it stayed hidden for 4 s); the quiet period holds off only what the
    engine starts (a goal that ctrl+r activates)."""
    now = [100.0]
    readme_flow(rig.brain)
    quiz(rig.brain, "Four.")
    rig.brain.add("PlanGeneration", plan(step("S-01", "Write the note")))
    rig.brain.step("S-01", "The note is written.")
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", "The note is written.")
    app = rig.app(clock=lambda: now[0])
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Summarise README.md")
        await settle(app, pilot)
        assert app.main.stream.key == CONVERSATION
        assert app.main.goal_tree.display_status("G1") == "completed"

        now[0] = 200.0
        app.handler.select(app.handler.ref_of("G1"))  # what the tree does on a click
        await settle(app, pilot)
        assert app.main.stream.key == "G1"

        now[0] = 200.0 + FOLLOW_QUIET_S / 2  # just chose G1, then sends: the request shows
        await send(app, pilot, "What is 2+2?")
        await settle(app, pilot)
        assert app.main.stream.key == CONVERSATION
        assert app.main.goal_tree.selected_ref.kind == "conversation"
        assert "What is 2+2?" in screen_text(app) and "Four." in screen_text(app)

        await send(app, pilot, "/goal Write a note")  # a pending goal, not run yet
        await until(lambda: "G2" in app.handler.goals, pilot)
        now[0] = 300.0
        app.handler.select(app.handler.ref_of("G1"))
        await settle(app, pilot)
        now[0] = 300.0 + FOLLOW_QUIET_S / 2  # the engine activates G2: G1 stays in view
        app.action_run_goals()
        await settle(app, pilot)
        assert app.handler.goals["G2"].status == "completed"
        assert app.main.stream.key == "G1"
        assert rig.brain.leftover() == {}


async def test_ctrl_o_jumps_to_the_active_goal(rig: Rig) -> None:
    now = [100.0]
    first, second = parallel_flow(rig.brain)
    app = rig.app(clock=lambda: now[0])
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Read the README and write a haiku")
        await wait_event(first.reached, pilot)
        await wait_event(second.reached, pilot)
        await until(lambda: "G1" in app.handler.goals, pilot)
        await until(lambda: app.handler.goals["G1"].status == "active", pilot)
        assert app.main.stream.key == CONVERSATION  # the conversation shows G1's cards

        await pilot.press("ctrl+o")
        await pilot.pause()
        assert app.main.stream.key == "G1"
        assert app.main.goal_tree.selected_ref.goal_id == "G1"

        first.release.set()
        second.release.set()
        await settle(app, pilot)
        assert app.handler.goals["G1"].status == "completed"
        await pilot.press("ctrl+o")  # nothing runs: back to the conversation
        await pilot.pause()
        assert app.main.stream.key == CONVERSATION


async def test_the_scrollbar_dragged_or_clicked_up_stops_following() -> None:
    """A drag of the thumb (ScrollTo) or a click on the track above it (ScrollUp) is the
    user reading back: the view stays where they put it, also when the stream grows."""
    for message in (ScrollTo(y=0, animate=False), ScrollUp()):
        app, view, transcript = full_stream()
        async with app.run_test(size=(60, 12)) as pilot:
            view.show(transcript)
            for _ in range(4):
                await pilot.pause()
            end = view.scroll_y
            assert end > 0 and view.follow
            view.post_message(message)
            for _ in range(4):
                await pilot.pause()
            await pilot.wait_for_scheduled_animations()  # ScrollUp pages up animated
            moved = view.scroll_y
            assert moved < end and not view.follow, message
            view.touch([transcript.note("a new note")])
            for _ in range(4):
                await pilot.pause()
            assert view.scroll_y == moved, message


async def test_follow_is_not_held_off_at_start_up(rig: Rig) -> None:
    """The app shows the conversation when it starts; that is not the user choosing a
    view, so the first request's goal is followed at once (it was held off 4 s)."""
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.handler.port.last_user_move == float("-inf")
