"""Goal management from the keyboard: new goal, dependency, cancel, suspend, retry, priority."""

from __future__ import annotations

from textual.widgets import Input

from soothe.app.screens.dialogs import ConfirmDialog
from soothe.app.screens.goals import DependencyDialog, GoalDetailDialog, GoalInputDialog
from soothe.app.session_api import GoalView
from soothe.widgets.goal_tree import GoalTree, NodeRef
from tests.app.conftest import settle, top_goals
from tests.app.fake_session import FakeSession


async def test_add_goals_and_a_dependency_with_the_keyboard(make_app, session: FakeSession) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert app.main.goals_empty.display
        await pilot.press("ctrl+g")
        assert isinstance(app.focused, GoalTree)
        await pilot.press("n")
        assert isinstance(app.screen, GoalInputDialog)
        app.screen.query_one(Input).value = "Write docs"
        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.press("n")
        app.screen.query_one(Input).value = "Ship it"
        await pilot.press("enter")
        await settle(app, pilot)
        tree = app.main.goal_tree
        assert top_goals(tree) == ["G1", "G2"]
        assert not app.main.goals_empty.display
        # cursor: Conversation, G1, G2 -> go to G2 and say it waits for G1
        await pilot.press("down", "down")
        assert tree.selected_ref == NodeRef("goal", "G2")
        await pilot.press("d")
        assert isinstance(app.screen, DependencyDialog)
        assert [g.id for g in app.screen.candidates] == ["G1"]
        await pilot.press("enter")
        await settle(app, pilot)
        assert ("add_dependency", ("G2", "G1")) in session.calls
        goal = tree.goal("G2")
        assert goal is not None and goal.depends_on == ["G1"]
        label = tree.render_label(tree.cursor_node, tree.rich_style, tree.rich_style).plain
        assert "after G1" in label and "Ship it" in label
        # the reverse edge is a cycle: refused with the session's message
        await pilot.press("up")
        await pilot.press("d")
        await pilot.press("enter")
        await settle(app, pilot)
        assert any("cycle" in n.message for n in app._notifications)
        goal = tree.goal("G1")
        assert goal is not None and goal.depends_on == []


async def test_cancel_suspend_retry_and_priority(make_app, session: FakeSession) -> None:
    session.seed_goal(GoalView(id="G1", description="Flaky job", status="failed", error="boom"))
    session.seed_goal(GoalView(id="G2", description="Steady job", priority=50))
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        tree = app.main.goal_tree
        assert top_goals(tree) == ["G1", "G2"]
        await pilot.press("ctrl+g", "down")
        assert tree.selected_ref == NodeRef("goal", "G1")
        await pilot.press("r")
        await settle(app, pilot)
        assert tree.goal("G1").status == "pending"  # type: ignore[union-attr]
        await pilot.press("r")  # not failed any more: the session refuses, the app says why
        await settle(app, pilot)
        assert any("has not failed" in n.message for n in app._notifications)

        await pilot.press("down")
        await pilot.press("s")
        await settle(app, pilot)
        assert tree.goal("G2").status == "suspended"  # type: ignore[union-attr]
        await pilot.press("s")
        await settle(app, pilot)
        assert tree.goal("G2").status == "pending"  # type: ignore[union-attr]
        await pilot.press("plus")
        await settle(app, pilot)
        await pilot.press("plus")
        await settle(app, pilot)
        await pilot.press("minus")
        await settle(app, pilot)
        assert tree.goal("G2").priority == 60  # type: ignore[union-attr]
        assert [c for c in session.calls if c[0] == "set_priority"] == [
            ("set_priority", ("G2", 60)),
            ("set_priority", ("G2", 70)),
            ("set_priority", ("G2", 60)),
        ]
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await settle(app, pilot)
        assert tree.goal("G2").status == "cancelled"  # type: ignore[union-attr]
        label = tree.render_label(tree.cursor_node, tree.rich_style, tree.rich_style).plain
        assert label.startswith("⊗ G2 Steady job")
        assert "p60" in label

        await pilot.press("enter")
        assert isinstance(app.screen, GoalDetailDialog)
        assert app.screen.goal.id == "G2"
        await pilot.press("escape")
        assert app.screen is app.main


async def test_goal_keys_need_a_goal(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+g", "x")
        await pilot.pause()
        assert any("Select a goal first" in n.message for n in app._notifications)


async def test_tree_keys_follow_the_keymap(settings, session: FakeSession) -> None:
    from soothe.app.main import SootheApp

    settings.ui.keymap = {"tree.cancel": "delete"}
    session.seed_goal(GoalView(id="G1", description="Job"))
    app = SootheApp(settings, session=session, animate=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+g", "down", "x")
        await settle(app, pilot)
        assert ("cancel_goal", ("G1",)) not in session.calls
        await pilot.press("delete", "y")
        await settle(app, pilot)
        assert ("cancel_goal", ("G1",)) in session.calls
