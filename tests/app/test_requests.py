"""Clarification and approval requests on the real Session (fake Ollama): an ask_user
plan step and tool calls under approval "ask" open modals that answer through the
engine's interact broker."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input

from soothe.app.screens.requests import ApprovalModal, ClarificationModal
from soothe.engine import events as ev
from soothe.widgets.step_card import WAITING, StepCardView
from soothe.widgets.tool_call import ToolCallBlock
from soothe.widgets.transcript import StepCard, ToolRun
from tests.app.conftest import type_text
from tests.app.real_harness import Rig, assess, classify, plan, ready, send, settle, step, until
from tests.fakes import FakeReply


async def _wait_for_modal(app: Any, pilot: Any, kind: type) -> Any:
    await until(lambda: isinstance(app.screen, kind), pilot, timeout=20)
    await app.handler.wait_idle()
    await pilot.pause()
    return app.screen


def _answers(app: Any) -> list[ev.EventBase]:
    seen: list[ev.EventBase] = []
    app.session.bus.add_listener(
        lambda e: (
            seen.append(e)
            if isinstance(e, (ev.ClarificationAnswered, ev.ApprovalAnswered))
            else None
        )
    )
    return seen


def _asks(rig: Rig, *questions: str, then: str = "") -> None:
    """A plan whose first step asks the user (an ask_user step), then maybe one more."""
    rig.configure(tools={"clarify": "ask"})
    rig.brain.add("Classification", classify("complex"))
    steps = [step("S-01", "Ask about the trip", kind="ask_user", questions=list(questions))]
    if then:
        steps.append(step("S-02", "Plan it", ["S-01"]))
        rig.brain.step("S-02", then)
    rig.brain.add("PlanGeneration", plan(*steps))
    rig.brain.always["StatusAssessment"] = assess("done", progress="complete")
    rig.brain.always["complete"] = then or "Planned."


async def test_answer_a_clarification(rig: Rig) -> None:
    _asks(rig, "Which city?", "How many nights?", then="Three nights in Lisbon.")
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        answers = _answers(app)
        await send(app, pilot, "plan a trip")
        modal = await _wait_for_modal(app, pilot, ClarificationModal)
        assert modal.questions == ["Which city?", "How many nights?"]
        assert app.main.goal_tree.display_status("G1") == "awaiting_clarification"
        await type_text(pilot, "Lisbon")
        await pilot.press("enter")  # next field
        assert app.focused is modal.query_one("#answer-1", Input)
        modal.query_one("#answer-1", Input).value = "3"
        await pilot.press("enter")  # last field: submit
        await settle(app, pilot)
        assert [(a.outcome, a.answers) for a in answers] == [("answered", ["Lisbon", "3"])]
        assert any("Lisbon" in p and "3" in p for p in rig.brain.prompts("step:S-02"))
        assert app.screen is app.main
        assert app.main.goal_tree.display_status("G1") == "completed"
        notes = [str(w.render()) for w in app.main.stream.query(".note")]
        assert "G1/S-01 · answered: Lisbon; 3" in notes


async def test_skip_a_clarification(rig: Rig) -> None:
    _asks(rig, "Budget?")
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        answers = _answers(app)
        await send(app, pilot, "plan")
        await _wait_for_modal(app, pilot, ClarificationModal)
        await pilot.press("escape")
        await until(lambda: answers, pilot)
        assert [a.outcome for a in answers] == ["skipped"]  # type: ignore[attr-defined]
        await until(lambda: app.main.goal_tree.display_status("G1") != "awaiting_clarification")
        await settle(app, pilot)
        assert app.screen is app.main


def _tool(name: str, **args: object) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "args": args}])


async def test_approve_and_deny_tools(rig: Rig) -> None:
    rig.configure(tools={"approval": "ask"})
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Tidy the workspace")))
    rig.brain.step(
        "S-01",
        _tool("run_shell", command="ls -la"),
        _tool("write_file", path="a.txt", content="one\n"),
        _tool("write_file", path="b.txt", content="two\n"),  # 'always' covers it
        _tool("run_shell", command="rm -rf build"),
        "Tidied, except that the removal was denied.",
    )
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", "Tidied.")
    (rig.workspace / "build").mkdir()
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        answers = _answers(app)
        await send(app, pilot, "tidy")
        modal = await _wait_for_modal(app, pilot, ApprovalModal)
        assert (modal.tool, modal.args["command"], modal.path) == (
            "run_shell",
            "ls -la",
            str(rig.workspace),
        )
        tree = app.main.goal_tree
        label = tree.render_label(tree._goal_nodes["G1"], tree.rich_style, tree.rich_style).plain
        assert "? G1" in label and "approval?" in label
        # the step's card says so too, not "waiting for the model…"
        view = next(v for v in app.main.query(StepCardView) if v.card.key == "G1/S-01")
        await until(lambda: view.live_box is not None, pilot)
        assert view.live_box is not None and view.live_box.placeholder == WAITING["approval"]
        assert view.live_box.render_line(0).text.strip() == "waiting for your approval…"
        assert view._header_content.plain.startswith("? G1/S-01")
        row = next(b for b in view.query(ToolCallBlock))
        assert row.title.plain.startswith("… ⚙ run_shell · waiting for approval ")
        await pilot.press("a")
        await until(lambda: len(answers) == 1, pilot)
        second = await _wait_for_modal(app, pilot, ApprovalModal)
        assert second.tool == "write_file"
        await pilot.press("A")
        await until(lambda: len(answers) == 2, pilot)
        third = await _wait_for_modal(app, pilot, ApprovalModal)
        assert third.args["command"] == "rm -rf build"
        await pilot.press("d")
        await settle(app, pilot)
        assert [(a.tool, a.outcome) for a in answers] == [  # type: ignore[attr-defined]
            ("run_shell", "approve_once"),
            ("write_file", "approve_always"),
            ("run_shell", "deny"),
        ]
        assert (rig.workspace / "a.txt").read_text() == "one\n"
        assert (rig.workspace / "b.txt").read_text() == "two\n"
        assert (rig.workspace / "build").is_dir()  # denied: not run
        assert app.screen is app.main
        assert app.main.goal_tree.display_status("G1") == "completed"
        # one row per call, answered: the call published again after an approval is the
        # same row, not a second one under a pending "…"
        card = app.handler.state.cards["G1/S-01"]
        runs = [part for part in card.parts if isinstance(part, ToolRun)]
        assert [(r.tool, r.ok, r.approval) for r in runs] == [
            ("run_shell", True, "approved once"),
            ("write_file", True, "approved always"),
            ("write_file", True, ""),  # "always" covered it: not asked
            ("run_shell", False, "denied"),
        ]
        # said on the call's row, where the call is: no note after the card
        rows = [b.title.plain for b in app.main.query(ToolCallBlock)]
        assert [r.split(" ")[2:6] for r in rows] == [  # before the arguments, which get cut
            ["run_shell", "·", "approved", "once"],
            ["write_file", "·", "approved", "always"],
            ["write_file", "path=b.txt", "content=two", ""],
            ["run_shell", "·", "denied", "command=rm"],
        ]
        assert not [
            b
            for b in app.handler.state.view("conversation").segments
            if "approv" in str(b.dump()) and not isinstance(b, StepCard)
        ]


async def test_interrupt_closes_an_open_modal(rig: Rig) -> None:
    _asks(rig, "Budget?")
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "plan")
        await _wait_for_modal(app, pilot, ClarificationModal)
        app.action_interrupt()  # esc belongs to the modal (skip); the palette/API interrupts
        await settle(app, pilot)
        assert app.check_action("interrupt", ()) is False  # the run ended
        assert app.screen is app.main
        assert not app.session.broker.pending()
        assert app.session.context.get_goal("G1").status != "completed"


async def test_always_answers_the_same_tools_dialog_waiting_behind_it(rig: Rig) -> None:
    """Two parallel steps ask for write_file at once: "always" on the first dialog answers
    the second step's request too, so its dialog never opens."""
    rig.configure(tools={"approval": "ask"})
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Write a"), step("S-02", "Write b")))
    rig.brain.step("S-01", _tool("write_file", path="a.txt", content="one\n"), "Wrote a.")
    rig.brain.step("S-02", _tool("write_file", path="b.txt", content="two\n"), "Wrote b.")
    rig.brain.always["StatusAssessment"] = assess("done", progress="complete")
    rig.brain.always["complete"] = "Wrote both."
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        answers = _answers(app)
        await send(app, pilot, "write both")
        first = await _wait_for_modal(app, pilot, ApprovalModal)
        await until(lambda: len(app.session.broker.pending()) == 2, pilot, timeout=20)
        await pilot.pause()
        assert first.tool == "write_file"
        await pilot.press("A")
        await until(lambda: not app.session.broker.pending(), pilot, timeout=20)
        await settle(app, pilot)
        assert [(a.tool, a.outcome) for a in answers] == [  # type: ignore[attr-defined]
            ("write_file", "approve_always"),
            ("write_file", "approve_always"),
        ]
        assert (rig.workspace / "a.txt").read_text() == "one\n"
        assert (rig.workspace / "b.txt").read_text() == "two\n"
        assert app.screen is app.main
        assert app.main.goal_tree.display_status("G1") == "completed"


async def test_a_call_asked_again_after_a_pause_is_shown_in_the_resumed_card(rig: Rig) -> None:
    """Esc while write_file waits for approval pauses the step; resumed, it asks again
    and then runs the call (same call id): the resumed card shows the call, approved and
    done, and the paused card keeps its cancelled ask (a review found the call moved into
    the paused card, and the resumed one empty)."""
    rig.configure(tools={"approval": "ask"})
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Write a")))
    rig.brain.step("S-01", _tool("write_file", path="a.txt", content="one\n"), "Wrote a.")
    rig.brain.always["StatusAssessment"] = assess("done", progress="complete")
    rig.brain.always["complete"] = "Wrote a."
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "write a")
        await _wait_for_modal(app, pilot, ApprovalModal)
        app.action_interrupt()
        await settle(app, pilot)
        await app.session.toggle_suspend("G1")  # resume
        app.action_run_goals()
        await _wait_for_modal(app, pilot, ApprovalModal)
        await pilot.press("a")
        await until(lambda: (rig.workspace / "a.txt").exists(), pilot, timeout=20)
        await settle(app, pilot)
        cards = [
            b for b in app.handler.state.view("conversation").segments if isinstance(b, StepCard)
        ]
        rows = [[(r.ok, r.approval) for r in c.parts if isinstance(r, ToolRun)] for c in cards]
        assert [c.status for c in cards] == ["suspended", "completed"]
        assert rows == [[(None, "approval cancelled")], [(True, "approved once")]]
