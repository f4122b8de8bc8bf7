"""Submitting requests: answers, the live tree and stream, errors, interrupt, export."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Markdown

from soothe.engine import events as ev
from soothe.widgets.goal_tree import NodeRef
from soothe.widgets.stream_text import StreamText
from soothe.widgets.tool_call import ToolCallBlock
from tests.app.conftest import settle, submit, type_text
from tests.app.fake_session import Fail, FakeSession, Gate, answer_script
from tests.app.scripts import agentic_script


def _markdown_text(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [md.source for md in app.main.stream.query(Markdown)]


async def test_submit_a_request_and_see_the_answer(make_app, session: FakeSession) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await type_text(pilot, "What is 2+2?")
        await pilot.press("enter")
        await settle(app, pilot)
        assert session.calls[-1] == ("run", ("What is 2+2?", False))
        assert _markdown_text(app) == ["echo: What is 2+2?"]
        assert app.prompt.value == ""
        status = app.main.status.info
        assert (status.tokens_in, status.tokens_out, status.running) == (120, 12, False)
        assert app.handler.answers[""] == "echo: What is 2+2?"


async def test_agentic_run_fills_tree_stream_and_evidence(make_app, session: FakeSession) -> None:
    session.script = lambda text, auto: agentic_script()
    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "Summarise the README")
        await settle(app, pilot)
        tree = app.main.goal_tree
        goal = tree.goal("G1")
        assert goal is not None and goal.status == "completed"
        assert [(s.id, s.status) for s in goal.steps] == [("S1", "completed"), ("S2", "completed")]
        assert "E1" in app.main.evidence.entries
        assert _markdown_text(app) == ["**Soothe** is a terminal workbench for goal-driven agents."]
        texts = [block.text for block in app.main.stream.query(StreamText)]
        assert texts == ["Soothe is a terminal workbench for goal-driven agents."]
        assert app.main.status.info.iteration == 1
        assert app.main.status.info.max_iterations == 8

        # selecting a step shows only that step: the tool call of S1, no answer
        tree.show_ref(NodeRef("step", "G1", "S1"))
        await pilot.pause()
        assert app.main.stream.key == "G1/S1"
        assert app.main.stream.border_title == "G1 › S1 · Read README.md"
        blocks = list(app.main.stream.query(ToolCallBlock))
        assert len(blocks) == 1 and blocks[0].collapsed
        assert not list(app.main.stream.query(Markdown))
        # and the step S2 shows its streamed text only
        tree.show_ref(NodeRef("step", "G1", "S2"))
        await pilot.pause()
        assert [b.text for b in app.main.stream.query(StreamText)] == texts
        assert not list(app.main.stream.query(ToolCallBlock))


async def test_only_the_visible_stream_renders_live(make_app, session: FakeSession) -> None:
    gate = Gate()
    session.script = lambda text, auto: agentic_script(gate)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "go")
        await gate.reached.wait()
        await app.handler.wait_idle()
        await pilot.pause()
        app.main.goal_tree.show_ref(NodeRef("step", "G1", "S1"))
        await pilot.pause()
        gate.open()
        await settle(app, pilot)
        # S2 streamed while S1 was on screen: nothing of it was mounted
        assert app.main.stream.key == "G1/S1"
        assert not list(app.main.stream.query(StreamText))
        # but switching shows the whole S2 text
        app.main.goal_tree.show_ref(NodeRef("step", "G1", "S2"))
        await pilot.pause()
        assert [b.text for b in app.main.stream.query(StreamText)] == [
            "Soothe is a terminal workbench for goal-driven agents."
        ]


async def test_engine_error_is_shown_and_the_app_survives(make_app, session: FakeSession) -> None:
    session.script = lambda text, auto: [
        ev.ToolCalled(
            goal_id="G1", step_id="S1", call_id="c9", tool="read_file", args={"path": "nope.txt"}
        ),
        ev.ToolResult(
            goal_id="G1",
            step_id="S1",
            call_id="c9",
            tool="read_file",
            output="error: no such file: nope.txt",
            ok=False,
        ),
        Fail(RuntimeError("model exploded")),
    ]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "boom")
        await settle(app, pilot)
        notes = [(n.title, n.message) for n in app._notifications]
        assert ("Tool read_file failed", "error: no such file: nope.txt") in notes
        assert any("model exploded" in message for _, message in notes)
        block = app.main.stream.query_one(ToolCallBlock)
        assert "✗" in str(block.title)
        stream_text = " ".join(str(w.render()) for w in app.main.stream.query(".note"))
        assert "model exploded" in stream_text
        assert app.is_running and not app.main.status.info.running
        # the next request still works
        session.script = lambda text, auto: answer_script("fine")
        await submit(app, pilot, "again")
        await settle(app, pilot)
        assert "fine" in _markdown_text(app)


async def test_escape_interrupts_the_run(make_app, session: FakeSession) -> None:
    gate = Gate()
    session.script = lambda text, auto: agentic_script(gate)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "long job")
        await gate.reached.wait()
        await app.handler.wait_idle()
        await pilot.pause()
        assert app.check_action("interrupt", ()) is True
        await pilot.press("escape")
        await settle(app, pilot)
        assert session.interrupted
        assert app.check_action("interrupt", ()) is False
        assert not app.main.status.info.running
        notes = [str(w.render()) for w in app.main.stream.query(".note")]
        assert notes[-1].endswith("interrupted")
        # escape with nothing running does nothing harmful
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running


async def test_export_writes_markdown(make_app, session: FakeSession, tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "/goal Write the docs")
        await settle(app, pilot)
        await submit(app, pilot, "/export")
        await settle(app, pilot)
        exported = tmp_path / "data" / "exports" / "soothe-t-0001.md"
        assert exported.read_text() == "# Thread t-0001\n\n- G1 [pending] Write the docs\n"
        assert not list(tmp_path.glob("soothe-*.md"))  # not in the workspace
        assert any(str(exported) in n.message for n in app._notifications)


async def test_slash_commands_and_prompt_history(make_app, session: FakeSession) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "/autonomous Tidy the repo")
        await settle(app, pilot)
        assert ("run", ("Tidy the repo", True)) in session.calls
        await submit(app, pilot, "/skill:review src/")
        await settle(app, pilot)
        assert ("run", ("/skill:review src/", False)) in session.calls
        await submit(app, pilot, "/nope")
        await submit(app, pilot, "/goal")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any("unknown command /nope" in m for m in messages)
        assert any("usage: /goal TEXT" in m for m in messages)
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
