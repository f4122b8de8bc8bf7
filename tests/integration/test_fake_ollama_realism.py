"""The fake Ollama misbehaves as a real one does, seen through the real ChatOllama client:
silent head truncation to the loaded window (prompt_eval_count = what was kept),
thinking models (trace counts toward num_predict, `think` refusals, inline <think>),
tool calls written as text and a stream that never ends while thinking.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import ollama
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_ollama import ChatOllama

from tests.fakes import (
    TEXT_CALL_SHAPES,
    FakeOllamaModel,
    FakeOllamaServer,
    FakeReply,
    text_call,
)
from tests.fakes.ollama_server import fit_to_window, prompt_tokens

RULES = "RULES: answer with a JSON object only. " * 40  # 1,560 chars, 390 tokens


@tool
def read_file(path: str) -> str:
    """Read a file of the workspace and return its text."""
    return ""


def chat(server: FakeOllamaServer, model: str = "llama3.2", **kw: Any) -> ChatOllama:
    return ChatOllama(base_url=server.url, model=model, client_kwargs={"timeout": 5}, **kw)


def seen_by_model(bodies: list[dict[str, Any]]) -> Any:
    def responder(body: dict[str, Any]) -> str:
        bodies.append(body)
        return "ok"

    return responder


# --- the window ---------------------------------------------------------------------------


async def test_a_prompt_within_the_window_is_seen_whole() -> None:
    bodies: list[dict[str, Any]] = []
    with FakeOllamaServer(responder=seen_by_model(bodies)) as s:
        reply = await chat(s, num_ctx=2048).ainvoke([SystemMessage(RULES), HumanMessage("hi")])
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] == (len(RULES) + 2 + 3) // 4
    assert bodies == s.chat_requests()
    assert not s.truncations()


async def test_an_overlong_prompt_loses_its_system_prompt_first_silently() -> None:
    bodies: list[dict[str, Any]] = []
    request = "Summarise README.md. " + "x" * 9000  # 2,256 tokens
    with FakeOllamaServer(responder=seen_by_model(bodies)) as s:
        reply = await chat(s, num_ctx=2048).ainvoke([SystemMessage(RULES), HumanMessage(request)])
    sent = s.last_chat()
    # The client gets a normal reply: no error, done_reason stop, and the only sign is
    # prompt_eval_count, which is the window, not what was sent.
    assert reply.content == "ok"
    assert reply.response_metadata["done_reason"] == "stop"
    assert reply.response_metadata["prompt_eval_count"] == 2048
    assert prompt_tokens(sent) > 2048
    assert [m["content"] for m in sent["messages"]] == [RULES, request]  # what was SENT
    (record,) = s.truncations()
    assert (record.window, record.kept_tokens) == (2048, 2048)
    assert record.sent_tokens == (len(RULES) + len(request) + 3) // 4
    # The model saw the end of the request and nothing of the rules.
    assert bodies == [record.kept]
    kept = record.kept["messages"]
    assert [m["role"] for m in kept] == ["user"]
    assert request.endswith(kept[0]["content"]) and len(kept[0]["content"]) == 2048 * 4
    assert "RULES" not in json.dumps(kept)


async def test_old_messages_go_whole_before_text_is_cut_and_system_messages_stay() -> None:
    old = "old turn " * 500  # 1,125 tokens each
    messages = [
        SystemMessage("You are the planner."),
        HumanMessage(old),
        AIMessage(old),
        HumanMessage("the new request"),
    ]
    with FakeOllamaServer(["ok"]) as s:
        await chat(s, num_ctx=2048).ainvoke(messages)
    (record,) = s.truncations()
    assert [(m["role"], m["content"]) for m in record.kept["messages"]] == [
        ("system", "You are the planner."),
        ("assistant", old),
        ("user", "the new request"),
    ]
    assert record.kept_tokens <= 2048


def test_a_tool_reply_is_never_kept_without_its_call() -> None:
    call = {"function": {"name": "read_file", "arguments": {"path": "a"}}}
    body = {
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "u" * 4000},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": "t" * 4000},
            {"role": "user", "content": "go on"},
        ]
    }
    kept = fit_to_window(body, 1500)["messages"]
    assert [m["role"] for m in kept] == ["system", "assistant", "tool", "user"]


async def test_tool_specs_count_and_are_cut_after_the_system_prompt() -> None:
    bodies: list[dict[str, Any]] = []
    with FakeOllamaServer(responder=seen_by_model(bodies)) as s:
        model = chat(s, num_ctx=600).bind_tools([read_file])
        await model.ainvoke([SystemMessage(RULES), HumanMessage("y" * 4000)])
    sent = s.last_chat()
    spec = len(json.dumps(sent["tools"][0], ensure_ascii=False))
    assert s.chat_log[0].sent_tokens == (len(RULES) + 4000 + spec + 3) // 4
    (kept,) = bodies
    assert kept["tools"] == [] and [m["role"] for m in kept["messages"]] == ["user"]


async def test_the_window_is_num_ctx_as_sent_else_the_server_default_capped_by_the_model() -> None:
    models = [
        FakeOllamaModel("llama3.2"),  # trained 8192, server default 4096
        FakeOllamaModel("tiny", context_length=2048),
        FakeOllamaModel("pinned", max_num_ctx=1024),  # a server that loads less than asked
    ]
    with FakeOllamaServer(["a", "b", "c", "d"], models=models) as s:
        await chat(s).ainvoke("hi")
        await chat(s, num_ctx=16384).ainvoke("hi")
        await chat(s, model="tiny", num_ctx=8192).ainvoke("hi")
        believed = await chat(s, model="pinned", num_ctx=2048).ainvoke("z" * 6000)
    assert [r.window for r in s.chat_log] == [4096, 8192, 2048, 1024]
    assert [r.sent["options"].get("num_ctx") for r in s.chat_log] == [None, 16384, 8192, 2048]
    # The client asked for 2,048 and sent 1,500 tokens; the server evaluated 1,024.
    assert believed.response_metadata["prompt_eval_count"] == 1024


# --- thinking models ----------------------------------------------------------------------


def thinker(**kw: Any) -> FakeOllamaModel:
    return FakeOllamaModel("qwen3", thinking=True, **kw)


async def test_api_show_lists_the_thinking_capability() -> None:
    with FakeOllamaServer(models=["llama3.2", thinker()]) as s:
        client = ollama.AsyncClient(host=s.url)
        plain = await client.show("llama3.2")
        thinking = await client.show("qwen3")
    assert plain.capabilities == ["completion", "tools"]
    assert thinking.capabilities == ["completion", "tools", "thinking"]


async def test_a_thinking_model_thinks_unless_told_not_to_and_the_trace_eats_num_predict() -> None:
    script = [FakeReply(text="The answer is 4.")] * 3
    with FakeOllamaServer(script, models=[thinker(default_thinking_tokens=700)]) as s:
        # No `think` sent (ChatOllama's default): a 700-token trace against 384 tokens.
        silent = await chat(s, model="qwen3", num_predict=384).ainvoke("2+2?")
        shown = await chat(s, model="qwen3", num_predict=1024, reasoning=True).ainvoke("2+2?")
        off = await chat(s, model="qwen3", num_predict=384, reasoning=False).ainvoke("2+2?")
    assert "think" not in s.chat_requests()[0]
    assert silent.content == ""
    assert silent.response_metadata["done_reason"] == "length"
    assert silent.response_metadata["eval_count"] == 384
    assert shown.content == "The answer is 4."
    assert shown.additional_kwargs["reasoning_content"] == "hmm " * 700
    assert off.content == "The answer is 4." and "reasoning_content" not in off.additional_kwargs
    assert s.chat_requests()[2]["think"] is False


async def test_scripted_thinking_is_dropped_on_think_false_unless_the_model_ignores_it() -> None:
    script = [
        FakeReply(text="A", thinking=["secret ", "plan"]),
        FakeReply(text="B", thinking=["secret ", "plan"], think_anyway=True),
    ]
    with FakeOllamaServer(script, models=[thinker()]) as s:
        obeys = await chat(s, model="qwen3", reasoning=False).ainvoke("x")
        client = ollama.AsyncClient(host=s.url)
        user = [{"role": "user", "content": "x"}]
        ignores = await client.chat("qwen3", messages=user, think=False)
    assert obeys.content == "A" and obeys.usage_metadata["output_tokens"] == 1  # type: ignore[index]
    assert ignores.message.thinking == "secret plan" and ignores.message.content == "B"


async def test_think_on_a_model_without_the_capability_is_refused_as_ollama_does() -> None:
    with FakeOllamaServer(["fine", "unused"]) as s:
        assert (await chat(s, reasoning=False).ainvoke("x")).content == "fine"
        with pytest.raises(ollama.ResponseError) as refused:
            await chat(s, model="llama3.2", reasoning=True).ainvoke("x")
        client = ollama.AsyncClient(host=s.url)
        with pytest.raises(ollama.ResponseError) as level:
            await client.chat("llama3.2", messages=[{"role": "user", "content": "x"}], think="low")
        async with httpx.AsyncClient(base_url=s.url) as raw:
            bad = await raw.post(
                "/api/chat", json={"model": "llama3.2", "messages": [], "think": "max"}
            )
    assert (refused.value.status_code, refused.value.error) == (
        400,
        '"llama3.2" does not support thinking',
    )
    assert level.value.error == '"llama3.2" does not support thinking'
    assert bad.status_code == 400
    assert bad.json()["error"].startswith('invalid think value: "max"')
    assert s.remaining == 1  # refused requests consume nothing


async def test_inline_think_puts_the_trace_in_the_content() -> None:
    script = [
        FakeReply(text="Paris.", thinking=["The capital ", "of France."], inline_think=True),
        FakeReply(text="Paris.", inline_think="Old server trace."),
    ]
    models = [thinker(), FakeOllamaModel("deepseek-r1")]  # an older server: no capability
    with FakeOllamaServer(script, models=models) as s:
        qwen = await chat(s, model="qwen3").ainvoke("capital?")
        old = await chat(s, model="deepseek-r1").ainvoke("capital?")
    assert qwen.content == "<think>The capital of France.</think>\n\nParis."
    assert old.content == "<think>Old server trace.</think>\n\nParis."


async def test_an_endless_stream_of_a_thinking_model_thinks_first_then_never_ends() -> None:
    reply = FakeReply(text="", endless=True, endless_thinking=True, chunk_delay=0.001)
    with FakeOllamaServer([reply], models=[thinker(default_thinking_tokens=3)]) as s:
        thinking: list[str] = []
        async for chunk in chat(s, model="qwen3", num_predict=10, reasoning=True).astream("x"):
            thinking.append(chunk.additional_kwargs.get("reasoning_content", ""))
            if len(thinking) == 50:
                break
        deadline = time.monotonic() + 5
        while s.endless_tokens < 47 and time.monotonic() < deadline:
            time.sleep(0.01)
    # The trace first, then thinking tokens past num_predict=10: the client must stop it.
    assert thinking[:4] == ["hmm ", "hmm ", "hmm ", "tok "]
    assert s.endless_tokens >= 47


# --- tool calls written as text -----------------------------------------------------------


@pytest.mark.parametrize("shape", TEXT_CALL_SHAPES)
async def test_text_calls_reach_the_client_as_content_not_tool_calls(shape: str) -> None:
    written = text_call(shape, "read_file", {"path": "notes.txt"})  # type: ignore[arg-type]
    with FakeOllamaServer([written]) as s:
        reply = await chat(s).bind_tools([read_file]).ainvoke("read notes.txt")
    assert isinstance(reply, AIMessage)
    assert reply.content == written and reply.tool_calls == []
    assert s.last_chat()["tools"][0]["function"]["name"] == "read_file"


def test_text_call_shapes_are_exact() -> None:
    args = {"path": "a.txt"}
    call = '{"name": "read_file", "arguments": {"path": "a.txt"}}'
    assert text_call("bare", "read_file", args) == call
    assert text_call("fenced", "read_file", args) == f"```json\n{call}\n```"
    assert text_call("tool_call", "read_file", args) == f"<tool_call>\n{call}\n</tool_call>"
    assert text_call("llama", "read_file", args) == (
        '{"type": "function", "name": "read_file", "parameters": {"path": "a.txt"}}'
    )
    with pytest.raises(ValueError, match="unknown text call shape"):
        text_call("xml", "read_file", args)  # type: ignore[arg-type]
