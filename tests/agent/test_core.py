"""CoreAgent with a scripted model behind the real ModelHub."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage

from soothe.engine.agent.core import CoreAgent, compact_tool_history
from soothe.engine.agent.tools import TOOLS, ToolContextFactory
from soothe.engine.bus import EventBus
from soothe.engine.config import Settings
from soothe.engine.events import StepToken, ToolCalled, ToolResult, Usage
from soothe.engine.interact import InteractBroker
from soothe.engine.llm.hub import ModelHub
from soothe.engine.llm.scripted import ScriptedChatModel, ScriptedReply
from soothe.engine.scope import Scope
from tests.agent.helpers import IDS, Recorder, running, unique_sleep, wait_for_file, wait_gone


def build(
    ws: Path, model: ScriptedChatModel, *, approval: str = "auto", budget: int = 8
) -> tuple[CoreAgent, EventBus, InteractBroker]:
    settings = Settings()
    settings.tools.workspace = ws
    settings.tools.approval = approval  # type: ignore[assignment]
    settings.loop.step_tool_budget = budget
    bus = EventBus()
    broker = InteractBroker(bus)
    hub = ModelHub(settings.model, bus, models={"default": model})
    factory = ToolContextFactory(settings, broker=broker, bus=bus, approval_timeout=2.0)
    return CoreAgent(hub, factory, settings, bus), bus, broker


async def run(agent: CoreAgent, **kw: Any):  # type: ignore[no-untyped-def]
    args = {
        "goal": "Understand the demo project",
        "step_id": "S-01",
        "description": "Read the README",
        "expected_output": "What the project is",
        "context_text": "Goal g1: understand the demo project (active)",
        "evidence_text": "E1: the workspace has README.md",
        "scope": Scope(**IDS),
    }
    args.update(kw)
    return await agent.run_step(**args)


def tool_reply(name: str, args: Any, call_id: str = "c1", text: str = "") -> ScriptedReply:
    return ScriptedReply(text=text, tool_calls=[{"name": name, "args": args, "id": call_id}])


async def test_text_only_answer(ws: Path) -> None:
    model = ScriptedChatModel(script=["It is a small demo project."])
    agent, bus, _ = build(ws, model)
    rec = Recorder(bus)
    out = await run(agent)
    assert out.ok and out.answer == "It is a small demo project."
    assert out.model_calls == 1 and out.tool_outcomes == [] and out.error is None
    tokens = rec.of(StepToken)
    assert "".join(t.text for t in tokens) == out.answer
    assert all(t.step_id == "s1" and t.goal_id == "g1" for t in tokens)
    assert len(rec.of(Usage)) == 1
    sent = model.calls[0]
    assert sent.streamed and sent.tool_names == list(TOOLS)
    system, human = sent.messages
    assert isinstance(system, SystemMessage) and isinstance(human, HumanMessage)
    assert str(ws.resolve()) in system.content and "read_file" in system.content
    for piece in (
        "Goal: Understand the demo project",
        "Step S-01: Read the README",
        "Expected output: What the project is",
        "Goal g1: understand the demo project (active)",
        "E1: the workspace has README.md",
    ):
        assert piece in human.content


async def test_one_tool_call_then_answer(ws: Path) -> None:
    model = ScriptedChatModel(
        script=[
            tool_reply("read_file", {"path": "README.md"}, text="Let me look. "),
            "The README says: a small project.",
        ]
    )
    agent, bus, _ = build(ws, model)
    rec = Recorder(bus)
    out = await run(agent)
    assert out.ok and out.answer == "The README says: a small project."
    assert out.model_calls == 2
    [tool] = out.tool_outcomes
    assert tool.tool == "read_file" and tool.ok and "A small project." in tool.output
    kinds = [type(e) for e in rec.events if not isinstance(e, Usage)]
    called = kinds.index(ToolCalled)
    result = kinds.index(ToolResult)
    assert StepToken in kinds[:called]  # "Let me look." streamed before the call
    assert called < result
    final_tokens = [
        e for e in rec.events[rec.events.index(rec.of(ToolResult)[0]) :] if isinstance(e, StepToken)
    ]
    assert "".join(t.text for t in final_tokens) == out.answer
    second = model.calls[1].messages
    tool_msg = second[-1]
    assert isinstance(tool_msg, ToolMessage)
    assert tool_msg.tool_call_id == "c1" and "A small project." in tool_msg.content
    assert second[-2].tool_calls[0]["id"] == "c1"


async def test_budget_exhaustion_forces_an_answer(ws: Path) -> None:
    def respond(messages: list[Any], info: dict[str, Any]) -> Any:
        if info["tool_names"]:
            n = info["index"]
            return tool_reply("list_dir", {"path": [".", "docs", "src"][n % 3]}, call_id=f"c{n}")
        return "Out of budget; the project has README.md, docs and src."

    model = ScriptedChatModel(responder=respond)
    agent, _, _ = build(ws, model, budget=2)
    out = await run(agent)
    assert out.ok and out.answer.startswith("Out of budget")
    assert len(out.tool_outcomes) == 2
    assert out.model_calls == 3
    last = model.calls[-1]
    assert last.tool_names == []
    assert "used all 2 tool calls" in last.messages[-1].content


async def test_extra_calls_in_one_reply_beyond_budget_are_not_run(ws: Path) -> None:
    calls = [
        {"name": "list_dir", "args": {"path": p}, "id": f"c{i}"}
        for i, p in enumerate([".", "docs", "src"])
    ]
    model = ScriptedChatModel(script=[ScriptedReply(tool_calls=calls), "done"])
    agent, _, _ = build(ws, model, budget=2)
    out = await run(agent)
    assert out.ok and len(out.tool_outcomes) == 2
    tool_msgs = [m for m in model.calls[1].messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in tool_msgs] == ["c0", "c1", "c2"]
    assert "budget is spent" in tool_msgs[2].content
    assert model.calls[1].tool_names == []  # budget spent: the answer is asked without tools


async def test_bad_calls_are_reported_to_the_model(ws: Path) -> None:
    model = ScriptedChatModel(
        script=[
            ScriptedReply(
                tool_calls=[
                    {"name": "delete_all", "args": {"x": 1}, "id": "a"},
                    {"name": "read_file", "args": "not json at all", "id": "b"},
                    {"name": "read_file", "args": '{"pa', "id": "d"},
                    {"name": "read_file", "args": {"path": 5}, "id": "c"},
                ]
            ),
            "I could not read anything.",
        ]
    )
    agent, bus, _ = build(ws, model)
    rec = Recorder(bus)
    out = await run(agent)
    assert out.ok
    assert [o.ok for o in out.tool_outcomes] == [False] * 4
    by_id = {
        m.tool_call_id: m.content for m in model.calls[1].messages if isinstance(m, ToolMessage)
    }
    assert by_id["a"].startswith("unknown tool 'delete_all'; available:")
    # Said by run_tool_call, or passed on from the model layer's parse error.
    assert by_id["b"].startswith(("arguments must be a JSON object", "invalid arguments"))
    assert "invalid arguments for read_file" in by_id["c"]
    assert by_id["d"].startswith("invalid arguments for read_file: ")
    assert by_id["d"].endswith("Expected: read_file(path, offset?, limit?)")
    assert len(rec.of(ToolCalled)) == len(rec.of(ToolResult)) == 4


async def test_transport_error_fails_the_step(ws: Path) -> None:
    model = ScriptedChatModel(
        script=[tool_reply("list_dir", {}), ConnectionRefusedError("connection refused")]
    )
    agent, _, _ = build(ws, model)
    out = await run(agent)
    assert not out.ok and out.answer == ""
    assert out.error is not None and "cannot reach Ollama" in out.error
    assert "\n" not in out.error
    assert len(out.tool_outcomes) == 1 and out.model_calls == 2


async def test_empty_answer_is_not_ok(ws: Path) -> None:
    model = ScriptedChatModel(script=["   ", ""])
    agent, _, _ = build(ws, model)
    out = await run(agent)
    assert not out.ok and out.error == "the model returned an empty answer"
    assert out.no_answer == "empty answer" and out.model_calls == 2
    # The second ask is the compact facts-and-question prompt, without tools.
    [only] = model.calls[1].messages
    assert model.calls[1].tool_names == []
    assert "Step S-01: Read the README\n\nWanted: What the project is" in only.content


async def test_cancellation_mid_stream_stops_quickly(ws: Path) -> None:
    text = "word " * 400
    model = ScriptedChatModel(script=[ScriptedReply(text=text, chunk_delay=0.02)])
    agent, bus, _ = build(ws, model)
    sub = bus.subscribe("*")
    task = asyncio.create_task(run(agent))
    while not isinstance(await asyncio.wait_for(sub.get(), 5), StepToken):
        pass
    loop = asyncio.get_running_loop()
    start = loop.time()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 1.0)
    assert loop.time() - start < 1.0
    streamed = "".join(e.text for e in sub.drain() if isinstance(e, StepToken))
    assert len(streamed) < len(text) // 2
    sub.close()


async def test_cancellation_kills_a_running_shell(ws: Path) -> None:
    """Cancelling the step (Esc, Ctrl+C) ends its command and what the command started,
    one that left its session (``setsid``) included."""
    sleep, escaped = unique_sleep(30), unique_sleep(31)
    cmd = f"(setsid {' '.join(escaped)} &); echo $$ > me.pid; exec {' '.join(sleep)}"
    model = ScriptedChatModel(script=[tool_reply("run_shell", {"command": cmd}), "x"])
    agent, _, _ = build(ws, model, approval="auto")
    task = asyncio.create_task(run(agent))
    await wait_for_file(ws / "me.pid")
    for _ in range(500):  # bounded: the setsid'd sleep may still be starting
        if running(escaped):
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10.0)
    assert await wait_gone(sleep) and await wait_gone(escaped)


def test_compact_tool_history_shortens_oldest_first() -> None:
    msgs: list[Any] = [
        ToolMessage(content="a" * 5000, tool_call_id="1"),
        ToolMessage(content="b" * 5000, tool_call_id="2"),
        ToolMessage(content="c" * 5000, tool_call_id="3"),
    ]
    compact_tool_history(msgs, 11_000)
    assert len(msgs[0].content) < 400 and "older output elided: 5000 chars" in msgs[0].content
    assert msgs[1].content == "b" * 5000 and msgs[2].content == "c" * 5000
    compact_tool_history(msgs, 1000)
    assert len(msgs[1].content) < 400
    assert msgs[2].content == "c" * 5000  # the newest result is always kept whole


async def test_arguments_are_normalised_once_between_the_model_and_the_tool(ws: Path) -> None:
    """One rule on the way from the model to the tool: file text given as an object is
    written as JSON, a command given as a list is refused (not turned into its JSON text
    and back), an aliased, string-typed limit arrives as a number."""
    calls = [
        {"name": "write_file", "args": {"file_path": "c.json", "content": {"k": [1]}}, "id": "w"},
        {"name": "run_shell", "args": {"command": ["rm", "-rf", "."]}, "id": "r"},
        {"name": "read_file", "args": {"args": '{"filepath": "c.json", "limit": "1"}'}, "id": "l"},
    ]
    model = ScriptedChatModel(script=[ScriptedReply(tool_calls=calls), "done"])
    agent, bus, _ = build(ws, model)
    rec = Recorder(bus)
    out = await run(agent)
    write, shell, read = out.tool_outcomes
    assert write.ok and (ws / "c.json").read_text() == '{"k": [1]}'
    assert not shell.ok and shell.output.startswith("invalid arguments for run_shell: command")
    assert read.ok and read.output.startswith('{"k": [1]}') and read.args["limit"] == 1
    shown = {e.call_id: e.args for e in rec.of(ToolCalled)}
    assert shown["w"] == {"path": "c.json", "content": '{"k": [1]}'}
    assert shown["l"] == {"path": "c.json", "limit": 1}
    assert (ws / "README.md").exists()
