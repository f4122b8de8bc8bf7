"""Keys that reach the goal tree in one burst (key repeat, tmux send-keys, a fast typist)
are applied in order, each seeing what the one before did: ``+ + +`` raises a goal's
priority three steps, as three keys one by one do (the prompt: test_prompt_burst.py)."""

from __future__ import annotations

from soothe.app.goal_actions import PRIORITY_STEP
from soothe.widgets.goal_tree import GoalTree, NodeRef
from tests.app.real_harness import Rig, ready, settle, until
from tests.app.test_every_key import key_event


def _burst(app: object, *keys: str) -> None:
    """Every key posted at once, as the driver does with one read of the terminal."""
    driver = app._driver  # type: ignore[attr-defined]
    for key in keys:
        event = key_event(key)
        event.set_sender(app)  # type: ignore[arg-type]
        driver.send_message(event)


async def test_a_burst_of_plus_and_minus_applies_every_key_in_order(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        session = app.session
        goal = await session.add_goal("Steady job", priority=50)
        await settle(app, pilot)
        tree = app.main.goal_tree
        tree.focus()
        tree.show_ref(NodeRef("goal", goal))
        await settle(app, pilot)
        assert isinstance(app.focused, GoalTree) and tree.selected_ref == NodeRef("goal", goal)
        _burst(app, "plus", "plus", "plus")
        expected = 50 + 3 * PRIORITY_STEP
        await until(lambda: session.context.get_goal(goal).priority == expected, pilot)
        await settle(app, pilot)
        assert tree.goal(goal).priority == expected  # type: ignore[union-attr]
        _burst(app, "minus", "minus", "plus", "minus")
        expected -= 2 * PRIORITY_STEP
        await until(lambda: session.context.get_goal(goal).priority == expected, pilot)
        await settle(app, pilot)
        assert session.context.get_goal(goal).priority == expected
        assert tree.goal(goal).priority == expected  # type: ignore[union-attr]
