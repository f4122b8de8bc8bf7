"""An interrupt is said once, the same live and rebuilt, and its paused steps show the
paused mark; a new goal, or one that becomes active, is scrolled into view in the tree.
All on the real Session against the fake Ollama server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual import events
from textual.message import Message
from textual.scrollbar import ScrollDown, ScrollTo, ScrollUp

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
    """The app's clock, moved by the test past follow's back-off (FOLLOW_QUIET_S after
    the user moved in the tree or chose a view)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def visible_lines(tree: GoalTree) -> range:
    top = round(tree.scroll_y)
    return range(top, top + tree.scrollable_content_region.height)


async def add_goals(app: SootheApp, pilot: Any, count: int) -> None:
    """``count`` goals more than the tree shows at 80x24, the last one scrolled into
    view (the cursor stays on the conversation)."""
    session = app.session
    assert session is not None
    tree = app.main.goal_tree
    for n in range(1, count + 1):
        await session.add_goal(f"goal number {n}")
    await settle(app, pilot)
    last = tree.node_for(NodeRef("goal", f"G{count}"))
    assert last is not None
    assert tree.virtual_size.height > tree.scrollable_content_region.height  # overflows
    await until(lambda: last.line in visible_lines(tree), pilot, timeout=3)
    assert tree.cursor_node is tree.conversation  # scrolled, not moved


async def test_a_new_goal_below_the_tree_is_scrolled_into_view(rig: Rig) -> None:
    """At 80x24 the tree shows a few goals; each new one is scrolled into view (the
    cursor stays on the conversation). The user moving in the tree holds it still for
    FOLLOW_QUIET_S, and so does the tree having focus: the cursor's line stays in
    sight."""
    clock = Clock()
    app = rig.app(clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        session = app.session
        assert session is not None
        tree = app.main.goal_tree
        await add_goals(app, pilot, 30)

        # the user moves in the tree: it stays where they are for a while (the prompt
        # focused again, so only the back-off holds it)
        tree.focus()
        await pilot.press("home", "down")
        await settle(app, pilot)
        assert tree.selected_ref.goal_id == "G1"
        cursor = tree.cursor_line
        app.prompt.focus()
        await session.add_goal("goal number 31")
        await settle(app, pilot)
        added = tree.node_for(NodeRef("goal", "G31"))
        assert added is not None
        assert added.line not in visible_lines(tree)
        assert tree.selected_ref.goal_id == "G1"

        # later, back working in the tree (focused): a new goal does not scroll the
        # cursor's line away
        tree.focus()
        clock.now += FOLLOW_QUIET_S
        await session.add_goal("goal number 32")
        await settle(app, pilot)
        await pilot.pause(0.1)
        assert cursor in visible_lines(tree)
        assert tree.selected_ref.goal_id == "G1"

        # once the user has left the tree, new goals are scrolled into view again
        app.prompt.focus()
        await session.add_goal("goal number 33")
        await settle(app, pilot)
        last = tree.node_for(NodeRef("goal", "G33"))
        assert last is not None
        await until(lambda: last.line in visible_lines(tree), pilot, timeout=3)
        assert tree.selected_ref.goal_id == "G1"


def wheel_up(tree: GoalTree) -> list[Message]:
    return [events.MouseScrollUp(tree, 2, 2, 0, -1, 0, False, False, False)] * 3


USER_SCROLLS: dict[str, tuple[bool, Callable[[GoalTree], list[Message]]]] = {
    # what the user does, from the end of the tree (False) or its top (True)
    "wheel": (False, wheel_up),
    "scrollbar thumb dragged": (False, lambda tree: [ScrollTo(y=5, animate=False)]),
    "scrollbar track clicked above the thumb": (False, lambda tree: [ScrollUp()]),
    "scrollbar track clicked below the thumb": (True, lambda tree: [ScrollDown()]),
}


@pytest.mark.parametrize("how", USER_SCROLLS)
async def test_scrolling_the_tree_holds_it_still(rig: Rig, how: str) -> None:
    """The user scrolls the tree, with the wheel or its scrollbar (the scrollbar's
    messages reach the tree; the cursor does not move, the tree gets no focus): a new
    goal leaves the tree where they scrolled it."""
    app = rig.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        session = app.session
        assert session is not None
        tree = app.main.goal_tree
        await add_goals(app, pilot, 30)
        from_top, user_scroll = USER_SCROLLS[how]
        if from_top:
            tree.scroll_home(animate=False, immediate=True)
            await pilot.pause()
        before = tree.scroll_y
        assert not tree.has_focus
        for message in user_scroll(tree):
            tree.post_message(message)
        await settle(app, pilot)
        await pilot.wait_for_scheduled_animations()  # the track's page scroll is animated
        scrolled = tree.scroll_y
        assert scrolled != before  # the user's scroll moved it
        await session.add_goal("goal number 31")
        await settle(app, pilot)
        await pilot.pause(0.1)
        assert tree.scroll_y == scrolled
        assert tree.cursor_node is tree.conversation


async def test_a_goal_that_becomes_active_is_scrolled_into_view(rig: Rig) -> None:
    """The tree scrolled to the last goals; the first one starts (ctrl+r): it is
    scrolled into view although the conversation, not its view, is shown."""
    held = Pause(text="A long text " * 20, after=2)
    rig.configure(loop={"max_parallel_goals": 1})
    rig.brain.add("PlanGeneration", plan(step("S-01", "Write a long text")))
    rig.brain.step("S-01", held)
    app = rig.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
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
