"""Screens as a user sees them. Every SVG here was reviewed; regenerate with
``pytest tests/snapshots --snapshot-update`` and review the diff before committing.

Deterministic by construction: a still clock, no spinner or cursor animation, fixed data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from soothe.app.main import SootheApp
from soothe.engine import events as ev
from soothe.engine.config import Settings
from soothe.engine.interact import ApprovalRequest, ClarificationRequest
from soothe.widgets.goal_tree import NodeRef
from tests.app.fake_session import Ask, FakeSession, Gate
from tests.app.scripts import busy_board, stored_threads


def _app(session: FakeSession, settings: Settings) -> SootheApp:
    app = SootheApp(settings, session=session, clock=lambda: 100.0, animate=False)
    app.NOTIFICATION_TIMEOUT = 120  # type: ignore[misc]  # toasts must outlive a slow run
    return app


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(tools={"workspace": "/work/demo"}, storage={"data_dir": tmp_path})


@pytest.fixture
def session(settings: Settings) -> FakeSession:
    return FakeSession(settings=settings, thread_id="t-0001", model_label="qwen2.5:7b")


async def _settle(app: SootheApp, pilot: Pilot[Any]) -> None:
    await pilot.pause()
    await app.handler.wait_idle()
    await pilot.pause()
    # The stream follows its end with a scroll deferred until after a refresh; on a
    # loaded machine that can land after the screenshot. Wait for it (bounded).
    stream = app.main.stream
    for _ in range(100):
        if not stream.follow or stream._at_end():
            break
        await pilot.pause(0.02)


async def _start_run(app: SootheApp, pilot: Pilot[Any], text: str, gate: Gate) -> None:
    await _settle(app, pilot)
    app.prompt.value = text
    await pilot.press("enter")
    await gate.reached.wait()
    await _settle(app, pilot)


def _board(session: FakeSession) -> Gate:
    gate = Gate()
    session.script = lambda text, auto: [*busy_board(session), gate]
    return gate


def test_empty_main_screen(snap_compare, session: FakeSession, settings: Settings) -> None:
    app = _app(session, settings)
    assert snap_compare(app, terminal_size=(120, 32), run_before=lambda p: _settle(app, p))


def test_run_in_progress(snap_compare, session: FakeSession, settings: Settings) -> None:
    """160x48: five goals (done, failed, streaming, sub-goal, waiting), evidence, live text."""
    gate = _board(session)
    app = _app(session, settings)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _start_run(app, pilot, "Prepare the 1.2 release announcement", gate)
        app.clear_notifications()

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


def test_small_terminal_80x24(snap_compare, session: FakeSession, settings: Settings) -> None:
    gate = _board(session)
    app = _app(session, settings)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _start_run(app, pilot, "Prepare the 1.2 release announcement", gate)
        app.clear_notifications()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_failed_step(snap_compare, session: FakeSession, settings: Settings) -> None:
    """The failed goal selected: its stream shows the error; the failure toasts are up."""
    gate = _board(session)
    app = _app(session, settings)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _start_run(app, pilot, "Prepare the 1.2 release announcement", gate)
        app.main.goal_tree.focus()
        app.main.goal_tree.show_ref(NodeRef("goal", "G2"))
        await _settle(app, pilot)

    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)


def _asking(session: FakeSession, request: ClarificationRequest | ApprovalRequest) -> Gate:
    gate = Gate()
    session.script = lambda text, auto: [
        ev.GoalCreated(goal_id="G1", description="Plan a weekend in Lisbon"),
        ev.GoalStatusChanged(goal_id="G1", from_status="pending", to_status="active"),
        ev.StepStarted(
            goal_id="G1", step_id="S1", description="Ask about dates and budget", kind="ask_user"
        ),
        gate,
        Ask(request),
    ]
    return gate


async def _wait_modal(app: SootheApp, pilot: Pilot[Any], gate: Gate) -> None:
    await _start_run(app, pilot, "Plan a weekend in Lisbon", gate)
    gate.open()
    for _ in range(50):
        await _settle(app, pilot)
        if app.screen is not app.main:
            return
    raise AssertionError("the modal did not open")


def test_clarification_modal(snap_compare, session: FakeSession, settings: Settings) -> None:
    request = ClarificationRequest(
        questions=["Which dates work for you?", "What is your budget per night?"],
        goal_id="G1",
        step_id="S1",
    )
    gate = _asking(session, request)
    app = _app(session, settings)
    assert snap_compare(
        app, terminal_size=(100, 30), run_before=lambda p: _wait_modal(app, p, gate)
    )


def test_approval_modal(snap_compare, session: FakeSession, settings: Settings) -> None:
    request = ApprovalRequest(
        tool="shell",
        args={"command": "curl -s https://example.org/hotels?city=lisbon", "timeout": 20},
        path="/work/demo",
        goal_id="G1",
        step_id="S1",
    )
    gate = _asking(session, request)
    app = _app(session, settings)
    assert snap_compare(
        app, terminal_size=(100, 30), run_before=lambda p: _wait_modal(app, p, gate)
    )


def test_threads_screen(snap_compare, session: FakeSession, settings: Settings) -> None:
    stored_threads(session)
    app = _app(session, settings)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(app, pilot)
        await pilot.press("ctrl+t")
        await app.workers.wait_for_complete()
        await _settle(app, pilot)

    assert snap_compare(app, terminal_size=(110, 26), run_before=run_before)


def test_help_screen(snap_compare, session: FakeSession, settings: Settings) -> None:
    app = _app(session, settings)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(app, pilot)
        await pilot.press("f1")
        await _settle(app, pilot)

    assert snap_compare(app, terminal_size=(100, 50), run_before=run_before)


def test_no_server_notice(snap_compare, session: FakeSession, settings: Settings) -> None:
    session.provider_status = "unreachable"
    app = _app(session, settings)
    assert snap_compare(app, terminal_size=(100, 30), run_before=lambda p: _settle(app, p))


@pytest.mark.parametrize("theme", ["soothe-light", "soothe-high-contrast", "soothe-dusk"])
def test_theme(snap_compare, session: FakeSession, settings: Settings, theme: str) -> None:
    """soothe-dark (the default) is every other snapshot; these are the other built-ins."""
    settings.ui.theme = theme
    gate = _board(session)
    app = _app(session, settings)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _start_run(app, pilot, "Prepare the 1.2 release announcement", gate)
        app.clear_notifications()

    assert snap_compare(app, terminal_size=(120, 32), run_before=run_before)
