"""D in the goal tree: pick a goal this one waits for; it stops waiting (real Session,
ContextEngine.remove_dependency, published as goal.updated)."""

from __future__ import annotations

from soothe.app.screens.goals import DependencyDialog
from soothe.engine import events as ev
from tests.app.real_harness import Rig, ready, settle, until


async def test_remove_a_dependency_from_the_tree(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        session = app.session
        assert session is not None
        seen: list[ev.EventBase] = []
        session.bus.add_listener(seen.append)
        g1 = await session.add_goal("first")
        g2 = await session.add_goal("second")
        await session.add_dependency(g2, g1)
        await settle(app, pilot)
        tree = app.main.goal_tree
        tree.focus()
        tree.move_cursor(tree._goal_nodes[g1])
        await pilot.press("D")  # g1 waits for nothing: says so
        await settle(app, pilot)
        assert any(n.message == f"{g1} waits for no other goal." for n in app._notifications)
        tree.move_cursor(tree._goal_nodes[g2])
        await pilot.press("D")
        await until(lambda: isinstance(app.screen, DependencyDialog), pilot)
        assert app.screen.removing  # type: ignore[attr-defined]
        assert [g.id for g in app.screen.candidates] == [g1]  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(app, pilot)
        assert [g.id for g in session.goals() if g.id == g2 and not g.depends_on] == [g2]
        updates = [e for e in seen if isinstance(e, ev.GoalUpdated) and e.goal_id == g2]
        assert updates[-1].depends_on == []
        goal = tree.goal(g2)
        assert goal is not None and goal.depends_on == []
