"""Honest status everywhere: a request that fails, run through the real Session (the app
on the fake Ollama), shows the same status for its goal in the TUI goal tree, in the
Markdown export and in ``soothe threads show``, and none of them shows it as done."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from soothe.engine.glyphs import GOAL_GLYPHS
from tests.app.real_harness import Rig, classify, panel, plan, ready, screen_text, send, settle
from tests.app.real_harness import step as plan_step

_HEADING = re.compile(r"^### (\S) (G\d+) — ", re.MULTILINE)
_STATUS = re.compile(r"^status: (\w+)", re.MULTILINE)


def statuses_in_markdown(text: str) -> dict[str, tuple[str, str]]:
    """{goal id: (glyph, status)} from a thread's Markdown (export / threads show)."""
    out: dict[str, tuple[str, str]] = {}
    for section in text.split("\n### ")[1:]:
        heading = _HEADING.match("### " + section)
        status = _STATUS.search(section)
        assert heading and status, section[:200]
        out[heading.group(2)] = (heading.group(1), status.group(1))
    return out


def failing_flow(rig: Rig) -> None:
    """Every step answer is empty; the model claims success anyway (not believed)."""
    brain = rig.brain
    brain.add("Classification", classify("simple"))
    brain.always["PlanGeneration"] = plan(plan_step("S-01", "list the files"))
    brain.always["step"] = ""
    brain.always["StatusAssessment"] = {"status": "done", "goal_progress": "complete"}
    brain.always["Reflection"] = {"what_failed": "empty answers", "try_next": "use list_dir"}
    brain.always["text"] = ""
    rig.configure(loop={"max_iterations": 2})


async def test_a_failed_goal_has_one_status_in_tree_export_and_threads_show(
    rig: Rig, capsys: pytest.CaptureFixture[str]
) -> None:
    failing_flow(rig)
    app = rig.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "list the files")
        await settle(app, pilot)
        session: Any = app.session
        thread = session.thread_id
        store = {g.id: g.status for g in session.context.list_goals(thread_id=thread)}
        tree = {gid: app.main.goal_tree.display_status(gid) for gid in store}
        goals_panel = panel(screen_text(app), "Goals")
        exported = statuses_in_markdown(await session.export_thread(thread))

    from soothe.cli import main

    capsys.readouterr()
    # The command runs its own event loop, as `soothe threads show` in a shell would.
    args = ["threads", "show", thread, "--data-dir", str(rig.data_dir)]
    code = await asyncio.to_thread(main, args)
    shown = statuses_in_markdown(capsys.readouterr().out)

    assert code == 0
    assert store == {"G1": "failed"}, store
    assert tree == store
    assert {g: s for g, (_, s) in exported.items()} == store
    assert shown == exported
    for gid, status in store.items():
        glyph = GOAL_GLYPHS[status]
        assert exported[gid][0] == glyph != GOAL_GLYPHS["completed"]
        (row,) = [r for r in goals_panel if gid in r]
        assert glyph in row and GOAL_GLYPHS["completed"] not in row, goals_panel
