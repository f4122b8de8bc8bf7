"""The demo provider: a full model round trip with no server at all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from soothe.engine.bus import EventBus
from soothe.engine.config import ModelSettings
from soothe.engine.events import Usage
from soothe.engine.llm.demo import (
    build_demo_model,
    instance_from_schema,
    register_demo_responder,
    unregister_demo_responder,
)
from soothe.engine.llm.factory import build_chat_model
from soothe.engine.llm.hub import ModelHub
from soothe.engine.llm.schema import bounded_json_schema
from soothe.engine.llm.scripted import ScriptedChatModel

Short = Annotated[str, Field(max_length=16)]


class Step(BaseModel):
    id: str = Field(max_length=8, min_length=2)
    description: str = Field(max_length=5)
    kind: Literal["action", "ask_user"]
    dependencies: list[Short] = Field(default_factory=list, max_length=4)


class Plan(BaseModel):
    steps: list[Step] = Field(min_length=2, max_length=5)
    execution_mode: Literal["parallel", "dependency"] = "dependency"
    confidence: float = Field(ge=0.5, le=0.9)
    priority: int = Field(gt=10, lt=20)
    done: bool
    note: str | None = Field(None, max_length=30)
    weights: dict[str, int] = Field(default_factory=dict, max_length=2)


class Tiny(BaseModel):
    code: str = Field(min_length=12, max_length=12)
    count: int = Field(ge=-5, le=-3)


@pytest.fixture
def demo_hub() -> Iterator[ModelHub]:
    # The plain demo model, without the demo brain an earlier test in this process may
    # have registered (Session.start installs it for the demo provider).
    from soothe.engine.llm import demo

    saved = list(demo._CHAT)
    demo.register_demo_chat(None)
    try:
        yield ModelHub(ModelSettings(provider="demo"), EventBus())
    finally:
        demo._CHAT[:] = saved


def test_factory_builds_the_demo_model_without_a_server() -> None:
    model = build_chat_model(ModelSettings(provider="demo"))
    assert isinstance(model, ScriptedChatModel)
    assert model.model_name == "demo model"


async def test_demo_streams_a_labelled_answer(demo_hub: ModelHub) -> None:
    assert demo_hub.display_name == "demo model"
    sub = demo_hub.bus.subscribe()  # type: ignore[union-attr]
    pieces: list[str] = []
    reply = await demo_hub.stream_text(
        [SystemMessage(content="be brief"), HumanMessage(content="What is 2+2?")],
        on_token=pieces.append,
        ids={"thread_id": "t1"},
    )
    assert len(pieces) > 3
    assert "".join(pieces) == reply.text
    assert "demo model" in reply.text
    assert "What is 2+2?" in reply.text
    events = [e for e in sub.drain() if isinstance(e, Usage)]
    assert len(events) == 1
    assert events[0].model == "demo model"
    assert events[0].thread_id == "t1"
    assert events[0].output_tokens > 0


@pytest.mark.parametrize("schema", [Plan, Step, Tiny])
async def test_demo_produces_a_valid_object_for_any_bounded_schema(
    demo_hub: ModelHub, schema: type[BaseModel]
) -> None:
    result = await demo_hub.structured([HumanMessage(content="plan it")], schema)
    assert result.error is None
    assert isinstance(result.value, schema)
    assert result.attempts == 1
    assert not result.repaired


def test_instance_builder_honours_bounds() -> None:
    plan = Plan.model_validate(instance_from_schema(bounded_json_schema(Plan)))
    assert len(plan.steps) == 2
    assert 10 < plan.priority < 20
    assert 0.5 <= plan.confidence <= 0.9
    # Raw pydantic schemas with $defs/$ref resolve too.
    assert Plan.model_validate(instance_from_schema(Plan.model_json_schema()))


async def test_registered_handler_answers_its_schema(demo_hub: ModelHub) -> None:
    seen: list[str] = []

    def handler(messages: list[BaseMessage], schema: dict) -> dict:
        seen.append(schema["title"])
        return {"code": "ABCDEFGHIJKL", "count": -4}

    register_demo_responder("Tiny", handler)
    try:
        result = await demo_hub.structured([HumanMessage(content="x")], Tiny)
    finally:
        unregister_demo_responder("Tiny")
    assert result.value == Tiny(code="ABCDEFGHIJKL", count=-4)
    assert seen == ["Tiny"]


async def test_chunk_delay_paces_the_stream() -> None:
    model = build_demo_model(chunk_delay=0.001)
    hub = ModelHub(ModelSettings(provider="demo"), models={"default": model})
    reply = await hub.stream_text([HumanMessage(content="hello")])
    assert "demo model" in reply.text
    assert model.calls[0].reply.chunk_delay == 0.001  # type: ignore[union-attr]


async def test_registered_chat_handler_can_call_tools(demo_hub: ModelHub) -> None:
    from langchain_core.tools import tool

    from soothe.engine.llm.demo import register_demo_chat
    from soothe.engine.llm.scripted import ScriptedReply

    @tool
    def list_dir(path: str) -> str:
        """List a directory."""
        return ""

    def chat(messages: list[BaseMessage], info: dict) -> object:
        if info["tool_names"] == ["list_dir"]:
            return ScriptedReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}])
        return None

    register_demo_chat(chat)
    try:
        with_tools = await demo_hub.stream_text([HumanMessage(content="ls")], tools=[list_dir])
        plain = await demo_hub.stream_text([HumanMessage(content="hi")])
    finally:
        register_demo_chat(None)
    assert with_tools.tool_calls[0]["name"] == "list_dir"
    assert with_tools.tool_calls[0]["args"] == {"path": "."}
    assert "demo model" in plain.text


def test_reset_models_rebuilds_from_changed_settings() -> None:
    settings = ModelSettings(name="a:1b")
    hub = ModelHub(settings)
    first = hub.chat_model()
    settings.name = "b:2b"
    assert hub.chat_model() is first
    hub.reset_models()
    assert hub.chat_model().model == "b:2b"  # type: ignore[attr-defined]
    assert hub.model_name() == "b:2b"


async def test_the_demo_model_keeps_only_its_last_call() -> None:
    """A session on the demo model does not keep every prompt it sent (bench_memory)."""
    model = build_demo_model()
    hub = ModelHub(ModelSettings(provider="demo"), models={"default": model})
    for n in range(3):
        await hub.stream_text([HumanMessage(content=f"hello {n}")])
    assert [call.index for call in model.calls] == [2]  # the count goes on
    assert model.calls[0].messages[-1].content == "hello 2"


def test_the_demo_reads_a_readme_only_when_the_glob_found_one() -> None:
    """In a folder without a README the glob says so in a sentence that names README*;
    the demo must not pass that sentence to read_file as a path (a failed tool row and a
    'Tool read_file failed' toast on every first run in such a folder)."""
    from langchain_core.messages import AIMessage, ToolMessage

    from soothe.engine.loop.demo_brain import chat

    asked = HumanMessage(content="Goal: summarise\n\nStep S-02: Read the README of the workspace")
    call = AIMessage(
        content="", tool_calls=[{"name": "glob", "args": {"pattern": "README*"}, "id": "c1"}]
    )
    none = (
        "no paths match README*; this matches the top level only, use **/README* for subdirectories"
    )
    reply = chat([asked, call, ToolMessage(content=none, tool_call_id="c1")], {"tools": ["x"]})
    assert isinstance(reply, str) and none.split(";")[0] in reply
    found = chat(
        [asked, call, ToolMessage(content="README.md", tool_call_id="c1")], {"tools": ["x"]}
    )
    assert found.tool_calls == [{"name": "read_file", "args": {"path": "README.md"}}]
