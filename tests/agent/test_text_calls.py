"""Tool calls written as text run through the step exactly as native ones: validation,
approval, journal, events and the tool result sent back; through the real ChatOllama
client against the fake Ollama server."""

from __future__ import annotations

from pathlib import Path

from soothe.engine.agent.core import CoreAgent
from soothe.engine.agent.journal import Journal
from soothe.engine.agent.tools import ToolContextFactory
from soothe.engine.agent.undo import plan_undo
from soothe.engine.bus import EventBus
from soothe.engine.config import Settings
from soothe.engine.events import StepToken, ToolCalled, ToolResult
from soothe.engine.interact import InteractBroker
from soothe.engine.llm.hub import ModelHub
from soothe.engine.scope import Scope
from tests.agent.helpers import IDS, Recorder, approver
from tests.fakes import FakeOllamaServer, FakeReply

READ_AS_TEXT = (
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "README.md"}}\n</tool_call>'
)
WRITE_AS_TEXT = (
    '{"type": "function", "name": "write_file", '
    '"parameters": {"path": "notes.txt", "content": "tidy the docs\\n"}}'
)


def agent_for(
    ws: Path, fake: FakeOllamaServer, approval: str, journal: Journal | None = None
) -> tuple[CoreAgent, ModelHub, EventBus, InteractBroker]:
    settings = Settings()
    settings.model.provider = "ollama"
    settings.model.name = "llama3.2"
    settings.model.base_url = fake.url
    settings.tools.workspace = ws
    settings.tools.approval = approval  # type: ignore[assignment]
    bus = EventBus()
    broker = InteractBroker(bus)
    hub = ModelHub(settings.model, bus)
    factory = ToolContextFactory(settings, broker=broker, bus=bus, approval_timeout=30)
    return CoreAgent(hub, factory, settings, bus, journal=journal), hub, bus, broker


async def test_a_call_written_as_text_runs_and_its_result_goes_back(
    ws: Path, fake_ollama: FakeOllamaServer
) -> None:
    fake_ollama.extend([FakeReply(text=READ_AS_TEXT), "The project is a small demo."])
    agent, hub, bus, _ = agent_for(ws, fake_ollama, "auto")
    seen = Recorder(bus)
    try:
        out = await agent.run_step(
            goal="Describe the project",
            step_id="S1",
            description="Read the README",
            expected_output="one sentence",
            context_text="",
            evidence_text="",
            scope=Scope(**IDS),
        )
    finally:
        await hub.aclose()
    assert out.ok, out.error
    assert out.answer == "The project is a small demo."
    assert out.no_answer is None  # the call was a call, not a failed answer
    [read] = out.tool_outcomes
    assert (read.tool, read.args["path"], read.ok) == ("read_file", "README.md", True)
    assert read.output.startswith("# Demo\nA small project.")
    [called] = seen.of(ToolCalled)
    [result] = seen.of(ToolResult)
    assert (called.tool, called.call_id) == ("read_file", result.call_id)
    assert called.call_id.startswith("call_")
    # The call's text streamed to the step card as it came; the answer does not keep it.
    streamed = "".join(e.text for e in seen.of(StepToken))
    assert streamed.startswith(READ_AS_TEXT)
    assert "tool_call" not in out.answer
    first, second = fake_ollama.chat_requests()
    assert first["tools"]
    assistant = [m for m in second["messages"] if m["role"] == "assistant"]
    assert assistant[-1]["tool_calls"][0]["function"]["name"] == "read_file"
    assert "tool_call" not in assistant[-1].get("content", "")
    [tool_message] = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool_message["content"].startswith("# Demo\nA small project.")


async def test_a_write_written_as_text_asks_approval_and_is_journaled(
    ws: Path, fake_ollama: FakeOllamaServer, tmp_path: Path
) -> None:
    fake_ollama.extend([FakeReply(text=WRITE_AS_TEXT), "Wrote notes.txt."])
    journal = Journal(tmp_path / "journal.db")
    agent, hub, bus, broker = agent_for(ws, fake_ollama, "ask", journal)
    try:
        async with approver(bus, broker, "approve_once") as asked:
            out = await agent.run_step(
                goal="Write the notes",
                step_id="S1",
                description="Write notes.txt",
                expected_output="the file",
                context_text="",
                evidence_text="",
                scope=Scope(**IDS),
            )
        assert out.ok, out.error
        assert [r.tool for r in asked] == ["write_file"]
        assert (ws / "notes.txt").read_text() == "tidy the docs\n"
        assert [entry.tool for entry in plan_undo(journal, IDS["thread_id"])] == ["write_file"]
    finally:
        journal.close()
        await hub.aclose()
