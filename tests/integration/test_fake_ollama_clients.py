"""The real `langchain_ollama.ChatOllama` (and `ollama` client) against FakeOllamaServer.

These pin down what the real clients do with each reply and failure, including the
exact exception classes the model layer has to handle.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
import ollama
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_ollama import ChatOllama
from pydantic import BaseModel, Field

from tests.fakes import FakeHTTPError, FakeOllamaModel, FakeOllamaServer, FakeReply


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def tag_items(items: list[str], meta: dict[str, Any], note: str, count: str) -> str:
    """Tag items."""
    return ""


class Plan(BaseModel):
    steps: list[str] = Field(max_length=5)


def chat(server: FakeOllamaServer, model: str = "llama3.2", timeout: float = 5) -> ChatOllama:
    return ChatOllama(base_url=server.url, model=model, client_kwargs={"timeout": timeout})


async def collect(model: Any, prompt: str = "hi") -> tuple[AIMessageChunk, list[str]]:
    """Stream a reply; return the aggregate and the non-empty text pieces."""
    total: AIMessageChunk | None = None
    pieces: list[str] = []
    async for chunk in model.astream(prompt):
        if chunk.content:
            pieces.append(chunk.content)
        total = chunk if total is None else total + chunk
    assert total is not None
    return total, pieces


async def test_astream_text(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend(["Hello there, how are you?"])
    total, pieces = await collect(chat(fake_ollama))
    assert pieces == ["Hello ", "there, ", "how ", "are ", "you?"]
    assert total.content == "Hello there, how are you?"
    assert total.response_metadata["done_reason"] == "stop"
    assert total.response_metadata["model_name"] == "llama3.2"
    body = fake_ollama.last_chat()
    assert body["stream"] is True
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["tools"] == []  # sent even when no tools are bound


async def test_invoke_also_streams_on_the_wire(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend(["plain answer"])
    reply = await chat(fake_ollama).ainvoke([("system", "be brief"), ("user", "q")])
    assert reply.content == "plain answer"
    body = fake_ollama.last_chat()
    assert body["stream"] is True  # ChatOllama streams even from invoke
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert len(fake_ollama.chat_requests()) == 1


def test_sync_invoke(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend(["sync works"])
    assert chat(fake_ollama).invoke("x").content == "sync works"


async def test_tool_calls_and_json_strings_inside_arguments(
    fake_ollama: FakeOllamaServer,
) -> None:
    fake_ollama.extend(
        [
            FakeReply(
                tool_calls=[
                    {
                        "name": "tag_items",
                        "args": {
                            "items": '["a", "b"]',
                            "meta": '{"k": 1}',
                            "note": "hello",
                            "count": "42",
                        },
                    }
                ]
            )
        ]
    )
    reply = await chat(fake_ollama).bind_tools([tag_items]).ainvoke("tag them")
    [call] = reply.tool_calls
    assert call["name"] == "tag_items"
    # ChatOllama decodes JSON strings that hold a list/object, and leaves other strings
    # (including "42") alone.
    assert call["args"] == {"items": ["a", "b"], "meta": {"k": 1}, "note": "hello", "count": "42"}
    # The server's call id is dropped: LangChain invents a uuid.
    assert call["id"] != "call_0_0"
    uuid.UUID(call["id"])
    body = fake_ollama.last_chat()
    assert [t["function"]["name"] for t in body["tools"]] == ["tag_items"]


async def test_tool_round_trip_messages_on_the_wire(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend(["the sum is 3"])
    history = [
        HumanMessage("1+2?"),
        AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}, "id": "t1"}]),
        ToolMessage("3", tool_call_id="t1"),
    ]
    await chat(fake_ollama).bind_tools([add]).ainvoke(history)
    messages = fake_ollama.last_chat()["messages"]
    assert messages[1] == {
        "role": "assistant",
        "tool_calls": [{"function": {"name": "add", "arguments": {"a": 1, "b": 2}}}],
    }
    assert messages[2] == {"role": "tool", "content": "3"}  # no tool_name, no call id


async def test_streamed_tool_calls(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend(
        [FakeReply(text="Adding.", tool_calls=[{"name": "add", "args": {"a": 2, "b": 3}}])]
    )
    total, _ = await collect(chat(fake_ollama).bind_tools([add]))
    assert total.content == "Adding."
    assert [(c["name"], c["args"]) for c in total.tool_calls] == [("add", {"a": 2, "b": 3})]


async def test_format_schema_is_sent(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend([{"steps": ["read", "write"]}])
    schema = Plan.model_json_schema()
    reply = await chat(fake_ollama).bind(format=schema).ainvoke("plan it")
    assert Plan.model_validate_json(reply.content) == Plan(steps=["read", "write"])
    assert fake_ollama.last_chat()["format"] == schema


async def test_with_structured_output_sends_schema_as_format(
    fake_ollama: FakeOllamaServer,
) -> None:
    fake_ollama.extend([Plan(steps=["one"])])
    result = await chat(fake_ollama).with_structured_output(Plan).ainvoke("plan")
    assert result == Plan(steps=["one"])
    assert fake_ollama.last_chat()["format"]["properties"]["steps"]["maxItems"] == 5


async def test_usage_and_done_reason(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend([FakeReply(text="cut off mid", usage=(12, 34), done_reason="length")])
    chunks = [c async for c in chat(fake_ollama).astream("x")]
    # Usage rides on one chunk (the server's done line; LangChain then appends an empty
    # last chunk), so summing the chunks gives the server's counts.
    assert [i for i, c in enumerate(chunks) if c.usage_metadata] == [len(chunks) - 2]
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    assert total.usage_metadata == {"input_tokens": 12, "output_tokens": 34, "total_tokens": 46}
    assert total.response_metadata["done_reason"] == "length"
    assert total.response_metadata["eval_count"] == 34


async def test_usage_is_estimated_from_the_prompt(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend(["x" * 8])
    reply = await chat(fake_ollama).ainvoke("y" * 40)
    assert reply.usage_metadata == {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}


async def test_unknown_model_is_404(fake_ollama: FakeOllamaServer) -> None:
    with pytest.raises(ollama.ResponseError) as info:
        await chat(fake_ollama, model="mistral").ainvoke("x")
    assert info.value.status_code == 404
    assert info.value.error == "model 'mistral' not found"
    assert fake_ollama.remaining == 0  # nothing consumed, nothing scripted


async def test_tools_on_a_model_without_tool_support_is_400() -> None:
    with FakeOllamaServer(["unused"], models=[FakeOllamaModel("gemma3:1b", tools=False)]) as s:
        plain = await chat(s, model="gemma3:1b").ainvoke("no tools is fine")
        assert plain.content == "unused"
        with pytest.raises(ollama.ResponseError) as info:
            await chat(s, model="gemma3:1b").bind_tools([add]).ainvoke("x")
    assert info.value.status_code == 400
    assert info.value.error == "registry.ollama.ai/library/gemma3:1b does not support tools"


async def test_scripted_http_error(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend([FakeHTTPError(500, "llama runner process has terminated")])
    with pytest.raises(ollama.ResponseError) as info:
        await chat(fake_ollama).ainvoke("x")
    assert info.value.status_code == 500
    assert "runner process" in info.value.error


async def test_mid_stream_error_line(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend([FakeReply(text="partial answer", error="out of memory")])
    pieces: list[str] = []
    with pytest.raises(ollama.ResponseError) as info:
        async for chunk in chat(fake_ollama).astream("x"):
            pieces.append(chunk.content)
    assert "".join(pieces) == "partial answer"
    assert info.value.error == "out of memory"
    assert info.value.status_code == -1  # the HTTP status was 200


async def test_dropped_connection_mid_stream(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend([FakeReply(text="partial answer", drop=True)])
    pieces: list[str] = []
    with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
        async for chunk in chat(fake_ollama).astream("x"):
            pieces.append(chunk.content)
    assert "".join(pieces) == "partial answer"


async def test_server_down_then_back_on_the_same_port(fake_ollama: FakeOllamaServer) -> None:
    model = chat(fake_ollama)
    fake_ollama.extend(["before"])
    assert (await model.ainvoke("x")).content == "before"
    port = fake_ollama.port
    fake_ollama.stop()
    # The streaming path (astream and invoke) lets httpx.ConnectError through.
    with pytest.raises(httpx.ConnectError):
        await model.ainvoke("x")
    with pytest.raises(httpx.ConnectError):
        [c async for c in model.astream("x")]
    fake_ollama.start()
    assert fake_ollama.port == port
    fake_ollama.extend(["after"])
    assert (await model.ainvoke("x")).content == "after"


def test_non_streaming_calls_wrap_connect_errors(fake_ollama: FakeOllamaServer) -> None:
    """Plain (non-streaming) ollama client calls turn ConnectError into ConnectionError."""
    client = ollama.Client(host=fake_ollama.url, timeout=5)
    assert [m.model for m in client.list().models] == ["llama3.2:latest"]
    fake_ollama.stop()
    with pytest.raises(ConnectionError) as info:
        client.list()
    assert not isinstance(info.value, httpx.HTTPError)


async def test_slow_first_byte_times_out(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend([FakeReply(text="too late", delay=5)])
    start = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        await chat(fake_ollama, timeout=0.2).ainvoke("x")
    assert time.monotonic() - start < 1.0


async def test_stall_between_chunks_times_out(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend([FakeReply(text="first second", chunk_delay=5)])
    pieces: list[str] = []
    with pytest.raises(httpx.ReadTimeout):
        async for chunk in chat(fake_ollama, timeout=0.2).astream("x"):
            pieces.append(chunk.content)
    assert pieces == ["first "]


async def test_small_delays_within_the_timeout_succeed(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend([FakeReply(text="a b c", delay=0.05, chunk_delay=0.02)])
    start = time.monotonic()
    assert (await chat(fake_ollama).ainvoke("x")).content == "a b c"
    assert time.monotonic() - start >= 0.09


async def test_hang_ends_when_the_server_stops(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.extend([FakeReply(hang=True)])
    task = asyncio.create_task(chat(fake_ollama, timeout=10).ainvoke("x"))
    await asyncio.wait_for(_until(lambda: len(fake_ollama.chat_requests()) == 1), timeout=2)
    assert not task.done()
    start = time.monotonic()
    await asyncio.to_thread(fake_ollama.stop)
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        await asyncio.wait_for(task, timeout=2)
    assert time.monotonic() - start < 1.0


async def test_script_exhaustion_is_a_500_naming_the_call_count(
    fake_ollama: FakeOllamaServer,
) -> None:
    fake_ollama.extend(["only one"])
    await chat(fake_ollama).ainvoke("x")
    with pytest.raises(ollama.ResponseError) as info:
        await chat(fake_ollama).ainvoke("x")
    assert info.value.status_code == 500
    assert "2 chat calls made, only 1 replies scripted" in info.value.error


async def test_responder_sees_the_request_body() -> None:
    def responder(body: dict[str, Any]) -> Any:
        if body.get("tools"):
            return FakeReply(tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}}])
        return f"you said {body['messages'][-1]['content']}"

    with FakeOllamaServer(responder=responder) as s:
        assert (await chat(s).ainvoke("ping")).content == "you said ping"
        reply = await chat(s).bind_tools([add]).ainvoke("sum")
        assert reply.tool_calls[0]["args"] == {"a": 1, "b": 2}


def test_info_endpoints_and_request_log(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.add_model(FakeOllamaModel("qwen2.5:0.5b", tools=False, context_length=32768))
    client = ollama.Client(host=fake_ollama.url, timeout=5)
    assert [m.model for m in client.list().models] == ["llama3.2:latest", "qwen2.5:0.5b"]
    shown = client.show("llama3.2")
    assert "tools" in (shown.capabilities or [])
    assert "tools" not in (client.show("qwen2.5:0.5b").capabilities or [])
    assert shown.modelinfo["llama.context_length"] == 8192
    with pytest.raises(ollama.ResponseError) as info:
        client.show("nope")
    assert info.value.status_code == 404
    assert httpx.get(f"{fake_ollama.url}/api/version").json() == {"version": "0.6.3"}
    assert httpx.head(fake_ollama.url).status_code == 200
    assert httpx.get(fake_ollama.url).text == "Ollama is running"
    paths = [(r.method, r.path) for r in fake_ollama.requests]
    assert paths[:3] == [("GET", "/api/tags"), ("POST", "/api/show"), ("POST", "/api/show")]
    assert fake_ollama.requests[1].body == {"model": "llama3.2"}


async def _until(predicate: Any) -> None:
    """Poll a condition (callers bound it with wait_for)."""
    while not predicate():
        await asyncio.sleep(0.005)
