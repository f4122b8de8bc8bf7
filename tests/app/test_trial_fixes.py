"""Regression tests for the four fixes from the new-user trial (issue 13, commit 5a07b60).

Each test fails with its fix reverted. They run the real Session on the fake Ollama
server (tests/app/real_harness.py): in the app, in a ``soothe -p`` process killed
mid-step, or (the close test) without Textual; one is a ViewState unit test. Waits are on
state (``until``, ``settle``, a `Pause` holding a reply mid-stream), never a sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import subprocess
import sys
from typing import Any

from textual import events
from textual.pilot import Pilot

from soothe.app.main import SootheApp
from soothe.app.view_state import CONVERSATION, ViewState
from soothe.engine import events as ev
from soothe.engine.views import GoalView, StepView, ThreadSnapshot
from soothe.widgets.step_card import StepCardView
from soothe.widgets.stream_text import StreamText
from soothe.widgets.transcript import StepCard
from tests.app.real_harness import (
    MODEL,
    Pause,
    Rig,
    assess,
    classify,
    long_step_flow,
    plan,
    ready,
    send,
    settle,
    step,
    until,
    wait_event,
)
from tests.app.test_view_state import RecordingPort
from tests.fakes.brain import Brain

# --- 1. held arrow keys in the goal tree --------------------------------------------------


def one_step_goal(brain: Brain, n: int) -> None:
    """A goal with one step that answers at once."""
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01", f"Answer question {n}")))
    brain.step("S-01", f"Answer {n}.")
    brain.add("StatusAssessment", assess("done", progress="complete"))
    brain.add("complete", f"The answer to question {n}.")


async def test_down_pressed_ten_times_in_the_tree_settles_on_the_cursor(rig: Rig) -> None:
    """Each cursor move posts a StreamChosen; before the fix handling one moved the cursor
    back to its node, which posted another: the view switched between goals forever."""
    for n in range(1, 5):
        one_step_goal(rig.brain, n)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        for n in range(1, 5):
            await send(app, pilot, f"Question {n}")
            await settle(app, pilot)
        assert not rig.brain.unscripted, rig.brain.kinds()
        tree = app.main.goal_tree
        assert [tree.display_status(f"G{n}") for n in range(1, 5)] == ["completed"] * 4
        tree.focus()
        tree.move_cursor(tree.conversation)
        await settle(app, pilot)
        for _ in range(10):  # a held key: the terminal sends the repeats in one burst
            key = events.Key("down", None)
            key.set_sender(app)
            app._driver.send_message(key)  # as pilot.press does, without waiting between
        await settle(app, pilot)
        shown = app.handler.visible
        cursor = tree.selected_ref
        assert cursor.key == shown, (cursor, shown)
        assert cursor.kind != "conversation"  # the keys moved it
        seen = set()
        for _ in range(50):  # about a second
            await pilot.pause(0.02)
            seen.add((app.handler.visible, tree.selected_ref.key))
        assert seen == {(shown, shown)}, seen


# --- 2. pgup from the prompt mid-stream ---------------------------------------------------

ROWS = 120
HELD_AT = 80


def live_texts(app: SootheApp) -> list[StreamText]:
    return [t for view in app.main.stream.query(StepCardView) for t in view.query(StreamText)]


async def held_long_step(app: SootheApp, pilot: Pilot[Any], reply: Pause) -> StreamText:
    await ready(app, pilot)
    await send(app, pilot, "Write many rows")
    await wait_event(reply.reached, pilot)
    await until(lambda: any(t.line_count == HELD_AT for t in live_texts(app)), pilot)
    await app.handler.wait_idle()
    await pilot.pause()
    (text,) = live_texts(app)
    return text


async def test_pgup_from_the_prompt_mid_stream_stops_following_and_opens_the_box(
    rig: Rig,
) -> None:
    reply = long_step_flow(rig.brain, ROWS, HELD_AT)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        try:
            text = await held_long_step(app, pilot, reply)
            stream = app.main.stream
            assert text.tail_rows is not None and text.hidden_count > 0  # the hint row
            assert stream.follow
            assert app.focused is app.prompt
            await pilot.press("pageup")
            await pilot.pause()
            assert not stream.follow
            await until(lambda: text.tail_rows is None, pilot, timeout=5)
            assert text.line_count == HELD_AT and text.hidden_count == 0
            assert app.focused is app.prompt  # still typing
        finally:
            reply.release.set()
            await settle(app, pilot)
        assert not rig.brain.unscripted, rig.brain.kinds()


# --- 3. a reopened thread with a step left running ---------------------------------------


def held_step(brain: Brain) -> Pause:
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01", "Write a long answer")))
    reply = Pause(text="The first words of an answer that is never finished here.", after=4)
    brain.step("S-01", reply)
    return reply


async def test_quitting_mid_step_records_its_end_and_the_reopened_card_is_paused(
    rig: Rig,
) -> None:
    """Quitting the app mid-step: the engine suspends the step (the transcript has its
    end), so the reopened card is paused, with no live box."""
    reply = held_step(rig.brain)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Write a long answer")
        await wait_event(reply.reached, pilot)
        # the server has written the first words; wait until the step has them (a live
        # box is there before, empty, waiting for them)
        cards = app.handler.state.cards
        await until(lambda: "first words" in getattr(cards.get("G1/S-01"), "text", ""), pilot)
        await app.handler.wait_idle()
        thread = app.session.thread_id
        assert thread and app.handler.state.cards["G1/S-01"].status == "active"
    reply.release.set()  # the app ended while the reply was held
    records = await stored_events(rig, thread)
    of_step = [r["type"] for r in records if r.get("step_id") == "S-01"]
    assert of_step == ["step.started", "step.token", "step.suspended"], of_step

    reopened = rig.app(thread)
    async with reopened.run_test(size=(120, 40)) as pilot:
        await ready(reopened, pilot)
        card = reopened.handler.state.cards["G1/S-01"]
        assert card.status == "suspended" and "interrupted" in card.detail, card
        assert_no_live_box(reopened)


async def stored_events(rig: Rig, thread: str) -> list[dict[str, Any]]:
    """The thread's transcript as the store holds it (read beside a running session)."""
    session = rig.session(thread)
    await session.open_storage()
    try:
        return [r["event"] for r in await session.transcript(thread)]
    finally:
        await session.close()


def assert_no_live_box(app: SootheApp) -> None:
    texts = list(app.main.stream.query(StreamText))
    assert all(t.tail_rows is None for t in texts), [(t.tail_rows, t.placeholder) for t in texts]


async def test_a_process_killed_mid_step_reopens_with_the_step_interrupted(rig: Rig) -> None:
    """``soothe -p`` SIGKILLed while its step streams: the transcript has the step started
    and never ended. Reopened, its card says interrupted and has no live box."""
    reply = held_step(rig.brain)
    args = ["--provider", "ollama", "--base-url", rig.server.url, "--model", MODEL]
    args += ["--data-dir", str(rig.data_dir), "--workspace", str(rig.workspace)]
    child = subprocess.Popen(
        [sys.executable, "-m", "soothe", "-p", "Write a long answer", *args],
        cwd=rig.workspace,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        await until(reply.reached.is_set, timeout=30)
        thread = ""

        async def started() -> bool:
            nonlocal thread
            session = rig.session()
            await session.open_storage()
            try:
                threads = await session.list_threads()
                if not threads:
                    return False
                thread = threads[0].id
                records = [r["event"] for r in await session.transcript(thread)]
            finally:
                await session.close()
            return any(r["type"] == "step.started" for r in records)

        deadline = asyncio.get_running_loop().time() + 15
        while not await started():  # the recorder writes a burst 0.2 s after it
            assert asyncio.get_running_loop().time() < deadline, "step.started never stored"
            await asyncio.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        reply.release.set()
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)
    records = await stored_events(rig, thread)
    of_step = [r["type"] for r in records if r.get("step_id") == "S-01"]
    assert of_step == ["step.started"], of_step  # never ended

    reopened = rig.app(thread)
    async with reopened.run_test(size=(120, 40)) as pilot:
        await ready(reopened, pilot)
        (card,) = reopened.handler.state.cards.values()
        assert card.status == "suspended", card
        assert "interrupted" in card.detail, card
        assert_no_live_box(reopened)


def test_restore_settles_a_card_the_transcript_left_running_unless_the_store_runs_it() -> None:
    """The view model's side of the rule: the transcript started S1 and S2 and ended
    neither; the store holds S1 pending (its process died) and S2 active (running)."""
    stored = [
        ev.RunStarted(text="two steps", thread_id="t1"),
        ev.GoalCreated(description="two steps", thread_id="t1", goal_id="G1"),
        ev.StepStarted(description="First", thread_id="t1", goal_id="G1", step_id="S1"),
        ev.StepToken(text="half ", thread_id="t1", goal_id="G1", step_id="S1"),
        ev.StepStarted(description="Second", thread_id="t1", goal_id="G1", step_id="S2"),
    ]
    steps = [StepView(id="S1", status="pending"), StepView(id="S2", status="active")]
    goal = GoalView(id="G1", description="two steps", status="active", steps=steps)
    port = RecordingPort()
    state = ViewState(port)
    state.restore(ThreadSnapshot(thread_id="t1", goals=[goal]), [(e, 1, 0) for e in stored])
    first, second = state.cards["G1/S1"], state.cards["G1/S2"]
    assert (first.status, first.detail) == (
        "suspended",
        "interrupted: the process ended during this step",
    )
    assert second.status == "active" and not second.detail
    cards = [b for b in state.view(CONVERSATION).segments if isinstance(b, StepCard)]
    assert [c.status for c in cards] == ["suspended", "active"]


# --- 4. closing the session mid-run ---------------------------------------------------------


async def test_close_while_an_interrupt_writes_waits_for_the_goal_to_be_suspended(
    rig: Rig,
) -> None:
    """Quit mid-run: the run is cancelled (the app's worker) and, while its interrupt is
    suspending the goal, the session closes (which cancels the run again). Before the fix
    the second cancel let close run on and close the store under those writes (ContextError)
    and the goal stayed active. The store here is slow to write the suspend: it waits
    until the store is closed, at most 1 s (the fix's close waits for it meanwhile)."""
    reply = held_step(rig.brain)
    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    session = rig.session()
    try:
        await session.start()
        context = session.context
        closed = asyncio.Event()
        close_store, suspend_goal = context.close, context.suspend_goal

        async def close_then_say() -> None:
            await close_store()
            closed.set()

        async def slow_suspend(goal_id: str, reason: str = "") -> Any:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(closed.wait(), 1.0)
            return await suspend_goal(goal_id, reason=reason)

        context.close = close_then_say  # type: ignore[method-assign]
        context.suspend_goal = slow_suspend  # type: ignore[method-assign]
        interrupted = asyncio.Event()
        session.bus.add_listener(
            lambda e: interrupted.set() if getattr(e, "kind", "") == "interrupted" else None
        )
        run = asyncio.ensure_future(session.run("Write a long answer"))
        await until(reply.reached.is_set, timeout=15)
        thread = session.thread_id
        assert thread
        run.cancel()
        await asyncio.wait_for(interrupted.wait(), 5)  # its suspend is being written
        await session.close()
        assert run.cancelled()
        gc.collect()  # a failed task nobody awaited reports its error when collected
        await asyncio.sleep(0)
    finally:
        reply.release.set()
        loop.set_exception_handler(previous)
    assert not errors, errors
    again = rig.session(thread)
    await again.open_storage()
    try:
        (goal,) = again.context.list_goals(thread_id=thread)
        assert goal.status == "suspended", goal
    finally:
        await again.close()
