"""The real `langchain_openai.ChatOpenAI` against FakeOpenAIServer.

Pins down the wire format the client sends and the exception classes it raises.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from langchain_core.exceptions import (
    ModelAuthenticationError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelTimeoutError,
)
from langchain_core.messages import AIMessageChunk
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from soothe.engine.llm.errors import ModelErrorKind, map_error
from tests.fakes import FakeHTTPError, FakeOpenAIServer, FakeReply


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Plan(BaseModel):
    steps: list[str] = Field(max_length=5)


@pytest.fixture
def keyed_openai() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key="k", hang_limit=5.0) as server:
        yield server
    assert not server.errors


def chat(server: FakeOpenAIServer, **overrides: Any) -> ChatOpenAI:
    kwargs: dict[str, Any] = {
        "base_url": server.url + "/v1",
        "api_key": "k",
        "model": "llama3.2",
        "stream_usage": True,
        "timeout": 5,
        "max_retries": 0,
    }
    kwargs.update(overrides)
    return ChatOpenAI(**kwargs)


async def collect(model: Any, prompt: str = "hi") -> tuple[AIMessageChunk, list[str]]:
    total: AIMessageChunk | None = None
    pieces: list[str] = []
    async for chunk in model.astream(prompt):
        if chunk.content:
            pieces.append(chunk.content)
        total = chunk if total is None else total + chunk
    assert total is not None
    return total, pieces


async def test_streaming_text_with_usage(keyed_openai: FakeOpenAIServer) -> None:
    keyed_openai.extend([FakeReply(text="Hello there, friend.", usage=(9, 4))])
    total, pieces = await collect(chat(keyed_openai))
    assert pieces == ["Hello ", "there, ", "friend."]
    assert total.content == "Hello there, friend."
    assert total.usage_metadata is not None
    assert (total.usage_metadata["input_tokens"], total.usage_metadata["output_tokens"]) == (9, 4)
    assert total.response_metadata["finish_reason"] == "stop"
    body = keyed_openai.last_chat()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert keyed_openai.requests[-1].headers["authorization"] == "Bearer k"


async def test_no_usage_chunk_without_stream_usage(keyed_openai: FakeOpenAIServer) -> None:
    keyed_openai.extend(["plain"])
    total, _ = await collect(chat(keyed_openai, stream_usage=False))
    assert total.usage_metadata is None
    assert "stream_options" not in keyed_openai.last_chat()


async def test_streamed_tool_calls(keyed_openai: FakeOpenAIServer) -> None:
    keyed_openai.extend(
        [
            FakeReply(
                tool_calls=[
                    {"name": "add", "args": {"a": 2, "b": 3}},
                    {"name": "add", "args": {"a": 10, "b": 20}, "id": "call_given"},
                ]
            )
        ]
    )
    chunks = [c async for c in chat(keyed_openai).bind_tools([add]).astream("sums")]
    assert sum(len(c.tool_call_chunks) for c in chunks) > 2  # arguments came in pieces
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    assert [(c["name"], c["args"], c["id"]) for c in total.tool_calls] == [
        ("add", {"a": 2, "b": 3}, "call_0_0"),
        ("add", {"a": 10, "b": 20}, "call_given"),
    ]
    assert total.response_metadata["finish_reason"] == "tool_calls"
    tools = keyed_openai.last_chat()["tools"]
    assert [t["function"]["name"] for t in tools] == ["add"]


async def test_invoke_tool_calls_and_usage(keyed_openai: FakeOpenAIServer) -> None:
    keyed_openai.extend([FakeReply(tool_calls=[{"name": "add", "args": {"a": 1, "b": 1}}])])
    reply = await chat(keyed_openai).bind_tools([add]).ainvoke("y" * 40)
    assert reply.tool_calls == [
        {"name": "add", "args": {"a": 1, "b": 1}, "id": "call_0_0", "type": "tool_call"}
    ]
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] == 10  # 40 prompt chars / 4
    assert keyed_openai.last_chat().get("stream") is False


async def test_response_format_json_schema(keyed_openai: FakeOpenAIServer) -> None:
    keyed_openai.extend([{"steps": ["read", "write"]}])
    result = await chat(keyed_openai).with_structured_output(Plan).ainvoke("plan")
    assert result == Plan(steps=["read", "write"])
    fmt = keyed_openai.last_chat()["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Plan"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["properties"]["steps"]["maxItems"] == 5


async def test_wrong_api_key_is_401(keyed_openai: FakeOpenAIServer) -> None:
    with pytest.raises(openai.AuthenticationError) as info:
        await chat(keyed_openai, api_key="wrong").ainvoke("x")
    err = info.value
    assert type(err).__name__ == "OpenAIAuthenticationError"
    assert isinstance(err, ModelAuthenticationError)
    assert err.status_code == 401
    assert keyed_openai.chat_requests() and keyed_openai.remaining == 0


async def test_unknown_model_is_404(keyed_openai: FakeOpenAIServer) -> None:
    with pytest.raises(openai.NotFoundError) as info:
        [c async for c in chat(keyed_openai, model="gpt-nope").astream("x")]
    assert type(info.value).__name__ == "OpenAIModelNotFoundError"
    assert isinstance(info.value, ModelNotFoundError)
    assert "gpt-nope" in info.value.message


async def test_scripted_429(keyed_openai: FakeOpenAIServer) -> None:
    keyed_openai.extend([FakeHTTPError(429, "Rate limit reached", headers={"retry-after": "0"})])
    with pytest.raises(openai.RateLimitError) as info:
        await chat(keyed_openai).ainvoke("x")
    assert isinstance(info.value, ModelRateLimitError)
    assert info.value.status_code == 429


async def test_mid_stream_error_is_a_plain_api_error(keyed_openai: FakeOpenAIServer) -> None:
    keyed_openai.extend([FakeReply(text="partial answer", error="upstream crashed")])
    pieces: list[str] = []
    with pytest.raises(openai.APIError) as info:
        async for chunk in chat(keyed_openai).astream("x"):
            pieces.append(chunk.content)
    assert "".join(pieces) == "partial answer"
    assert info.value.message == "upstream crashed"
    # Not mapped to a LangChain ModelError, unlike HTTP-status errors.
    assert type(info.value) is openai.APIError
    assert not isinstance(info.value, ModelError)


async def test_dropped_connection(keyed_openai: FakeOpenAIServer) -> None:
    """openai 3.x raises APIConnectionError; 2.x lets httpx's RemoteProtocolError out of
    the stream. Both are a dropped stream to us (retryable, mid_stream)."""
    keyed_openai.extend([FakeReply(text="partial answer", drop=True)])
    pieces: list[str] = []
    with pytest.raises((openai.APIConnectionError, httpx.RemoteProtocolError)) as info:
        async for chunk in chat(keyed_openai).astream("x"):
            pieces.append(chunk.content)
    assert "".join(pieces) == "partial answer"
    if openai.__version__.startswith("3."):
        assert isinstance(info.value, ModelConnectionError)
    err = map_error(info.value, provider="openai", base_url=keyed_openai.url, model="m")
    assert (err.kind, err.retryable) == (ModelErrorKind.mid_stream, True)


async def test_timeout(keyed_openai: FakeOpenAIServer) -> None:
    keyed_openai.extend([FakeReply(text="too late", delay=5)])
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError) as info:
        await chat(keyed_openai, timeout=0.2).ainvoke("x")
    assert isinstance(info.value, ModelTimeoutError)
    assert time.monotonic() - start < 1.0


async def test_server_down(keyed_openai: FakeOpenAIServer) -> None:
    model = chat(keyed_openai)
    keyed_openai.stop()
    with pytest.raises(openai.APIConnectionError) as info:
        await model.ainvoke("x")
    assert isinstance(info.value, ModelConnectionError)
    keyed_openai.start()
    keyed_openai.extend(["back"])
    assert (await model.ainvoke("x")).content == "back"


def test_models_endpoint_and_auth(keyed_openai: FakeOpenAIServer) -> None:
    url = keyed_openai.url + "/v1/models"
    ok = httpx.get(url, headers={"Authorization": "Bearer k"})
    assert [m["id"] for m in ok.json()["data"]] == ["llama3.2"]
    denied = httpx.get(url)
    assert denied.status_code == 401
    assert denied.json()["error"]["code"] == "invalid_api_key"


def test_fixture_server_accepts_any_key(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.extend(["hi"])
    assert chat(fake_openai, api_key="anything").invoke("x").content == "hi"
