"""ModelHub against the fake OpenAI-compatible server, through the real ChatOpenAI."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from soothe.engine.bus import EventBus
from soothe.engine.config import ModelSettings
from soothe.engine.events import Usage
from soothe.engine.llm.errors import LLMError, ModelErrorKind
from soothe.engine.llm.hub import ModelHub
from tests.fakes import FakeHTTPError, FakeOpenAIServer, FakeReply
from tests.llm.conftest import Answer, fast_hub

Q = [HumanMessage(content="question")]


@tool
def search(query: str, filters: dict) -> str:
    """Search with filters."""
    return "ok"


async def test_streams_text_with_usage(
    fake_openai: FakeOpenAIServer, openai_hub: ModelHub, bus: EventBus
) -> None:
    sub = bus.subscribe()
    fake_openai.extend([FakeReply(text="Four it is.", usage=(30, 4))])
    pieces: list[str] = []
    reply = await openai_hub.stream_text(Q, on_token=pieces.append, ids={"thread_id": "t9"})
    assert reply.text == "Four it is."
    assert "".join(pieces) == "Four it is."
    assert fake_openai.last_chat()["stream_options"] == {"include_usage": True}
    [event] = [e for e in sub.drain() if isinstance(e, Usage)]
    assert (event.input_tokens, event.output_tokens, event.thread_id) == (30, 4, "t9")


async def test_tool_calls_streamed_as_argument_pieces(
    fake_openai: FakeOpenAIServer, openai_hub: ModelHub
) -> None:
    fake_openai.extend(
        [
            FakeReply(
                tool_calls=[
                    {"name": "search", "args": {"query": "q", "filters": '{"lang": "en"}'}},
                    {"name": "search", "args": '{"query": "broken'},
                ]
            )
        ]
    )
    reply = await openai_hub.stream_text(Q, tools=[search])
    assert reply.tool_calls == [
        {
            "name": "search",
            "args": {"query": "q", "filters": {"lang": "en"}},
            "id": "call_0_0",
            "type": "tool_call",
        }
    ]
    # LangChain would have "repaired" the cut-off arguments to {"query": "broken"}.
    [invalid] = reply.invalid_tool_calls
    assert invalid["args"] == '{"query": "broken'
    assert "not complete JSON" in (invalid["error"] or "")


async def test_structured_sends_json_schema_response_format(
    fake_openai: FakeOpenAIServer, openai_hub: ModelHub
) -> None:
    fake_openai.extend(['{"answer": "4", "kind": "opinion"}'])
    result = await openai_hub.structured(Q, Answer)
    assert result.value == Answer(answer="4", kind="opinion")
    request = fake_openai.last_chat()
    assert request["stream"] is True
    response_format = request["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "Answer"
    assert response_format["json_schema"]["strict"] is False
    assert response_format["json_schema"]["schema"]["properties"]["answer"]["maxLength"] == 80


async def test_structured_cut_off_reply_is_reasked_not_raised(
    fake_openai: FakeOpenAIServer, openai_hub: ModelHub
) -> None:
    fake_openai.extend(
        [
            FakeReply(text='{"answer": "4", "kind": "fa', done_reason="length"),
            "```json\n{'answer': '4', 'kind': 'fact'}\n```",
        ]
    )
    result = await openai_hub.structured(Q, Answer)
    assert result.value == Answer(answer="4", kind="fact")
    assert (result.attempts, result.repaired) == (2, True)
    assert "token limit" in fake_openai.chat_requests()[1]["messages"][-1]["content"]


async def test_structured_gives_up(fake_openai: FakeOpenAIServer, openai_hub: ModelHub) -> None:
    fake_openai.extend(["no", "still no", "never"])
    result = await openai_hub.structured(Q, Answer)
    assert (result.value, result.attempts) == (None, 3)
    assert result.error is not None
    assert "not a JSON object" in result.error


async def test_bad_credentials(bus: EventBus) -> None:
    with FakeOpenAIServer(api_key="sk-right") as server:
        settings = ModelSettings(
            provider="openai", name="llama3.2", base_url=f"{server.url}/v1", api_key="sk-wrong"
        )
        with pytest.raises(LLMError) as info:
            await fast_hub(settings, bus).stream_text(Q)
    assert info.value.kind == ModelErrorKind.bad_credentials
    assert "OPENAI_API_KEY" in info.value.message


async def test_unknown_model(
    fake_openai: FakeOpenAIServer, openai_settings: ModelSettings, bus: EventBus
) -> None:
    hub = fast_hub(openai_settings.model_copy(update={"name": "gpt-9"}), bus)
    with pytest.raises(LLMError) as info:
        await hub.stream_text(Q)
    assert info.value.kind == ModelErrorKind.model_not_found
    assert "'gpt-9'" in info.value.message


async def test_no_tool_support(fake_openai: FakeOpenAIServer, openai_hub: ModelHub) -> None:
    fake_openai.extend([FakeHTTPError(400, "llama3.2 does not support tools")])
    with pytest.raises(LLMError) as info:
        await openai_hub.stream_text(Q, tools=[search])
    assert info.value.kind == ModelErrorKind.no_tool_support


async def test_rate_limit_is_retried_then_succeeds(
    fake_openai: FakeOpenAIServer, openai_hub: ModelHub
) -> None:
    fake_openai.extend([FakeHTTPError(429, "Rate limit reached"), "ok now"])
    reply = await openai_hub.stream_text(Q)
    assert reply.text == "ok now"
    assert openai_hub.usage.calls == 2


async def test_server_down(dead_url: str, bus: EventBus) -> None:
    settings = ModelSettings(provider="openai", name="m", base_url=f"{dead_url}/v1")
    with pytest.raises(LLMError) as info:
        await fast_hub(settings, bus).stream_text(Q)
    assert info.value.kind == ModelErrorKind.unreachable
    assert dead_url in info.value.message


async def test_error_mid_stream(fake_openai: FakeOpenAIServer, openai_hub: ModelHub) -> None:
    fake_openai.extend([FakeReply(text="partial", error="backend exploded")])
    pieces: list[str] = []
    with pytest.raises(LLMError) as info:
        await openai_hub.stream_text(Q, on_token=pieces.append)
    assert info.value.kind == ModelErrorKind.mid_stream
    assert "backend exploded" in info.value.message
    assert pieces == ["partial"]


async def test_slow_server_hits_the_timeout(
    fake_openai: FakeOpenAIServer, openai_settings: ModelSettings, bus: EventBus
) -> None:
    hub = fast_hub(openai_settings.model_copy(update={"timeout": 0.3}), bus)
    fake_openai.extend([FakeReply(text="late", delay=3)])
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        await hub.stream_text(Q)
    assert info.value.kind == ModelErrorKind.timeout
    assert time.monotonic() - started < 2


async def test_cancelling_closes_the_stream_promptly(
    fake_openai: FakeOpenAIServer, openai_hub: ModelHub
) -> None:
    fake_openai.extend([FakeReply(text="word " * 400, chunk_delay=0.02)])
    first = asyncio.Event()
    task = asyncio.create_task(openai_hub.stream_text(Q, on_token=lambda _: first.set()))
    await asyncio.wait_for(first.wait(), 3)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 1
    httpd = fake_openai._httpd
    assert httpd is not None
    deadline = time.monotonic() + 1
    while httpd.connections and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert not httpd.connections, "the server still streams to a cancelled call"
    assert asyncio.all_tasks() == {asyncio.current_task()}


class _SwallowsOneCancel:
    """A model whose stream loses the first cancellation that reaches it and goes on, as
    the HTTP stack's anyio cancel scopes did under load."""

    def __init__(self) -> None:
        self.chunks = 0

    async def astream(self, messages: Any) -> Any:
        from langchain_core.messages import AIMessageChunk

        swallowed = False
        for _ in range(400):
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed = True  # lost: the stream goes on
            self.chunks += 1
            yield AIMessageChunk(content="word ")


async def test_a_cancellation_the_stream_lost_still_stops_the_call(
    openai_hub: ModelHub,
) -> None:
    model = _SwallowsOneCancel()
    first = asyncio.Event()
    call = openai_hub._call(model, Q, role="default", ids=None, on_token=lambda _: first.set())  # type: ignore[arg-type]
    task = asyncio.create_task(call)
    await asyncio.wait_for(first.wait(), 3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(asyncio.shield(task), 3)
    assert model.chunks < 10  # stopped at the next chunk, not after 400
