"""New screens of issue 13, each on the real Session and the fake Ollama server.

Every SVG here was reviewed (also as text, ``tests.app.real_harness.screen_text``);
regenerate with ``pytest tests/snapshots --snapshot-update`` and review the diff.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from textual.pilot import Pilot

from soothe.app.main import SootheApp
from soothe.widgets.goal_tree import NodeRef
from soothe.widgets.step_card import StepCardView
from tests.app.real_harness import (
    Pause,
    Rig,
    assess,
    classify,
    parallel_flow,
    plan,
    readme_flow,
    ready,
    screen_text,
    send,
    settle,
    step,
    until,
    wait_event,
)
from tests.fakes import FakeReply

pytestmark = pytest.mark.snapshots  # make test-snapshots (CI runs it)

CLOSED_PORT = "http://127.0.0.1:9"  # the discard port: nothing listens there
SIZE = (120, 40)


async def _shown(app: SootheApp, pilot: Pilot[Any], *texts: str) -> None:
    """Wait (bounded) until every text is on screen, then for the handler to be idle and
    the running cards' headers to show their counts (drawn at most every 0.25 s)."""
    await until(lambda: all(t in screen_text(app) for t in texts), pilot)
    await app.handler.wait_idle()
    cards = app.main.stream.query(StepCardView)
    await until(lambda: not any(card.header_pending for card in cards), pilot)
    await pilot.pause()


def test_no_server_then_a_request(snap_compare, rig: Rig) -> None:
    """No server at start, then a request: the notice stays (once), the request and its
    failure are in the Conversation panel, the status line says unreachable."""
    rig.server.stop()
    rig.configure(model={"base_url": CLOSED_PORT})
    app = rig.app()

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "What is 2+2?")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def _mid_stream(app: SootheApp, pilot: Pilot[Any], first: Pause, second: Pause) -> None:
    await ready(app, pilot)
    await send(app, pilot, "Read the README and write a haiku")
    await wait_event(first.reached, pilot)
    await wait_event(second.reached, pilot)
    await _shown(
        app, pilot, "The README describes a small", "Green checks at dawn, the fake server"
    )


def test_parallel_steps_mid_stream(snap_compare, rig: Rig) -> None:
    """Two steps of one goal streaming at once: one card each, S-01 with its tool call."""
    first, second = parallel_flow(rig.brain)
    app = rig.app()
    try:
        assert snap_compare(
            app, terminal_size=SIZE, run_before=lambda p: _mid_stream(app, p, first, second)
        )
    finally:
        first.release.set()
        second.release.set()


def _step_status(app: SootheApp, step_id: str) -> str:
    goal = app.main.goal_tree.goal("G1")
    return next((s.status for s in goal.steps if s.id == step_id), "") if goal else ""


def test_parallel_steps_done(snap_compare, rig: Rig) -> None:
    first, second = parallel_flow(rig.brain)
    app = rig.app()

    async def run_before(pilot: Pilot[Any]) -> None:
        await _mid_stream(app, pilot, first, second)
        first.release.set()  # one after the other: evidence lands in a fixed order
        await until(lambda: _step_status(app, "S-01") == "completed", pilot)
        second.release.set()
        await settle(app, pilot)

    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
    finally:
        first.release.set()
        second.release.set()


def test_approval_diff_over_an_existing_file(snap_compare, rig: Rig) -> None:
    """write_file over a file on disk: the dialog shows the diff and says it overwrites."""
    (rig.workspace / "notes.md").write_text("# Notes\n- buy milk\n- call Ana\n")
    rig.configure(tools={"approval": "ask"})
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Add the dentist to notes.md")))
    content = "# Notes\n- buy milk\n- call Ana\n- dentist on Friday\n"
    rig.brain.step(
        "S-01",
        FakeReply(
            tool_calls=[{"name": "write_file", "args": {"path": "notes.md", "content": content}}]
        ),
    )
    app = rig.app()

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "Add the dentist on Friday to notes.md")
        await until(lambda: app.screen is not app.main, pilot, timeout=20)
        await app.handler.wait_idle()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


def test_evidence_filtered_to_a_goal(snap_compare, rig: Rig) -> None:
    """Two goals with evidence; G1 selected in the tree: the panel shows G1's only."""
    readme_flow(rig.brain)
    # G2 asks for what its bootstrap evidence (the workspace listing) already holds: the
    # engine assesses it done without a plan
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", "The workspace holds README.md only.")
    app = rig.app()

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "Summarise README.md")
        await settle(app, pilot)
        await send(app, pilot, "List the workspace files")
        await settle(app, pilot)
        app.main.goal_tree.focus()
        app.main.goal_tree.show_ref(NodeRef("goal", "G1"))
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
    assert rig.brain.leftover() == {}  # the screen shows what the script meant


def test_reopened_thread(snap_compare, rig: Rig) -> None:
    """``soothe --thread t-0001`` after a goal ran: the request, the plan, both step cards
    (S-01's tool call and text), the answer, in the order they happened."""
    readme_flow(rig.brain)

    async def earlier() -> None:
        session = rig.session()
        await session.start()
        try:
            await session.run("Summarise README.md")
        finally:
            await session.close()

    asyncio.run(earlier())
    app = rig.app("t-0001")
    assert snap_compare(app, terminal_size=SIZE, run_before=lambda p: ready(app, p))


def test_multi_line_prompt(snap_compare, rig: Rig) -> None:
    """Three lines typed with ctrl+j between them: the prompt grows, nothing is sent."""
    app = rig.app()

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        app.prompt.focus()
        for index, line in enumerate(["Compare these files:", "- README.md", "- notes.md"]):
            if index:
                await pilot.press("ctrl+j")
            await pilot.press(*line)
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
