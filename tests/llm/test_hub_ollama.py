"""ModelHub against the fake Ollama server, through the real ChatOllama client."""

from __future__ import annotations

import asyncio
import time

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool

from soothe.engine.bus import EventBus, Subscription
from soothe.engine.config import ModelSettings
from soothe.engine.events import Usage
from soothe.engine.llm.errors import LLMError, ModelErrorKind
from soothe.engine.llm.hub import ModelHub
from soothe.engine.scope import Scope
from tests.fakes import FakeHTTPError, FakeOllamaModel, FakeOllamaServer, FakeReply
from tests.llm.conftest import Answer, fast_hub

Q = [HumanMessage(content="question")]
IDS = Scope(thread_id="t1", loop_id="l1", goal_id="g1", step_id="s1")


@tool
def write_file(path: str, content: str) -> str:
    """Write text to a file."""
    return "ok"


@tool
def search(query: str, filters: dict) -> str:
    """Search with filters."""
    return "ok"


def usage_events(sub: Subscription) -> list[Usage]:
    return [e for e in sub.drain() if isinstance(e, Usage)]


# --- streaming text and usage -------------------------------------------------------------


async def test_streams_text_and_publishes_usage(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub, bus: EventBus
) -> None:
    sub = bus.subscribe()
    fake_ollama.extend([FakeReply(text="Four is the answer.", usage=(42, 7))])
    pieces: list[str] = []
    reply = await ollama_hub.stream_text(Q, on_token=pieces.append, ids=IDS)
    assert reply.text == "Four is the answer."
    assert pieces == ["Four ", "is ", "the ", "answer."]
    assert reply.usage_metadata is not None
    assert (reply.usage_metadata["input_tokens"], reply.usage_metadata["output_tokens"]) == (42, 7)
    [event] = usage_events(sub)
    assert (event.input_tokens, event.output_tokens) == (42, 7)
    assert (event.thread_id, event.loop_id, event.goal_id, event.step_id) == (
        "t1",
        "l1",
        "g1",
        "s1",
    )
    assert event.model == "llama3.2"
    assert event.prompt_chars == len("question")
    assert event.duration_s > 0
    request = fake_ollama.last_chat()
    assert request["options"]["num_ctx"] == 8192
    assert request["options"]["temperature"] == 0.2


async def test_usage_is_aggregated_per_thread_goal_and_step(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend([FakeReply(text="a", usage=(10, 1)), FakeReply(text="b", usage=(20, 2))])
    fake_ollama.extend([FakeReply(text="c", usage=(5, 5))])
    await ollama_hub.stream_text(Q, ids=IDS)
    await ollama_hub.stream_text(Q, ids={"thread_id": "t1", "goal_id": "g1", "step_id": "s2"})
    await ollama_hub.stream_text(Q, ids={"thread_id": "t2"}, role="fast")
    usage = ollama_hub.usage
    assert usage.calls == 3
    assert (usage.input_tokens, usage.output_tokens) == (35, 8)
    assert usage.thread("t1").input_tokens == 30
    assert usage.goal("g1").calls == 2
    assert usage.step("g1", "s1").output_tokens == 1
    assert usage.step("g1", "s2").output_tokens == 2
    assert usage.by_role["fast"].calls == 1
    assert usage.prompt_chars == 3 * len("question")


# --- tool calls ------------------------------------------------------------------------------


async def test_tool_calls_come_back_parsed_and_typed(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend(
        [
            FakeReply(
                tool_calls=[
                    {"name": "write_file", "args": {"path": "a.json", "content": '{"x": [1, 2]}'}},
                    {"name": "search", "args": {"query": "q", "filters": '{"year": 2024}'}},
                    {"name": "rm_rf", "args": {}},
                ]
            )
        ]
    )
    reply = await ollama_hub.stream_text(Q, tools=[write_file, search])
    sent = fake_ollama.last_chat()
    assert [t["function"]["name"] for t in sent["tools"]] == ["write_file", "search"]
    calls = {tc["name"]: tc for tc in reply.tool_calls}
    # ChatOllama turns the JSON-looking content into a dict; it is put back to text.
    assert calls["write_file"]["args"] == {"path": "a.json", "content": '{"x": [1, 2]}'}
    # A JSON string inside an object-typed argument becomes the object.
    assert calls["search"]["args"] == {"query": "q", "filters": {"year": 2024}}
    assert all(tc["id"] for tc in reply.tool_calls)
    assert [tc["name"] for tc in reply.invalid_tool_calls] == ["rm_rf"]


async def test_model_without_tool_support(
    fake_ollama: FakeOllamaServer, ollama_settings: ModelSettings, bus: EventBus
) -> None:
    fake_ollama.add_model(FakeOllamaModel("gemma:2b", tools=False))
    hub = fast_hub(ollama_settings.model_copy(update={"name": "gemma:2b"}), bus)
    with pytest.raises(LLMError) as info:
        await hub.stream_text(Q, tools=[write_file])
    assert info.value.kind == ModelErrorKind.no_tool_support
    assert "gemma:2b" in info.value.message


# --- structured output -------------------------------------------------------------------------


async def test_structured_uses_native_format_and_parses_strictly(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend(['{"answer": "4", "kind": "fact", "tags": ["math"]}'])
    result = await ollama_hub.structured(Q, Answer, ids=IDS)
    assert result.value == Answer(answer="4", kind="fact", tags=["math"])
    assert (result.attempts, result.repaired, result.error) == (1, False, None)
    request = fake_ollama.last_chat()
    assert request["format"]["properties"]["answer"]["maxLength"] == 80
    assert request["format"]["required"] == ["answer", "kind"]
    assert "JSON schema" in request["messages"][0]["content"]


@pytest.mark.parametrize(
    "raw",
    [
        '```json\n{"answer": "4", "kind": "fact"}\n```',
        'Sure, here it is: {"answer": "4", "kind": "fact"} Anything else?',
        '{"answer": "4", "kind": "fact", "tags": ["a",],}',
        "{'answer': '4', 'kind': 'fact'}",
        '{"answer": "4", "kind": "fact", "tags": ["a", "b',
    ],
    ids=["fence", "prose", "trailing-comma", "single-quotes", "truncated"],
)
async def test_structured_repairs_near_misses_locally(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub, raw: str
) -> None:
    fake_ollama.extend([raw])
    result = await ollama_hub.structured(Q, Answer)
    assert result.value is not None
    assert result.value.answer == "4"
    assert result.repaired
    assert result.attempts == 1
    assert len(fake_ollama.chat_requests()) == 1


async def test_structured_reasks_with_the_validation_errors(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend(['{"answer": "4", "kind": "guess"}', '{"answer": "4", "kind": "fact"}'])
    result = await ollama_hub.structured(Q, Answer)
    assert result.value == Answer(answer="4", kind="fact")
    assert result.attempts == 2
    assert ollama_hub.usage.calls == 2
    second = fake_ollama.chat_requests()[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": '{"answer": "4", "kind": "guess"}'}
    assert second[-1]["role"] == "user"
    assert "kind: Input should be 'fact' or 'opinion'" in second[-1]["content"]


async def test_structured_reasks_when_cut_off_at_the_token_limit(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend(
        [
            FakeReply(text='{"answer": "4", "kind": "fact", "tags": ["a"', done_reason="length"),
            '{"answer": "4", "kind": "fact", "tags": ["a", "b"]}',
        ]
    )
    result = await ollama_hub.structured(Q, Answer)
    assert result.value is not None
    assert result.value.tags == ["a", "b"]
    assert result.attempts == 2
    assert "token limit" in fake_ollama.chat_requests()[1]["messages"][-1]["content"]


async def test_structured_gives_up_with_a_typed_failure(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend(["I cannot do that.", '{"answer": 4}', '{"kind": "fact"}'])
    result = await ollama_hub.structured(Q, Answer, ids=IDS)
    assert result.value is None
    assert result.attempts == 3  # one ask + the default two re-asks
    assert result.error is not None
    assert "\n" not in result.error
    assert "no valid Answer" in result.error
    assert "answer: Field required" in result.error
    assert result.raw == '{"kind": "fact"}'
    assert ollama_hub.usage.step("g1", "s1").calls == 3


async def test_structured_reask_count_is_configurable(
    fake_ollama: FakeOllamaServer, ollama_settings: ModelSettings, bus: EventBus
) -> None:
    hub = fast_hub(ollama_settings.model_copy(update={"structured_retries": 0}), bus)
    fake_ollama.extend(["nope"])
    result = await hub.structured(Q, Answer)
    assert (result.value, result.attempts) == (None, 1)


# --- errors -------------------------------------------------------------------------------------


async def test_model_not_pulled(
    fake_ollama: FakeOllamaServer, ollama_settings: ModelSettings, bus: EventBus
) -> None:
    hub = fast_hub(ollama_settings.model_copy(update={"name": "qwen2.5:7b"}), bus)
    with pytest.raises(LLMError) as info:
        await hub.stream_text(Q)
    assert info.value.kind == ModelErrorKind.model_not_found
    assert "ollama pull qwen2.5:7b" in info.value.message
    with pytest.raises(LLMError) as info:
        await hub.structured(Q, Answer)
    assert info.value.kind == ModelErrorKind.model_not_found


async def test_server_down(dead_url: str, bus: EventBus) -> None:
    hub = fast_hub(ModelSettings(provider="ollama", name="llama3.2", base_url=dead_url), bus)
    with pytest.raises(LLMError) as info:
        await hub.stream_text(Q)
    assert info.value.kind == ModelErrorKind.unreachable
    assert dead_url in info.value.message
    assert "ollama serve" in info.value.message
    assert hub.usage.calls == 1  # not retried: a retry cannot start a server


async def test_error_mid_stream_after_tokens_is_not_retried(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend([FakeReply(text="Half an answer", error="model runner crashed"), "unused"])
    pieces: list[str] = []
    with pytest.raises(LLMError) as info:
        await ollama_hub.stream_text(Q, on_token=pieces.append)
    assert info.value.kind == ModelErrorKind.mid_stream
    assert "model runner crashed" in info.value.message
    assert "".join(pieces) == "Half an answer"
    assert fake_ollama.remaining == 1


async def test_dropped_stream_before_any_token_is_retried(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend([FakeReply(drop=True), FakeReply(error="boom"), "fine"])
    reply = await ollama_hub.stream_text(Q)
    assert reply.text == "fine"
    assert ollama_hub.usage.calls == 3


async def test_busy_server_is_retried_with_backoff_then_reported(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend([FakeHTTPError(503, "server busy")] * 3)
    with pytest.raises(LLMError) as info:
        await ollama_hub.stream_text(Q)
    assert info.value.kind == ModelErrorKind.overloaded
    assert len(fake_ollama.chat_requests()) == 3  # the first try and two retries


async def test_slow_server_hits_the_timeout(
    fake_ollama: FakeOllamaServer, ollama_settings: ModelSettings, bus: EventBus
) -> None:
    hub = fast_hub(ollama_settings.model_copy(update={"timeout": 0.3}), bus)
    fake_ollama.extend([FakeReply(text="late", delay=3)])
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        await hub.structured(Q, Answer)
    assert info.value.kind == ModelErrorKind.timeout
    assert "0.3s" in info.value.message
    assert time.monotonic() - started < 2


# --- cancellation --------------------------------------------------------------------------------


def open_connections(server: FakeOllamaServer) -> int:
    httpd = server._httpd
    assert httpd is not None
    with httpd.connections_lock:
        return len(httpd.connections)


async def test_cancelling_closes_the_stream_promptly(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend([FakeReply(text="word " * 400, chunk_delay=0.02)])
    first = asyncio.Event()
    task = asyncio.create_task(ollama_hub.stream_text(Q, on_token=lambda _: first.set()))
    await asyncio.wait_for(first.wait(), 3)
    assert open_connections(fake_ollama) == 1
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 1
    deadline = time.monotonic() + 1
    while open_connections(fake_ollama) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert open_connections(fake_ollama) == 0, "the server still streams to a cancelled call"
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert ollama_hub.usage.calls == 1


async def test_hub_aclose_closes_the_clients(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend(["hi"])
    await ollama_hub.stream_text(Q)
    await ollama_hub.aclose()
    client = ollama_hub.chat_model()._async_client._client  # type: ignore[attr-defined]
    assert client.is_closed


async def test_a_failing_token_callback_is_not_reported_as_a_model_error(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend([FakeReply(text="word " * 400, chunk_delay=0.02)])

    def broken(_: str) -> None:
        raise KeyError("widget gone")

    with pytest.raises(KeyError, match="widget gone"):
        await ollama_hub.stream_text(Q, on_token=broken)
    assert ollama_hub.usage.calls == 1
    # The abandoned stream was closed before stream_text returned, by no leftover task.
    assert asyncio.all_tasks() == {asyncio.current_task()}
    deadline = time.monotonic() + 1
    while open_connections(fake_ollama) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert open_connections(fake_ollama) == 0
