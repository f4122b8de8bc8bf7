"""Goal management from the keyboard on the real Session (fake Ollama): new goal,
dependency, cancel, suspend, retry, priority. The app draws goals from the events the
ContextEngine publishes; the store is checked as well."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input

from soothe.app.screens.dialogs import ConfirmDialog
from soothe.app.screens.goals import DependencyDialog, GoalDetailDialog, GoalInputDialog
from soothe.engine import events as ev
from soothe.widgets.goal_tree import GoalTree, NodeRef
from tests.app.conftest import top_goals
from tests.app.real_harness import Rig, ready, settle, until


def _record(app: Any) -> list[ev.EventBase]:
    seen: list[ev.EventBase] = []
    app.session.bus.add_listener(seen.append)
    return seen


async def test_add_goals_and_a_dependency_with_the_keyboard(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        seen = _record(app)
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
        assert [g.description for g in app.session.goals()] == ["Write docs", "Ship it"]
        assert not app.main.goals_empty.display
        # cursor: Conversation, G1, G2 -> go to G2 and say it waits for G1
        await pilot.press("down", "down")
        assert tree.selected_ref == NodeRef("goal", "G2")
        await pilot.press("d")
        assert isinstance(app.screen, DependencyDialog)
        assert [g.id for g in app.screen.candidates] == ["G1"]
        await pilot.press("enter")
        await settle(app, pilot)
        assert list(app.session.context.get_goal("G2").depends_on) == ["G1"]  # in the store
        assert [(e.goal_id, e.depends_on) for e in seen if isinstance(e, ev.GoalUpdated)] == [
            ("G2", ["G1"])
        ]
        goal = tree.goal("G2")
        assert goal is not None and goal.depends_on == ["G1"]
        label = tree.render_label(tree.cursor_node, tree.rich_style, tree.rich_style).plain
        assert "after G1" in label and "Ship it" in label
        # the reverse edge is a cycle: the engine offers no candidate, the app says why
        await pilot.press("up")
        await pilot.press("d")
        await settle(app, pilot)
        assert app.screen is app.main
        assert any("without a cycle" in n.message for n in app._notifications)
        goal = tree.goal("G1")
        assert goal is not None and goal.depends_on == []
        assert not app.session.context.get_goal("G1").depends_on


async def test_cancel_suspend_retry_and_priority(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        session = app.session
        g1 = await session.add_goal("Flaky job")
        g2 = await session.add_goal("Steady job", priority=50)
        # a failed goal, as the runner leaves one after its last round (no retries left)
        for _ in range(3):
            await session.context.activate_goal(g1)
            await session.context.fail_goal(g1, error="boom")
        assert session.context.get_goal(g1).retry_count == 2  # 2/2: retry_goal refuses
        seen = _record(app)
        await settle(app, pilot)
        tree = app.main.goal_tree
        assert top_goals(tree) == [g1, g2]
        assert tree.goal(g1).status == "failed"  # type: ignore[union-attr]
        await pilot.press("ctrl+g", "down")
        assert tree.selected_ref == NodeRef("goal", g1)
        await pilot.press("r")
        await settle(app, pilot)
        assert tree.goal(g1).status == "pending"  # type: ignore[union-attr]
        retried = session.context.get_goal(g1)  # the user's retry: a fresh budget
        assert (retried.status, retried.retry_count) == ("pending", 0)

        await pilot.press("down")
        await pilot.press("s")
        await settle(app, pilot)
        assert tree.goal(g2).status == "suspended"  # type: ignore[union-attr]
        await pilot.press("s")
        await settle(app, pilot)
        assert tree.goal(g2).status == "pending"  # type: ignore[union-attr]
        await pilot.press("plus")
        await settle(app, pilot)
        await pilot.press("plus")
        await settle(app, pilot)
        await pilot.press("minus")
        await settle(app, pilot)
        assert tree.goal(g2).priority == 60  # type: ignore[union-attr]
        assert session.context.get_goal(g2).priority == 60
        priorities = [e.priority for e in seen if isinstance(e, ev.GoalUpdated) and e.priority]
        assert priorities == [60, 70, 60]
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await settle(app, pilot)
        assert tree.goal(g2).status == "cancelled"  # type: ignore[union-attr]
        assert session.context.get_goal(g2).status == "cancelled"
        label = tree.render_label(tree.cursor_node, tree.rich_style, tree.rich_style).plain
        assert label.startswith(f"⊗ {g2} Steady job")
        assert "p60" in label

        await pilot.press("enter")
        assert isinstance(app.screen, GoalDetailDialog)
        assert app.screen.goal.id == g2
        await pilot.press("escape")
        assert app.screen is app.main


async def test_goal_keys_need_a_goal(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+g", "x")
        await until(
            lambda: any("Select a goal first" in n.message for n in app._notifications), pilot
        )


async def test_tree_keys_follow_the_keymap(rig: Rig) -> None:
    rig.configure(ui={"keymap": {"tree.cancel": "delete"}})
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await app.session.add_goal("Job")
        await settle(app, pilot)
        await pilot.press("ctrl+g", "down", "x")
        await settle(app, pilot)
        assert app.session.context.get_goal("G1").status == "pending"
        await pilot.press("delete", "y")
        await settle(app, pilot)
        assert app.session.context.get_goal("G1").status == "cancelled"


async def test_enter_on_a_step_shows_that_step_in_its_goal(rig: Rig) -> None:
    """Enter on a step: its goal's details, the step marked, with what its card knows; a
    long step description wraps under itself, not under the step's id."""
    from textual.widgets import Static

    from tests.app.real_harness import assess, classify, plan, send, step

    long = "Read every file of the workspace and list what each one is for " * 3
    rig.brain.add("Classification", classify("complex"))
    rig.brain.add(
        "PlanGeneration", plan(step("S-01", "Look around"), step("S-02", long.strip(), ["S-01"]))
    )
    rig.brain.step("S-01", "Two files.")
    rig.brain.step("S-02", "Both are notes.")
    rig.brain.always["StatusAssessment"] = assess("done", progress="complete")
    rig.brain.always["complete"] = "Both are notes."
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "what is here")
        tree = app.main.goal_tree
        await until(lambda: tree.display_status("G1") == "completed", pilot, timeout=20)
        await settle(app, pilot)
        await pilot.press("ctrl+g")
        tree.move_cursor(tree._step_nodes[("G1", "S-02")])
        await pilot.pause()
        assert tree.selected_ref == NodeRef("step", "G1", "S-02")
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, GoalDetailDialog), pilot)
        dialog = app.screen
        assert isinstance(dialog, GoalDetailDialog)
        await pilot.pause()
        assert dialog.goal.id == "G1" and dialog.step_id == "S-02"
        chosen = dialog.query_one(".step-row.-chosen")
        mark, text = chosen.query(Static)
        assert str(mark.render()).endswith("S-02")
        assert text.region.x > mark.region.x + 4 and text.region.height > 1  # wrapped
        facts = str(dialog.query_one(".step-facts", Static).render())
        assert facts.startswith("3 tokens")
        await pilot.press("escape")
        assert app.screen is app.main
        # on the goal: no step marked
        tree.move_cursor(tree._goal_nodes["G1"])
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, GoalDetailDialog), pilot)
        assert app.screen.step_id is None and not app.screen.query(".step-row.-chosen")  # type: ignore[attr-defined]
