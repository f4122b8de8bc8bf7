"""Run control on the real engine: ctrl+q during a run asks first, ctrl+r with nothing
ready says why, and a bell / desktop notification when a question waits or a run ends."""

from __future__ import annotations

import pytest

from soothe.app.attention import sequence
from soothe.app.runs import nothing_ready
from soothe.app.screens.dialogs import ConfirmDialog
from soothe.app.screens.requests import ApprovalModal
from soothe.engine.views import GoalView
from tests.app.real_harness import Pause, Rig, classify, ready, send, settle, until, wait_event
from tests.fakes._base import FakeReply


async def test_ctrl_q_during_a_run_asks_first(rig: Rig) -> None:
    held = Pause(text="a long answer that is still coming", after=1)
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Think"}]})
    rig.brain.step("S-01", held)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Think hard")
        await wait_event(held.reached, pilot)
        await pilot.press("ctrl+q")
        await until(lambda: isinstance(app.screen, ConfirmDialog), pilot)
        assert "run is in progress" in app.screen.question  # type: ignore[attr-defined]
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running and app.running
        await pilot.press("ctrl+q", "y")
        held.release.set()
        await until(lambda: not app.is_running, pilot)


async def test_ctrl_q_when_idle_quits_at_once(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+q")
        await until(lambda: not app.is_running, pilot)


async def test_ctrl_r_with_nothing_ready_says_why(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        titles = [(n.title, n.message) for n in app._notifications]
        assert ("Nothing to run", nothing_ready([])) in titles
        session = app.session
        assert session is not None
        g1 = await session.add_goal("first")
        g2 = await session.add_goal("second")
        await session.add_dependency(g2, g1)
        await session.toggle_suspend(g1)
        await settle(app, pilot)
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        messages = [n.message for n in app._notifications if n.title == "Nothing to run"]
        assert messages[-1] == f"No goal is ready: {g2} waits for {g1} (suspended)."
        assert rig.brain.calls == []  # nothing ran


def test_nothing_ready_words() -> None:
    done = GoalView(id="G1", description="a", status="completed")
    failed = GoalView(id="G2", description="b", status="failed")
    assert nothing_ready([done]).startswith("Every goal is finished")
    assert "failed: G2 - r retries" in nothing_ready([done, failed])
    paused = GoalView(id="G3", description="c", status="suspended")
    assert "paused: G3 (suspended)" in nothing_ready([done, paused])


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("bell", "\a"),
        ("osc9", "\x1b]9;Soothe; done: run ]0;x ended\x07"),
        ("osc777", "\x1b]777;notify;Soothe, done;run ]0;x ended\x07"),
        ("off", ""),
    ],
)
def test_notification_sequences(kind: str, expected: str) -> None:
    # control characters from model text are flattened: no escape sequence gets through
    assert sequence(kind, "Soothe; done", "run\x1b]0;x\x07 ended ") == expected


async def test_an_approval_waiting_rings_the_bell(rig: Rig) -> None:
    rig.sections = {"tools": {"approval": "ask"}, "ui": {"notify": "osc9"}}
    rig.settings = rig.make_settings()
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Write"}]})
    rig.brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "write_file", "args": {"path": "a", "content": "x"}}]),
    )
    rig.brain.step("S-01", "Wrote it.")
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Write a")
        await until(lambda: isinstance(app.screen, ApprovalModal), pilot, timeout=20)
        assert app.alerts == ["\x1b]9;Soothe: approval needed: G1/S-01 wants to write_file\x07"]
        await pilot.press("d")
        await settle(app, pilot)
