"""Clarification and approval requests: modals that answer through the interact broker."""

from __future__ import annotations

from textual.widgets import Input

from soothe.app.screens.requests import ApprovalModal, ClarificationModal
from soothe.engine import events as ev
from soothe.engine.interact import (
    ApprovalRequest,
    ApprovalResponse,
    ClarificationRequest,
    ClarificationResponse,
)
from tests.app.conftest import settle, submit, type_text
from tests.app.fake_session import Ask, FakeSession, ScriptItem


def _goal() -> list[ScriptItem]:
    return [
        ev.GoalCreated(goal_id="G1", description="Plan the trip"),
        ev.GoalStatusChanged(goal_id="G1", from_status="pending", to_status="active"),
    ]


async def _wait_for_modal(app, pilot, kind):  # type: ignore[no-untyped-def]
    for _ in range(50):  # bounded: each pause waits for the app to go idle
        await app.handler.wait_idle()
        await pilot.pause()
        if isinstance(app.screen, kind):
            return app.screen
    raise AssertionError(f"no {kind.__name__} appeared")


async def test_answer_a_clarification(make_app, session: FakeSession) -> None:
    ask = Ask(
        ClarificationRequest(
            questions=["Which city?", "How many nights?"], goal_id="G1", step_id="S1"
        )
    )
    session.script = lambda text, auto: [
        *_goal(),
        ask,
        ev.GoalStatusChanged(goal_id="G1", from_status="active", to_status="completed"),
    ]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "plan a trip")
        modal = await _wait_for_modal(app, pilot, ClarificationModal)
        assert modal.questions == ["Which city?", "How many nights?"]
        assert app.main.goal_tree.display_status("G1") == "awaiting_clarification"
        await type_text(pilot, "Lisbon")
        await pilot.press("enter")  # next field
        assert app.focused is modal.query_one("#answer-1", Input)
        modal.query_one("#answer-1", Input).value = "3"
        await pilot.press("enter")  # last field: submit
        await settle(app, pilot)
        assert ask.response == ClarificationResponse(outcome="answered", answers=["Lisbon", "3"])
        assert app.screen is app.main
        assert app.main.goal_tree.display_status("G1") == "completed"
        notes = [str(w.render()) for w in app.main.stream.query(".note")]
        assert "answered: Lisbon; 3" in notes


async def test_skip_a_clarification(make_app, session: FakeSession) -> None:
    ask = Ask(ClarificationRequest(questions=["Budget?"], goal_id="G1"))
    session.script = lambda text, auto: [*_goal(), ask]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "plan")
        await _wait_for_modal(app, pilot, ClarificationModal)
        await pilot.press("escape")
        await settle(app, pilot)
        assert ask.response == ClarificationResponse(outcome="skipped")
        assert app.main.goal_tree.display_status("G1") == "active"


async def test_approve_and_deny_tools(make_app, session: FakeSession) -> None:
    once = Ask(
        ApprovalRequest(tool="shell", args={"command": "ls -la"}, path="/work/demo", goal_id="G1")
    )
    always = Ask(ApprovalRequest(tool="write_file", args={"path": "a.txt"}, goal_id="G1"))
    deny = Ask(ApprovalRequest(tool="shell", args={"command": "rm -rf build"}, goal_id="G1"))
    session.script = lambda text, auto: [*_goal(), once, always, deny]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "tidy")
        modal = await _wait_for_modal(app, pilot, ApprovalModal)
        assert (modal.tool, modal.args, modal.path) == (
            "shell",
            {"command": "ls -la"},
            "/work/demo",
        )
        label = app.main.goal_tree.render_label(
            app.main.goal_tree._goal_nodes["G1"],
            app.main.goal_tree.rich_style,
            app.main.goal_tree.rich_style,
        ).plain
        assert "? G1" in label and "approval?" in label
        await pilot.press("a")
        second = await _wait_for_modal(app, pilot, ApprovalModal)
        assert second.tool == "write_file"
        await pilot.press("A")
        third = await _wait_for_modal(app, pilot, ApprovalModal)
        assert third.args == {"command": "rm -rf build"}
        await pilot.press("d")
        await settle(app, pilot)
        assert [a.response for a in (once, always, deny)] == [
            ApprovalResponse(outcome="approve_once"),
            ApprovalResponse(outcome="approve_always"),
            ApprovalResponse(outcome="deny"),
        ]
        assert app.screen is app.main
        assert app.main.goal_tree.display_status("G1") == "active"


async def test_interrupt_closes_an_open_modal(make_app, session: FakeSession) -> None:
    ask = Ask(ClarificationRequest(questions=["Budget?"], goal_id="G1"))
    session.script = lambda text, auto: [*_goal(), ask]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "plan")
        await _wait_for_modal(app, pilot, ClarificationModal)
        app.action_interrupt()  # esc belongs to the modal (skip); the palette/API interrupts
        await settle(app, pilot)
        assert session.interrupted
        assert app.screen is app.main
        assert not session.broker.pending()
