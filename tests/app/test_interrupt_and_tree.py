"""An interrupt is said once, the same live and rebuilt, and its paused steps show the
paused mark. On the real Session against the fake Ollama server."""

from __future__ import annotations

from typing import Any

from soothe.app.main import SootheApp
from soothe.app.view_state import CONVERSATION, ViewState, records_of
from soothe.widgets.goal_tree import GoalTree, NodeRef
from tests.app.real_harness import (
    Pause,
    Rig,
    assess,
    parallel_flow,
    plan,
    ready,
    send,
    settle,
    step,
    wait_event,
)
from tests.app.test_view_state import RecordingPort


def notes(app: SootheApp, text: str) -> list[dict[str, Any]]:
    return [b for b in app.handler.state.blocks(CONVERSATION) if b.get("note") == text]


async def rebuilt(app: SootheApp) -> ViewState:
    """The thread's view model rebuilt from the store, as a reopened thread's is."""
    session = app.session
    assert session is not None
    snapshot = await session.open_thread(session.thread_id)
    state = ViewState(RecordingPort())  # type: ignore[arg-type]
    state.restore(snapshot, records_of(snapshot))
    return state


def step_mark(tree: GoalTree, goal_id: str, step_id: str) -> str:
    node = tree.node_for(NodeRef("step", goal_id, step_id))
    assert node is not None
    return tree.render_label(node, tree.rich_style, tree.rich_style).plain.split()[0]


async def test_escape_during_two_parallel_steps_says_interrupted_once(rig: Rig) -> None:
    """Two steps streaming, esc: one "interrupted" note (the engine's RunFailed, which the
    store keeps), not a second one the app added; switching views and back, and the
    thread rebuilt from the store, show the same blocks. The paused steps show ‖."""
    first, second = parallel_flow(rig.brain)
    app = rig.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Read the README and write a haiku")
        await wait_event(first.reached, pilot)
        await wait_event(second.reached, pilot)
        await app.handler.wait_idle()
        await pilot.pause()
        await pilot.press("escape")
        first.release.set()  # the client has hung up; the server thread may finish
        second.release.set()
        await settle(app, pilot)

        assert app.handler.goals["G1"].status == "suspended"
        live = app.handler.state.blocks(CONVERSATION)
        assert notes(app, "interrupted") == [{"note": "interrupted", "kind": "warn"}], live
        assert live[-2:] == [
            {"note": "interrupted", "kind": "warn"},
            {"note": "G1 suspended: interrupted by the user", "kind": "info"},
        ]
        app.handler.show("G1")
        await pilot.pause()
        app.handler.show(CONVERSATION)
        await settle(app, pilot)
        assert app.handler.state.blocks(CONVERSATION) == live
        assert (await rebuilt(app)).blocks(CONVERSATION) == live

        # the steps are pending again in the store and resume from their checkpoints:
        # paused with their goal, not "waiting to run"
        tree = app.main.goal_tree
        assert [s.status for s in app.handler.goals["G1"].steps] == ["pending", "pending"]
        assert step_mark(tree, "G1", "S-01") == "‖"
        assert step_mark(tree, "G1", "S-02") == "‖"


async def test_interrupting_ready_goals_says_it_once_and_keeps_it(rig: Rig) -> None:
    """ctrl+r runs the ready goals; esc: the engine says "interrupted" (kept in the
    store, so the rebuilt view says it too) and pauses the goal it left active."""
    held = Pause(text="A long text " * 20, after=2)
    rig.brain.add("PlanGeneration", plan(step("S-01", "Write a long text")))
    rig.brain.step("S-01", held)
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        session = app.session
        assert session is not None
        goal_id = await session.add_goal("Write a long text")
        await settle(app, pilot)
        await pilot.press("ctrl+r")
        await wait_event(held.reached, pilot)
        await app.handler.wait_idle()
        await pilot.pause()
        app.action_interrupt()
        held.release.set()
        await settle(app, pilot)

        assert session.context.get_goal(goal_id).status == "suspended"
        assert notes(app, "interrupted") == [{"note": "interrupted", "kind": "warn"}]
        live = app.handler.state.blocks(CONVERSATION)
        assert (await rebuilt(app)).blocks(CONVERSATION) == live
