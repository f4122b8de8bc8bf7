"""Reopen is what you saw (issue 32, item 2), on the real Session and the fake Ollama:
a goal's answer that is a step's own text shows live, when the step is selected and after
reopening; an undo done in the app is a stored event the reopened thread shows; token
totals and the last run's time come back; the live screen and the reopened one have the
same rows for a step-answer goal, an undone edit and a faulted run."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import pytest

from soothe.app.main import SootheApp
from soothe.app.screens.dialogs import ConfirmDialog
from soothe.widgets.status_line import StatusInfo
from tests.app.real_harness import (
    Rig,
    assess,
    classify,
    panel,
    plan,
    ready,
    screen_text,
    send,
    settle,
    step,
    until,
)
from tests.fakes import FakeReply

SIZE = (140, 44)
ANSWER = "Soothe is a terminal workbench for goal-driven agents, run locally."


def step_answer_flow(rig: Rig) -> None:
    """S-01 reads README.md; S-02's own text is the goal's final answer."""
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add(
        "PlanGeneration",
        plan(step("S-01", "Read README.md"), step("S-02", "Write the summary", ["S-01"])),
    )
    rig.brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "README.md"}}]),
        "README.md says Soothe is a terminal workbench.",
    )
    rig.brain.step("S-02", ANSWER)
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", ANSWER)


def joined(rows: list[str]) -> str:
    """The rows' words in one line (an answer wraps over rows)."""
    return " ".join(" ".join(row.replace("▌", " ").split()) for row in rows)


def conversation(app: SootheApp) -> list[str]:
    return panel(screen_text(app), "Conversation")


def status(app: SootheApp) -> tuple[int, int, float | None]:
    """What the status line says of the thread: tokens in, out, the last run's time."""
    info: StatusInfo = app.main.status.info
    return info.tokens_in, info.tokens_out, info.elapsed


async def reopen(rig: Rig, thread: str) -> tuple[list[str], tuple[int, int, float | None]]:
    """The conversation and the status line's counts of ``thread`` reopened in a new app."""
    app = rig.app(thread)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        return conversation(app), status(app)


async def select(app: SootheApp, pilot: Any, key: str) -> list[str]:
    app.handler.select(app.handler.ref_of(key))
    await settle(app, pilot)
    title = app.handler.state.view(key).title
    return panel(screen_text(app), title.split(" ·")[0])


async def test_a_step_answer_shows_live_when_selected_and_after_reopen(rig: Rig) -> None:
    step_answer_flow(rig)
    app = rig.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Summarise README.md")
        await settle(app, pilot)
        live, counts = conversation(app), status(app)
        selected = await select(app, pilot, "G1/S-02")
        thread = app.session.thread_id
        stored = [row["event"]["type"] for row in await app.session.transcript(thread)]
    # the run's 7 model calls are one usage record, just before the run's end
    assert stored.count("usage") == 1 and stored[-2:] == ["usage", "run.finished"], stored
    assert joined(live).count(ANSWER) == 1, "\n".join(live)
    assert ANSWER in joined(selected), "\n".join(selected)
    reopened = rig.app(thread)
    async with reopened.run_test(size=SIZE) as pilot:
        await ready(reopened, pilot)
        again, counts_again = conversation(reopened), status(reopened)
        selected_again = await select(reopened, pilot, "G1/S-02")
    assert again == live, "\n".join(again)
    assert counts_again == counts and counts[0] > 0
    assert selected_again == selected, "\n".join(selected_again)


def write_flow(rig: Rig) -> None:
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "rewrite the README")))
    rig.brain.step(
        "S-01",
        FakeReply(
            tool_calls=[{"name": "write_file", "args": {"path": "README.md", "content": "x\n"}}]
        ),
        "Rewrote the README.",
    )
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", "The README is rewritten.")


async def test_an_undo_in_the_app_is_kept_with_the_thread(rig: Rig) -> None:
    write_flow(rig)
    app = rig.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Rewrite the README")
        await settle(app, pilot)
        await send(app, pilot, "/undo")
        await until(lambda: isinstance(app.screen, ConfirmDialog), pilot)
        await pilot.press("y")
        await until(lambda: "README.md" in joined(conversation(app)).partition("undo")[2], pilot)
        await settle(app, pilot)
        live, counts = conversation(app), status(app)
        thread = app.session.thread_id
    assert "undo: put back what the last run changed restored README.md" in joined(live), "\n".join(
        live
    )
    assert counts[0] > 0 and counts[1] > 0, counts  # the fake server counts tokens
    again, counts_again = await reopen(rig, thread)
    assert again == live, "\n".join(again)
    assert counts_again == counts


async def test_soothe_undo_on_the_command_line_is_kept_with_the_thread(rig: Rig) -> None:
    """`soothe undo` (no app running) puts the file back and leaves the same record the
    app's /undo leaves: the reopened thread shows it."""
    from soothe.frontends.undo_cli import run_undo

    write_flow(rig)
    app = rig.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Rewrite the README")
        await settle(app, pilot)
        thread = app.session.thread_id
    assert (rig.workspace / "README.md").read_text() == "x\n"
    undo = partial(run_undo, rig.settings, thread=None, all_runs=False, step=None)
    code = await asyncio.to_thread(undo, list_only=False, force=False)
    assert code == 0 and (rig.workspace / "README.md").read_text() != "x\n"
    again, _counts = await reopen(rig, thread)
    assert "undo: put back what the last run changed restored README.md" in joined(again), (
        "\n".join(again)
    )


def faulted_flow(rig: Rig) -> None:
    """A structured call broken mid-stream (asked again), a step whose stream ends in an
    error (failed; the loop plans again), then a completion whose connection drops (the
    run fails, the goal waits for a resume)."""
    rig.brain.add(
        "Classification",
        FakeReply(text='{"label": "sim', error="CUDA error: out of memory"),
        classify("simple"),
    )
    rig.brain.add("PlanGeneration", plan(step("S-01", "list the files")))
    rig.brain.step("S-01", FakeReply(text="Let me look", error="CUDA error: out of memory"))
    rig.brain.add("StatusAssessment", assess("replan", progress="none"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "list the files again")))
    rig.brain.add("step", "There are two files.")
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", FakeReply(text="The folder has", drop=True))


async def test_a_faulted_run_reopens_as_it_was_shown(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("soothe.engine.llm.hub.ModelHub.backoff_s", 0.01)  # as tests/faults
    faulted_flow(rig)
    app = rig.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "list the files")
        await settle(app, pilot)
        live, counts = conversation(app), status(app)
        thread = app.session.thread_id
    text = joined(live)
    assert "out of memory" in text and "run failed" in text, "\n".join(live)
    again, counts_again = await reopen(rig, thread)
    assert again == live, "\n".join(again)
    assert counts_again == counts and counts[0] > 0


async def test_with_two_goals_running_their_lines_name_them(rig: Rig) -> None:
    """Issue 32 item 9 on the real engine: two pending goals run at once (ctrl+r,
    loop.max_parallel_goals 2): each plan line in the conversation starts with its goal's
    id, the goal's own view shows it as before, and the reopened thread the same."""
    for _ in range(2):
        rig.brain.add("PlanGeneration", plan(step("S-01", "Write the note")))
        rig.brain.step("S-01", "The note is written.")
        rig.brain.add("StatusAssessment", assess("done", progress="complete"))
        rig.brain.add("complete", "The note is written.")
    app = rig.app()
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "/goal Write the first note")
        await send(app, pilot, "/goal Write the second note")
        await until(lambda: {"G1", "G2"} <= set(app.handler.goals), pilot)
        app.action_run_goals()
        await settle(app, pilot)
        assert {g.status for g in app.handler.goals.values()} == {"completed"}
        live = conversation(app)
        own = await select(app, pilot, "G2")
        thread = app.session.thread_id
    text = joined(live)
    assert "G1 plan · iteration 1 · 1 step" in text and "G2 plan · iteration 1" in text, text
    assert any(row.strip().startswith("◇ plan · iteration 1") for row in own), "\n".join(own)
    again, _ = await reopen(rig, thread)
    assert again == live, "\n".join(again)
