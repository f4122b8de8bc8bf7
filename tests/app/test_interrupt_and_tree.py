"""An interrupt is said once, the same live and rebuilt, and its paused steps show the
paused mark; a new goal, or one that becomes active, is scrolled into view in the tree.
All on the real Session against the fake Ollama server."""

from __future__ import annotations

from typing import Any

from soothe.app.handler import FOLLOW_QUIET_S
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
    until,
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


class Clock:
    """The app's clock, moved by the test (the start-up's select counts as a move in the
    tree, and follow backs off for FOLLOW_QUIET_S after it)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def visible_lines(tree: GoalTree) -> range:
    top = round(tree.scroll_y)
    return range(top, top + tree.scrollable_content_region.height)


async def test_a_new_goal_below_the_tree_is_scrolled_into_view(rig: Rig) -> None:
    """At 80x24 the tree shows a few goals; each new one is scrolled into view (the
    cursor stays on the conversation). The user moving in the tree holds it still."""
    clock = Clock()
    app = rig.app(clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        clock.now += FOLLOW_QUIET_S
        session = app.session
        assert session is not None
        tree = app.main.goal_tree
        for n in range(1, 31):
            await session.add_goal(f"goal number {n}")
        await settle(app, pilot)
        last = tree.node_for(NodeRef("goal", "G30"))
        assert last is not None
        assert tree.virtual_size.height > tree.scrollable_content_region.height  # overflows
        await until(lambda: last.line in visible_lines(tree), pilot, timeout=3)
        assert tree.cursor_node is tree.conversation  # scrolled, not moved

        # the user moves in the tree: it stays where they are
        tree.focus()
        await pilot.press("home", "down")
        await settle(app, pilot)
        assert tree.selected_ref.goal_id == "G1"
        await session.add_goal("goal number 31")
        await settle(app, pilot)
        added = tree.node_for(NodeRef("goal", "G31"))
        assert added is not None
        assert added.line not in visible_lines(tree)
        assert tree.selected_ref.goal_id == "G1"


async def test_a_goal_that_becomes_active_is_scrolled_into_view(rig: Rig) -> None:
    """The tree scrolled to the last goals; the first one starts (ctrl+r): it is
    scrolled into view although the conversation, not its view, is shown."""
    held = Pause(text="A long text " * 20, after=2)
    rig.configure(loop={"max_parallel_goals": 1})
    rig.brain.add("PlanGeneration", plan(step("S-01", "Write a long text")))
    rig.brain.step("S-01", held)
    clock = Clock()
    app = rig.app(clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        clock.now += FOLLOW_QUIET_S
        session = app.session
        assert session is not None
        tree = app.main.goal_tree
        first = await session.add_goal("the first goal", priority=90)
        for n in range(2, 31):
            await session.add_goal(f"goal number {n}", priority=10)
        await settle(app, pilot)
        tree.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        node = tree.node_for(NodeRef("goal", first))
        assert node is not None and node.line not in visible_lines(tree)
        await pilot.press("ctrl+r")
        await wait_event(held.reached, pilot)
        await app.handler.wait_idle()
        await until(lambda: node.line in visible_lines(tree), pilot, timeout=3)
        assert app.handler.visible == CONVERSATION
        assert tree.cursor_node is tree.conversation
        app.action_interrupt()
        held.release.set()
        await settle(app, pilot)
