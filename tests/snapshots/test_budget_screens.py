"""Budgets on screen (issue 33 item 2), on the real Session against the fake Ollama: the
goal view of a goal suspended at its calls cap (its budget row), the resume dialog that
offers the cap raised, and ``b``'s dialog. 120x40. Every reply's token counts are fixed
(``usage``) and no time cap is set, so the spend shown is the same on every run.

Run with ``make test-snapshots`` (marker ``snapshots``); regenerate with
``--snapshot-update`` and read the SVG's text before committing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from textual.pilot import Pilot

from soothe.app.main import SootheApp
from soothe.app.screens.budget import BudgetDialog
from soothe.app.screens.goals import GoalDetailDialog
from soothe.widgets.goal_tree import NodeRef
from tests.app.real_harness import Rig, classify, plan, send, settle, step, until
from tests.app.real_harness import ready as engine_ready
from tests.fakes import FakeReply

pytestmark = pytest.mark.snapshots

SIZE = (120, 40)
LOOPING = FakeReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}], usage=(3000, 20))


def suspended_at_cap(rig: Rig) -> SootheApp:
    """A goal with calls=3,tokens=50k: the plan and two step calls, then the cap."""
    rig.configure(goals={"budget": "calls=3,tokens=50k"})
    rig.brain.add("Classification", FakeReply(text=json.dumps(classify("simple")), usage=(400, 20)))
    plan_reply = json.dumps(plan(step("S-01", "List the files")))
    rig.brain.add("PlanGeneration", FakeReply(text=plan_reply, usage=(1200, 80)))
    rig.brain.always["step:S-01"] = LOOPING
    return rig.app()


async def at_cap(app: SootheApp, pilot: Pilot[Any]) -> None:
    await engine_ready(app, pilot)
    await send(app, pilot, "List the files")
    await until(lambda: getattr(app.handler.goals.get("G1"), "status", "") == "suspended", pilot)
    await until(lambda: not app._run_going(), pilot)
    await settle(app, pilot)
    app.clear_notifications()
    tree = app.main.goal_tree
    tree.focus()
    tree.show_ref(NodeRef("goal", "G1"))
    await settle(app, pilot)


def test_goal_view_at_its_budget(snap_compare: Any, rig: Rig) -> None:
    app = suspended_at_cap(rig)

    async def stage(pilot: Pilot[Any]) -> None:
        await at_cap(app, pilot)
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, GoalDetailDialog), pilot)
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=stage)


def test_resume_offers_the_cap_raised(snap_compare: Any, rig: Rig) -> None:
    app = suspended_at_cap(rig)

    async def stage(pilot: Pilot[Any]) -> None:
        await at_cap(app, pilot)
        await pilot.press("s")
        await until(lambda: isinstance(app.screen, BudgetDialog), pilot)
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=stage)
