"""Screens as a user sees them. Every SVG here was reviewed; regenerate with
``pytest tests/snapshots --snapshot-update`` and review the diff before committing.

Deterministic by construction: a still clock, no spinner or cursor animation, fixed data.

Most screens run the real Session against the fake Ollama server (``rig``, see
tests/app/real_harness.py). The busy board (five goals at once: one done, one failed,
one streaming, a sub-goal and one waiting, in a single request) still replays the
FakeSession: the engine reaches that board only through an autonomous decomposition
with a failing goal and a goal held mid-stream, which the scripts do not stage yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from soothe.app.main import SootheApp
from soothe.engine.config import Settings
from soothe.widgets.goal_tree import NodeRef
from soothe.widgets.step_card import StepCardView
from tests.app.fake_session import FakeSession, Gate
from tests.app.real_harness import (
    Rig,
    fixed_workspace,
    plan,
    quiz,
    ready,
    send,
    step,
    until,
)
from tests.app.real_harness import classify as classified
from tests.app.scripts import busy_board
from tests.fakes import FakeReply

pytestmark = pytest.mark.snapshots  # make test-snapshots (CI runs it)

CLOSED_PORT = "http://127.0.0.1:9"  # the discard port: nothing listens there


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
    # Evidence that came while a step streams is held up to a second (EvidencePace): the
    # screen is taken once it is shown, as the user sees it a second later.
    pace = app.handler.port.evidence
    for _ in range(150):
        if not pace.held:
            break
        await pilot.pause(0.02)
    assert not pace.held, "held evidence was never shown"
    # a running card's header is drawn at most every 0.25 s: wait for its counts
    cards = app.main.stream.query(StepCardView)
    await until(lambda: not any(card.header_pending for card in cards), pilot)
    await pilot.pause()


class Board:
    """The busy board's two pause points: once G1 and G2 have ended, and at its end."""

    def __init__(self) -> None:
        self.before_g3 = Gate()
        self.end = Gate()


async def _start_run(app: SootheApp, pilot: Pilot[Any], text: str, board: Board) -> None:
    await _settle(app, pilot)
    app.prompt.value = text
    await pilot.press("enter")
    await board.before_g3.reached.wait()
    await _settle(app, pilot)  # G1's last card is shown whole before G3 streams
    board.before_g3.open()
    await board.end.reached.wait()
    await _settle(app, pilot)


def _board(session: FakeSession) -> Board:
    board = Board()
    session.script = lambda text, auto: [*busy_board(session, board.before_g3), board.end]
    return board


def test_empty_main_screen(snap_compare, rig: Rig) -> None:
    app = rig.app()
    assert snap_compare(app, terminal_size=(120, 32), run_before=lambda p: ready(app, p))


def test_run_in_progress(snap_compare, session: FakeSession, settings: Settings) -> None:
    """160x48: five goals (done, failed, streaming, sub-goal, waiting), evidence, live text."""
    board = _board(session)
    app = _app(session, settings)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _start_run(app, pilot, "Prepare the 1.2 release announcement", board)
        app.clear_notifications()

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


def test_small_terminal_80x24(snap_compare, session: FakeSession, settings: Settings) -> None:
    board = _board(session)
    app = _app(session, settings)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _start_run(app, pilot, "Prepare the 1.2 release announcement", board)
        app.clear_notifications()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_failed_step(snap_compare, session: FakeSession, settings: Settings) -> None:
    """The failed goal selected: its stream shows the error; the failure toasts are up."""
    board = _board(session)
    app = _app(session, settings)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _start_run(app, pilot, "Prepare the 1.2 release announcement", board)
        app.main.goal_tree.focus()
        app.main.goal_tree.show_ref(NodeRef("goal", "G2"))
        await _settle(app, pilot)

    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)


def _asking(rig: Rig, request: str) -> None:
    """A request whose plan asks first: an ask_user step (clarification), or an action
    step whose first move is a shell command the user must approve."""
    rig.brain.add("Classification", classified("complex"))
    if request == "clarification":
        rig.configure(tools={"clarify": "ask"})
        rig.brain.add(
            "PlanGeneration",
            plan(
                step(
                    "S-01",
                    "Ask about dates and budget",
                    kind="ask_user",
                    questions=["Which dates work for you?", "What is your budget per night?"],
                )
            ),
        )
    else:
        rig.configure(tools={"approval": "ask"})
        rig.brain.add("PlanGeneration", plan(step("S-01", "Look for hotels")))
        command = "curl -s https://example.org/hotels?city=lisbon"
        rig.brain.step(
            "S-01",
            FakeReply(tool_calls=[{"name": "run_shell", "args": {"command": command}}]),
        )


async def _wait_modal(app: SootheApp, pilot: Pilot[Any]) -> None:
    await ready(app, pilot)
    await send(app, pilot, "Plan a weekend in Lisbon")
    await until(lambda: app.screen is not app.main, pilot, timeout=20)
    await app.handler.wait_idle()
    await pilot.pause()


def test_clarification_modal(snap_compare, rig: Rig) -> None:
    _asking(rig, "clarification")
    app = rig.app()
    assert snap_compare(app, terminal_size=(100, 30), run_before=lambda p: _wait_modal(app, p))


def test_approval_modal(snap_compare, rig: Rig) -> None:
    with fixed_workspace() as ws:  # the dialog names the workspace
        rig.use_workspace(ws)
        _asking(rig, "approval")
        app = rig.app()
        assert snap_compare(app, terminal_size=(100, 30), run_before=lambda p: _wait_modal(app, p))


async def _stored_threads(rig: Rig) -> None:
    """Three threads, made by real requests at fixed store times (no clock on screen)."""
    quiz(rig.brain, "Cheapest: **TP1351** on Friday morning, 142 EUR.")
    quiz(rig.brain, "A terminal workbench for goal-driven agents.")
    session = rig.session()
    await session.start()
    try:
        rig.clock.at(2025, 3, 1, 9, 30)  # type: ignore[union-attr]
        await session.run("Plan a weekend in Lisbon")
        await session.new_thread()
        rig.clock.at(2025, 2, 20, 14, 0)  # type: ignore[union-attr]
        await session.run("What is Soothe?")
        await session.new_thread()
        rig.clock.at(2025, 3, 3, 8, 0)  # type: ignore[union-attr]
        await session.add_goal("Tidy the notes folder")
    finally:
        await session.close()
    assert not rig.brain.unscripted and not rig.brain.leftover()


def test_threads_screen(snap_compare, rig: Rig) -> None:
    app = rig.app()

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await pilot.press("ctrl+t")
        await until(lambda: app.screen.id == "threads", pilot)
        await app.workers.wait_for_complete()
        await _settle(app, pilot)

    import asyncio

    asyncio.run(_stored_threads(rig))
    assert snap_compare(app, terminal_size=(110, 26), run_before=run_before)


def test_help_screen(snap_compare, rig: Rig) -> None:
    app = rig.app()

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await pilot.press("f1")
        await _settle(app, pilot)

    assert snap_compare(app, terminal_size=(100, 50), run_before=run_before)


def test_no_server_notice(snap_compare, rig: Rig) -> None:
    """The model server is down when the app starts: the real server check says so."""
    rig.server.stop()
    rig.configure(model={"base_url": CLOSED_PORT})  # the notice names it: not a random port
    app = rig.app()
    assert snap_compare(app, terminal_size=(100, 30), run_before=lambda p: ready(app, p))


@pytest.mark.parametrize("theme", ["soothe-light", "soothe-high-contrast", "soothe-dusk"])
def test_theme(snap_compare, session: FakeSession, settings: Settings, theme: str) -> None:
    """soothe-dark (the default) is every other snapshot; these are the other built-ins."""
    settings.ui.theme = theme
    board = _board(session)
    app = _app(session, settings)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _start_run(app, pilot, "Prepare the 1.2 release announcement", board)
        app.clear_notifications()

    assert snap_compare(app, terminal_size=(120, 32), run_before=run_before)
