"""/undo in the app on the real Session: the confirmation lists the files the last run
changed; yes puts them back exactly; no leaves them (issue 14)."""

from __future__ import annotations

from soothe.app.screens.dialogs import ConfirmDialog
from tests.app.real_harness import Rig, classify, plan, ready, send, settle, step, until
from tests.fakes import FakeReply


def write_flow(rig: Rig) -> None:
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "rewrite the README, add notes.txt")))
    rig.brain.step(
        "S-01",
        FakeReply(
            tool_calls=[{"name": "write_file", "args": {"path": "README.md", "content": "x\n"}}]
        ),
        FakeReply(
            tool_calls=[{"name": "write_file", "args": {"path": "notes.txt", "content": "n\n"}}]
        ),
        "Rewrote the README and added notes.txt.",
    )


async def test_undo_lists_the_files_asks_and_puts_them_back(rig: Rig) -> None:
    write_flow(rig)
    before = (rig.workspace / "README.md").read_bytes()
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Rewrite the README and add notes")
        await settle(app, pilot)
        assert (rig.workspace / "README.md").read_text() == "x\n"

        await send(app, pilot, "/undo")
        await until(lambda: isinstance(app.screen, ConfirmDialog), pilot)
        question = app.screen.question  # type: ignore[attr-defined]
        assert "notes.txt" in question and "README.md" in question
        # named as the workspace names them, not by their absolute paths (which wrapped
        # at 80x24)
        assert str(rig.workspace) not in question, question
        assert "write_file changed README.md" in question, question
        await pilot.press("n")  # no: nothing changes
        await settle(app, pilot)
        assert (rig.workspace / "notes.txt").exists()

        await send(app, pilot, "/undo")
        await until(lambda: isinstance(app.screen, ConfirmDialog), pilot)
        await pilot.press("y")
        await until(lambda: not (rig.workspace / "notes.txt").exists(), pilot)
        await settle(app, pilot)
        assert (rig.workspace / "README.md").read_bytes() == before
