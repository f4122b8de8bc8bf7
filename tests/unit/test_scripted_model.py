"""ScriptedChatModel: a real BaseChatModel that replays a script and records prompts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from soothe.engine.llm.scripted import (
    ScriptedChatModel,
    ScriptedReply,
    ScriptExhausted,
    split_text,
)

MakeModel = Callable[..., ScriptedChatModel]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return ""


class Plan(BaseModel):
    steps: list[str]


def aggregate(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    return total


def test_is_a_real_chat_model(scripted_model: MakeModel) -> None:
    assert isinstance(scripted_model("x"), BaseChatModel)


def test_invoke_returns_text_and_records_the_call(scripted_model: MakeModel) -> None:
    model = scripted_model("Hello there.", model_name="demo")
    reply = model.invoke([SystemMessage("be brief"), HumanMessage("hi")])
    assert reply.content == "Hello there."
    assert reply.tool_calls == []
    assert reply.response_metadata["done_reason"] == "stop"
    assert reply.response_metadata["model_name"] == "demo"
    assert len(model.calls) == 1
    call = model.calls[0]
    assert [type(m) for m in call.messages] == [SystemMessage, HumanMessage]
    assert call.messages[1].content == "hi"
    assert call.streamed is False
    assert call.prompt_chars == len("be brief") + len("hi") == model.prompt_chars(0)
    assert model.remaining == 0


def test_stream_yields_word_chunks(scripted_model: MakeModel) -> None:
    text = "The quick brown fox jumps."
    model = scripted_model(text)
    chunks = list(model.stream("go"))
    texts = [c.content for c in chunks if c.content]
    assert texts == ["The ", "quick ", "brown ", "fox ", "jumps."]
    assert "".join(texts) == text
    assert model.calls[0].streamed is True


async def test_astream_uses_explicit_stream_chunks(scripted_model: MakeModel) -> None:
    model = scripted_model(ScriptedReply(stream_chunks=['{"a"', ": 1", "}"]))
    chunks = [c async for c in model.astream("go")]
    assert [c.content for c in chunks if c.content] == ['{"a"', ": 1", "}"]
    assert aggregate(chunks).content == '{"a": 1}'


def test_text_and_stream_chunks_must_agree() -> None:
    with pytest.raises(ValueError, match="disagree"):
        ScriptedReply(text="abc", stream_chunks=["ab", "x"])
    assert split_text("  a  b") == ["  ", "a  ", "b"]


async def test_streamed_tool_calls_survive_aggregation(scripted_model: MakeModel) -> None:
    model = scripted_model(
        ScriptedReply(
            text="Let me check.",
            tool_calls=[
                {"name": "add", "args": {"a": 2, "b": 3}},
                {"name": "read_file", "args": {"path": "README.md"}, "id": "call_x"},
            ],
        )
    )
    bound = model.bind_tools([add, read_file])
    chunks = [c async for c in bound.astream("add and read")]
    # Arguments arrive in several pieces per call, like a real provider's stream.
    assert sum(len(c.tool_call_chunks) for c in chunks) == 4
    total = aggregate(chunks)
    assert total.content == "Let me check."
    assert total.tool_calls == [
        {"name": "add", "args": {"a": 2, "b": 3}, "id": "call_0_0", "type": "tool_call"},
        {"name": "read_file", "args": {"path": "README.md"}, "id": "call_x", "type": "tool_call"},
    ]
    assert total.invalid_tool_calls == []
    assert total.response_metadata["done_reason"] == "stop"


async def test_invoke_returns_tool_calls(scripted_model: MakeModel) -> None:
    model = scripted_model(ScriptedReply(tool_calls=[{"name": "add", "args": {"a": 1, "b": 1}}]))
    reply = await model.bind_tools([add]).ainvoke("1+1")
    assert reply.content == ""
    assert reply.tool_calls == [
        {"name": "add", "args": {"a": 1, "b": 1}, "id": "call_0_0", "type": "tool_call"}
    ]


async def test_malformed_tool_arguments_become_invalid_tool_calls(
    scripted_model: MakeModel,
) -> None:
    broken = ScriptedReply(tool_calls=[{"name": "add", "args": "not json"}])
    model = scripted_model(broken, broken)
    reply = await model.ainvoke("x")
    assert reply.tool_calls == []
    assert [(t["name"], t["args"]) for t in reply.invalid_tool_calls] == [("add", "not json")]
    total = aggregate([c async for c in model.astream("x")])
    assert total.tool_calls == []
    assert [(t["name"], t["args"]) for t in total.invalid_tool_calls] == [("add", "not json")]


async def test_truncated_tool_arguments_parse_leniently_when_streamed(
    scripted_model: MakeModel,
) -> None:
    """LangChain's chunk aggregation uses a partial-JSON parser: truncated arguments
    come back as a valid-looking, smaller dict (the same happens with ChatOpenAI)."""
    truncated = ScriptedReply(tool_calls=[{"name": "add", "args": '{"a": 1'}])
    model = scripted_model(truncated, truncated)
    assert (await model.ainvoke("x")).invalid_tool_calls[0]["args"] == '{"a": 1'
    total = aggregate([c async for c in model.astream("x")])
    assert total.tool_calls[0]["args"] == {"a": 1}


async def test_dict_and_pydantic_items_are_json_text(scripted_model: MakeModel) -> None:
    model = scripted_model({"steps": ["a", "b"]}, Plan(steps=["c"]), [1, 2])
    first = await model.ainvoke("plan")
    assert Plan.model_validate_json(first.content) == Plan(steps=["a", "b"])
    second = aggregate([c async for c in model.astream("plan")])
    assert Plan.model_validate_json(second.content) == Plan(steps=["c"])
    assert (await model.ainvoke("list")).content == "[1, 2]"


async def test_exception_item_is_raised_then_script_continues(scripted_model: MakeModel) -> None:
    model = scripted_model(TimeoutError("model timed out"), "recovered")
    with pytest.raises(TimeoutError, match="model timed out"):
        await model.ainvoke("first")
    assert (await model.ainvoke("second")).content == "recovered"
    assert len(model.calls) == 2


def test_exception_item_raised_on_stream(scripted_model: MakeModel) -> None:
    model = scripted_model(ConnectionError("refused"))
    with pytest.raises(ConnectionError, match="refused"):
        list(model.stream("x"))


async def test_mid_stream_error_after_partial_text(scripted_model: MakeModel) -> None:
    reply = ScriptedReply(text="partial answer here", error=ConnectionResetError("dropped"))
    model = scripted_model(reply, reply)
    received: list[str] = []
    with pytest.raises(ConnectionResetError, match="dropped"):
        async for chunk in model.astream("x"):
            received.append(chunk.content)
    assert "".join(received) == "partial answer here"
    with pytest.raises(ConnectionResetError):
        await model.ainvoke("x")


def test_string_error_is_wrapped_in_runtime_error(scripted_model: MakeModel) -> None:
    model = scripted_model(ScriptedReply(error="boom"))
    with pytest.raises(RuntimeError, match="boom"):
        model.invoke("x")


def test_exhaustion_names_the_number_of_calls(scripted_model: MakeModel) -> None:
    model = scripted_model("one")
    model.invoke("a")
    with pytest.raises(ScriptExhausted, match="2 calls made, only 1 replies scripted"):
        model.invoke("b")
    assert isinstance(ScriptExhausted("x"), RuntimeError)
    assert len(model.calls) == 2  # the failed call is recorded too


def test_extend_adds_replies(scripted_model: MakeModel) -> None:
    model = scripted_model()
    model.extend(["later"])
    assert model.remaining == 1
    assert model.invoke("x").content == "later"


async def test_responder_decides_from_prompt(scripted_model: MakeModel) -> None:
    seen: list[dict[str, Any]] = []

    def responder(messages: list[BaseMessage], call: dict[str, Any]) -> Any:
        seen.append(call)
        last = str(messages[-1].content)
        if call["tool_names"]:
            return ScriptedReply(tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}}])
        return f"echo: {last}"

    model = scripted_model("scripted first", responder=responder)
    assert (await model.ainvoke("a")).content == "scripted first"
    assert (await model.ainvoke("hello")).content == "echo: hello"
    tool_reply = await model.bind_tools([add]).ainvoke("sum")
    assert tool_reply.tool_calls[0]["name"] == "add"
    assert [c["index"] for c in seen] == [1, 2]
    assert seen[1]["tool_names"] == ["add"]


async def test_records_tools_and_bound_kwargs(scripted_model: MakeModel) -> None:
    model = scripted_model("{}", "plain")
    schema = Plan.model_json_schema()
    bound = model.bind_tools([add, read_file], tool_choice="auto").bind(format=schema)
    await bound.ainvoke([HumanMessage("x" * 40)])
    await model.bind(response_format={"type": "json_object"}, temperature=0).ainvoke("y")
    first, second = model.calls
    assert first.tool_names == ["add", "read_file"]
    assert first.tools[0]["function"]["parameters"]["required"] == ["a", "b"]
    assert first.kwargs == {"tool_choice": "auto", "format": schema}
    assert first.prompt_chars == 40
    assert second.tools == []
    assert second.kwargs == {"response_format": {"type": "json_object"}, "temperature": 0}


def test_default_with_structured_output_works_via_tool_calls(scripted_model: MakeModel) -> None:
    model = scripted_model(ScriptedReply(tool_calls=[{"name": "Plan", "args": {"steps": ["a"]}}]))
    assert model.with_structured_output(Plan).invoke("plan") == Plan(steps=["a"])
    assert model.calls[0].tool_names == ["Plan"]


async def test_parallel_calls_consume_script_in_call_order(scripted_model: MakeModel) -> None:
    n = 6
    # Earlier calls take longer, so completion order is the reverse of call order.
    replies = [ScriptedReply(text=f"r{i}", delay=0.01 * (n - i)) for i in range(n)]
    model = scripted_model(*replies)
    results = await asyncio.gather(*(model.ainvoke(f"p{i}") for i in range(n)))
    assert [r.content for r in results] == [f"r{i}" for i in range(n)]
    assert [c.messages[0].content for c in model.calls] == [f"p{i}" for i in range(n)]
    assert [c.index for c in model.calls] == list(range(n))


async def test_parallel_streams_consume_script_in_call_order(scripted_model: MakeModel) -> None:
    model = scripted_model(*(f"s{i} text" for i in range(4)))

    async def run(i: int) -> str:
        return "".join([str(c.content) async for c in model.astream(f"p{i}")])

    assert await asyncio.gather(*(run(i) for i in range(4))) == [f"s{i} text" for i in range(4)]


def test_threads_never_share_or_lose_a_reply(scripted_model: MakeModel) -> None:
    model = scripted_model(*(f"r{i}" for i in range(40)))
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: model.invoke(f"p{i}").content, range(40)))
    assert sorted(results) == sorted(f"r{i}" for i in range(40))
    assert len(model.calls) == 40
    assert model.remaining == 0


async def test_usage_metadata_explicit_and_estimated(scripted_model: MakeModel) -> None:
    model = scripted_model(
        ScriptedReply(text="abc", usage=(7, 3)),
        "x" * 20,
        ScriptedReply(text="four words in here", usage=(11, 5)),
    )
    explicit = await model.ainvoke("hi")
    assert explicit.usage_metadata == {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
    estimated = await model.ainvoke("y" * 40)  # 40 prompt chars, 20 output chars
    assert estimated.usage_metadata == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    chunks = [c async for c in model.astream("z")]
    # Usage rides on one chunk only, so aggregation does not count it twice.
    assert sum(1 for c in chunks if c.usage_metadata) == 1
    assert aggregate(chunks).usage_metadata == {
        "input_tokens": 11,
        "output_tokens": 5,
        "total_tokens": 16,
    }


async def test_done_reason_is_scripted(scripted_model: MakeModel) -> None:
    model = scripted_model(ScriptedReply(text='{"steps": ["a"', done_reason="length"))
    total = aggregate([c async for c in model.astream("x")])
    assert total.response_metadata["done_reason"] == "length"


async def test_delay_is_cancellable(scripted_model: MakeModel) -> None:
    model = scripted_model(ScriptedReply(text="late", delay=30), "next")
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await model.ainvoke("x")
    assert time.monotonic() - start < 1.0
    assert len(model.calls) == 1
    assert (await model.ainvoke("y")).content == "next"


async def test_cancelling_a_stream_task(scripted_model: MakeModel) -> None:
    model = scripted_model(ScriptedReply(text="a b c", chunk_delay=30))
    first_chunk = asyncio.Event()

    async def consume() -> None:
        async for chunk in model.astream("x"):
            if chunk.content:
                first_chunk.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_chunk.wait(), timeout=1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=1)


def test_sync_delay_is_honoured(scripted_model: MakeModel) -> None:
    model = scripted_model(ScriptedReply(text="ok", delay=0.05))
    start = time.monotonic()
    assert model.invoke("x").content == "ok"
    assert 0.05 <= time.monotonic() - start < 1.0


def test_unsupported_item_type_is_a_clear_error(scripted_model: MakeModel) -> None:
    with pytest.raises(TypeError, match="unsupported script item"):
        scripted_model(42).invoke("x")
