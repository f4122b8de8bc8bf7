"""Submitting requests on the real Session (fake Ollama): answers, the live tree and
stream, errors, interrupt, export, slash commands."""

from __future__ import annotations

import json
from typing import Any

from textual.widgets import Markdown

from soothe.engine import events as ev
from soothe.widgets.goal_tree import NodeRef
from soothe.widgets.stream_text import StreamText
from soothe.widgets.tool_call import ToolCallBlock
from tests.app.conftest import type_text
from tests.app.real_harness import (
    Pause,
    Rig,
    assess,
    classify,
    plan,
    quiz,
    readme_flow,
    ready,
    send,
    settle,
    step,
    until,
    wait_event,
)
from tests.fakes import FakeHTTPError, FakeReply


def _markdown_text(app: Any) -> list[str]:
    return [md.source for md in app.main.stream.query(Markdown)]


def _runs(app: Any) -> list[tuple[str, str]]:
    """(text, mode) of every run the real Session starts from now on."""
    runs: list[tuple[str, str]] = []
    app.session.bus.add_listener(
        lambda e: runs.append((e.text, e.mode)) if isinstance(e, ev.RunStarted) else None
    )
    return runs


async def test_submit_a_request_and_see_the_answer(rig: Rig) -> None:
    reply = json.dumps(classify("quiz", "2 + 2 is 4."))
    rig.brain.add("Classification", FakeReply(text=reply, usage=(120, 12)))
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        runs = _runs(app)
        await type_text(pilot, "What is 2+2?")
        await pilot.press("enter")
        await settle(app, pilot)
        assert runs == [("What is 2+2?", "auto")]
        assert "What is 2+2?" in rig.brain.user_prompts("Classification")[0]
        assert _markdown_text(app) == ["2 + 2 is 4."]
        assert app.prompt.value == ""
        status = app.main.status.info
        assert (status.tokens_in, status.tokens_out, status.running) == (120, 12, False)
        assert app.handler.answers[""] == "2 + 2 is 4."


async def test_agentic_run_fills_tree_stream_and_evidence(rig: Rig) -> None:
    readme_flow(rig.brain, final="**Soothe** is a terminal workbench for goal-driven agents.")
    app = rig.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Summarise the README")
        await settle(app, pilot)
        assert not rig.brain.unscripted, rig.brain.kinds()
        tree = app.main.goal_tree
        goal = tree.goal("G1")
        assert goal is not None and goal.status == "completed"
        assert [(s.id, s.status) for s in goal.steps] == [
            ("S-01", "completed"),
            ("S-02", "completed"),
        ]
        assert any("read_file" in e.summary for e in app.main.evidence.entries.values())
        assert _markdown_text(app) == ["**Soothe** is a terminal workbench for goal-driven agents."]
        texts = [block.text for block in app.main.stream.query(StreamText)]
        s1_text = "README.md says Soothe is a terminal workbench for goal-driven agents."
        s2_text = "Soothe is a terminal workbench for goal-driven agents, run locally."
        assert texts == [s1_text, s2_text]
        assert app.main.status.info.iteration == 1
        assert app.main.status.info.max_iterations == rig.settings.loop.max_iterations

        # selecting a step shows only that step: the tool call of S-01, no answer
        tree.show_ref(NodeRef("step", "G1", "S-01"))
        # the swap of the stream's widgets lands over a few frames (slower under load)
        await until(lambda: app.main.stream.key == "G1/S-01", pilot)
        await until(lambda: len(list(app.main.stream.query(ToolCallBlock))) == 1, pilot)
        assert app.main.stream.border_title == "G1 › S-01 · Read README.md"
        blocks = list(app.main.stream.query(ToolCallBlock))
        assert len(blocks) == 1 and blocks[0].collapsed
        assert [b.text for b in app.main.stream.query(StreamText)] == [s1_text]
        assert not list(app.main.stream.query(Markdown))
        # and the step S-02 shows its streamed text only
        tree.show_ref(NodeRef("step", "G1", "S-02"))
        await until(lambda: app.main.stream.key == "G1/S-02", pilot)
        await until(lambda: not list(app.main.stream.query(ToolCallBlock)), pilot)
        assert [b.text for b in app.main.stream.query(StreamText)] == [s2_text]
        assert not list(app.main.stream.query(ToolCallBlock))


async def test_only_the_visible_stream_renders_live(rig: Rig) -> None:
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add(
        "PlanGeneration",
        plan(step("S-01", "Read README.md"), step("S-02", "Write the summary", ["S-01"])),
    )
    rig.brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "README.md"}}]),
        "Read it.",
    )
    held = Pause(text="Soothe is a terminal workbench for goal-driven agents.", after=2)
    rig.brain.step("S-02", held)
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", "Soothe is a terminal workbench.")
    app = rig.app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "go")
        await until(lambda: app.main.goal_tree.goal("G1") is not None, pilot)
        await wait_event(held.reached, pilot)
        # The user picks S-01 while S-02 is held mid-stream (once the run's earlier events
        # are on screen: under load they can land after an earlier pick and move the view).
        await until(lambda: app.main.goal_tree.node_for(NodeRef("step", "G1", "S-01")), pilot)
        app.handler.select(NodeRef("step", "G1", "S-01"))
        await pilot.pause()
        assert app.main.stream.key == "G1/S-01"
        held.release.set()
        await settle(app, pilot)
        # S-02 streamed while S-01 was on screen: nothing of it was mounted
        assert app.main.stream.key == "G1/S-01"
        assert [b.text for b in app.main.stream.query(StreamText)] == ["Read it."]
        # but switching shows the whole S-02 text
        app.main.goal_tree.show_ref(NodeRef("step", "G1", "S-02"))
        await until(lambda: app.main.stream.key == "G1/S-02", pilot)
        await pilot.pause()
        assert [b.text for b in app.main.stream.query(StreamText)] == [
            "Soothe is a terminal workbench for goal-driven agents."
        ]


async def test_engine_error_is_shown_and_the_app_survives(rig: Rig) -> None:
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Read nope.txt")))
    rig.brain.step(
        "S-01", FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "nope.txt"}}])
    )
    rig.brain.always["step:S-01"] = FakeHTTPError(500, "model exploded")
    rig.brain.always["StatusAssessment"] = FakeHTTPError(500, "model exploded")
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "boom")
        await settle(app, pilot)
        notes = [(n.title, n.message) for n in app._notifications]
        assert any(t == "Tool read_file failed" and "nope.txt" in m for t, m in notes), notes
        assert any("model exploded" in message for _, message in notes)
        block = app.main.stream.query_one(ToolCallBlock)
        assert "✗" in str(block.title)
        stream_text = " ".join(str(w.render()) for w in app.main.stream.query(".note"))
        assert "model exploded" in stream_text
        assert app.is_running and not app.main.status.info.running
        # the next request still works
        quiz(rig.brain, "fine")
        await send(app, pilot, "again")
        await settle(app, pilot)
        assert "fine" in _markdown_text(app)


async def test_escape_interrupts_the_run(rig: Rig) -> None:
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Write a long text")))
    held = Pause(text="A long text " * 20, after=2)
    rig.brain.step("S-01", held)
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "long job")
        await wait_event(held.reached, pilot)
        await app.handler.wait_idle()
        await pilot.pause()
        assert app.check_action("interrupt", ()) is True
        await pilot.press("escape")
        held.release.set()  # the client has hung up; the server thread may finish
        await settle(app, pilot)
        assert app.session.context.get_goal("G1").status == "suspended"
        assert app.check_action("interrupt", ()) is False
        assert not app.main.status.info.running
        notes = [str(w.render()) for w in app.main.stream.query(".note")]
        assert sum(n.endswith("interrupted") for n in notes) == 1  # the engine's, once
        assert notes[-1].endswith("G1 suspended: interrupted by the user")
        # escape with nothing running does nothing harmful
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running


async def test_export_writes_markdown(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "/goal Write the docs")
        await settle(app, pilot)
        thread = app.session.thread_id
        await send(app, pilot, "/export")
        await settle(app, pilot)
        exported = rig.data_dir / "exports" / f"soothe-{thread}.md"
        await until(exported.exists, pilot)
        assert exported.read_text() == (
            "# Write the docs\n\nThread `t-0001` · started 2025-03-03 08:00\n\n"
            "## Goals\n\n### ○ G1 — Write the docs\n\nstatus: pending · priority: 50\n"
        )
        assert not list(rig.workspace.glob("soothe-*.md"))  # not in the workspace
        assert any(str(exported) in n.message for n in app._notifications)


def _autonomous(rig: Rig, goal: str) -> None:
    rig.brain.add("GoalDecomposition", {"subgoals": [{"key": "A", "description": goal}]})
    rig.brain.add("PlanGeneration", plan(step("S-01", goal)))
    rig.brain.step("S-01", "Tidied.")
    rig.brain.always["StatusAssessment"] = assess("done", progress="complete")
    rig.brain.always["complete"] = "Tidied."


async def test_slash_commands_and_prompt_history(rig: Rig) -> None:
    _autonomous(rig, "Tidy the repo")
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        runs = _runs(app)
        await send(app, pilot, "/autonomous Tidy the repo")
        await settle(app, pilot)
        assert runs == [("Tidy the repo", "autonomous")]
        assert rig.brain.count("GoalDecomposition") == 1
        quiz(rig.brain, "reviewed")
        await send(app, pilot, "/skill:review src/")
        await settle(app, pilot)
        assert runs[-1] == ("/skill:review src/", "auto")
        await send(app, pilot, "/nope")
        await send(app, pilot, "/goal")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any("unknown command /nope" in m for m in messages)
        assert any("usage: /goal TEXT" in m for m in messages)
        assert len(runs) == 2  # neither reached the engine
        # history: up recalls, down returns to the draft
        app.prompt.value = "dra"
        await pilot.press("up")
        assert app.prompt.value == "/goal"
        await pilot.press("up", "up")
        assert app.prompt.value == "/skill:review src/"
        await pilot.press("down", "down", "down")
        assert app.prompt.value == "dra"
        # completion: /th -> /theme, tab accepts
        app.prompt.value = "/th"  # as typed: the suggester runs on every change
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("tab")
        assert app.prompt.value == "/theme "
        app.prompt.value = "/theme soothe-l"
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("tab")
        assert app.prompt.value == "/theme soothe-light"
        await pilot.press("enter")
        await pilot.pause()
        assert app.theme == "soothe-light"
