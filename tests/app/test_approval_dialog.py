"""The approval dialog on the real engine: a diff against the file on disk for write_file
and edit_file, "new file" / "overwrites N lines", the step in the title, run_shell's
command as a command."""

from __future__ import annotations

from typing import Any

from rich.style import Style
from textual.pilot import Pilot
from textual.widgets import Button, Static

from soothe.app.main import SootheApp
from soothe.app.screens.requests import ApprovalModal
from soothe.widgets.goal_tree import NodeRef
from tests.app.real_harness import Rig, classify, ready, screen_text, send, settle, until
from tests.fakes._base import FakeReply


def tool(name: str, **args: object) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "args": args}])


def _asking(rig: Rig) -> None:
    rig.sections = {"tools": {"approval": "ask"}}
    rig.settings = rig.make_settings()


def _one_step(rig: Rig, *replies: Any) -> None:
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Change it"}]})
    rig.brain.step("S-01", *replies)


async def _modal(app: SootheApp, pilot: Pilot[Any]) -> ApprovalModal:
    await until(lambda: isinstance(app.screen, ApprovalModal), pilot, timeout=20)
    await pilot.pause()
    assert isinstance(app.screen, ApprovalModal)
    return app.screen


def _text(modal: ApprovalModal, selector: str) -> str:
    return str(modal.query_one(selector, Static).render())


async def test_overwriting_a_file_shows_a_diff_and_the_step(rig: Rig) -> None:
    _asking(rig)
    long_line = "x" * 2500  # longer than the event's preview: the diff must use it whole
    (rig.workspace / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    _one_step(
        rig,
        tool("write_file", path="notes.txt", content=f"alpha\nBETA\ngamma\n{long_line}\n"),
        "Rewrote notes.txt.",
    )
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Rewrite the notes")
        modal = await _modal(app, pilot)
        dialog = modal.query_one(".dialog")
        assert dialog.border_title is not None
        assert app.session is not None
        (goal,) = (g.id for g in app.session.goals())
        assert str(dialog.border_title) == f"{goal}/S-01 wants to write_file"
        assert _text(modal, ".change") == "overwrites 3 lines"
        shown = screen_text(app)
        assert "--- a/notes.txt" in shown and "-beta" in shown and "+BETA" in shown
        diff = modal.change.diff if modal.change else ""
        assert "-beta\n+BETA\n" in diff and f"+{long_line}\n" in diff
        assert modal.query("#diff") and not modal.query("#args")
        assert str(modal.query_one("#approve_always", Button).label) == "Always write_file"
        await pilot.press("a")
        await settle(app, pilot)
        assert (rig.workspace / "notes.txt").read_text().startswith("alpha\nBETA\n")


async def test_a_new_file_and_an_edit(rig: Rig) -> None:
    _asking(rig)
    (rig.workspace / "m.py").write_text("def f():\n    return 1\n")
    _one_step(
        rig,
        tool("write_file", path="new.txt", content="hello\n"),
        tool("edit_file", path="m.py", old="return 1", new="return 2"),
        "Done.",
    )
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Make the files")
        first = await _modal(app, pilot)
        assert _text(first, ".change") == "new file, 1 line"
        assert first.change is not None and first.change.diff.startswith("--- /dev/null\n")
        await pilot.press("a")
        await until(lambda: app.screen is not first and isinstance(app.screen, ApprovalModal))
        second = await _modal(app, pilot)
        assert second.tool == "edit_file"
        assert _text(second, ".change") == "edits 1 of 2 lines"
        assert second.change is not None
        assert "-    return 1\n+    return 2\n" in second.change.diff
        await pilot.press("d")
        await settle(app, pilot)
        assert (rig.workspace / "new.txt").read_text() == "hello\n"
        assert "return 1" in (rig.workspace / "m.py").read_text()  # denied


async def test_run_shell_shows_the_command_not_json(rig: Rig) -> None:
    _asking(rig)
    _one_step(rig, tool("run_shell", command="pytest -q tests", timeout=60), "Ran it.")
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Run the tests")
        modal = await _modal(app, pilot)
        assert modal.title_text.endswith("/S-01 wants to run_shell")
        assert modal.query("#command") and not modal.query("#args")
        shown = screen_text(app)
        assert "pytest -q tests" in shown and '"command"' not in shown
        assert "timeout   60 s" in shown
        assert str(modal.query_one("#approve_always", Button).label) == "Always pytest"
        await pilot.press("d")
        await settle(app, pilot)


async def test_the_waiting_step_shows_the_users_turn_in_the_tree(rig: Rig) -> None:
    """While its tool call waits for approval the step reads ``?`` like its goal, not the
    running spinner; once answered it runs on and ends done."""
    _asking(rig)
    _one_step(rig, tool("write_file", path="new.txt", content="hello\n"), "Wrote new.txt.")
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Write the file")
        await _modal(app, pilot)
        assert app.session is not None
        (goal,) = (g.id for g in app.session.goals())
        tree = app.main.goal_tree

        def row(step: str | None = None) -> str:
            node = tree.node_for(NodeRef("step", goal, step) if step else NodeRef("goal", goal))
            assert node is not None
            return tree.render_label(node, Style(), Style()).plain

        assert row().startswith("? ") and row("S-01").startswith("? S-01")
        await pilot.press("a")  # approve once
        await settle(app, pilot)
        assert row("S-01").startswith("✓ S-01")
        assert not row().startswith("?")
