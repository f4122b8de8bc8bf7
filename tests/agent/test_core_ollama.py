"""CoreAgent through the real ChatOllama client against the fake Ollama server."""

from __future__ import annotations

import json
from pathlib import Path

from soothe.engine.agent.core import CoreAgent
from soothe.engine.agent.tools import ToolContextFactory
from soothe.engine.bus import EventBus
from soothe.engine.config import Settings
from soothe.engine.llm.hub import ModelHub
from soothe.engine.scope import Scope
from tests.agent.helpers import IDS
from tests.fakes import FakeOllamaServer, FakeReply


async def test_tool_round_trip_over_the_wire(ws: Path, fake_ollama: FakeOllamaServer) -> None:
    settings = Settings()
    settings.model.provider = "ollama"
    settings.model.name = "llama3.2"
    settings.model.base_url = fake_ollama.url
    settings.tools.workspace = ws
    settings.tools.approval = "auto"
    fake_ollama.extend(
        [
            FakeReply(
                tool_calls=[
                    {"name": "read_file", "args": {"path": "README.md", "limit": "2"}},
                    # ChatOllama turns JSON-looking strings into objects: content arrives
                    # as a dict and must still be written as JSON text.
                    {"name": "write_file", "args": {"path": "cfg.json", "content": '{"a": 1}'}},
                ]
            ),
            "The project is a small demo.",
        ]
    )
    bus = EventBus()
    hub = ModelHub(settings.model, bus)
    agent = CoreAgent(hub, ToolContextFactory(settings, broker=None, bus=bus), settings, bus)
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
    read, write = out.tool_outcomes
    assert read.ok and read.output.startswith("# Demo\nA small project.\n")
    assert "TODO" not in read.output  # limit "2" arrived as a number
    assert write.ok, write.output
    assert json.loads((ws / "cfg.json").read_text()) == {"a": 1}
    first, second = fake_ollama.chat_requests()
    names = [t["function"]["name"] for t in first["tools"]]
    assert names[:2] == ["read_file", "list_dir"]
    path_schema = first["tools"][0]["function"]["parameters"]["properties"]["path"]
    # The ollama client's Tool model keeps only type/description/enum/items of each
    # property: the bounds never reach the server, so run_tool_call's validation is the
    # only place they are enforced.
    assert path_schema == {"description": "path relative to the workspace root", "type": "string"}
    tool_msgs = [m for m in second["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 2 and tool_msgs[0]["content"].startswith("# Demo")
