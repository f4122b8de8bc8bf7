"""Tool calls written as text (engine/llm/textcalls.py): the four shapes small models and
templates without tool support write into ``content`` become native calls, through the
real ChatOllama client against the fake Ollama; anything else stays text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from soothe.engine.agent.tools import tool_specs
from soothe.engine.llm.hub import ModelHub
from soothe.engine.llm.textcalls import TEXT_CALLS_KEY, parse_text_calls
from soothe.engine.llm.toolcalls import normalize_tool_calls, tool_parameters
from tests.fakes import FakeOllamaServer, FakeOpenAIServer, FakeReply

Q = [HumanMessage(content="read notes.txt")]
READ = {"path": "notes.txt"}
ARGS = json.dumps(READ)

SHAPES = {
    "bare": '{"name": "read_file", "arguments": {"path": "notes.txt"}}',
    "bare, parameters": '{"name": "read_file", "parameters": {"path": "notes.txt"}}',
    "fenced json": '```json\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n```',
    "fenced": '```\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n```',
    "tool_call tag": '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}'
    "\n</tool_call>",
    "llama 3.2": '{"type": "function", "name": "read_file", "parameters": {"path": "notes.txt"}}',
    "openai-ish": '{"type": "function", "function": {"name": "read_file", "arguments": '
    + json.dumps(ARGS)
    + "}}",
    "arguments as a JSON string": '{"name": "read_file", "arguments": ' + json.dumps(ARGS) + "}",
    "unclosed tool_call (a stop token)": '<tool_call>{"name": "read_file", "arguments": '
    '{"path": "notes.txt"}}',
}


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
async def test_each_shape_becomes_a_native_call(
    text: str, fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend([FakeReply(text=text)])
    pieces: list[str] = []
    reply = await ollama_hub.stream_text(Q, tools=tool_specs(), on_token=pieces.append)
    assert "".join(pieces) == text  # it streamed as it came
    assert fake_ollama.last_chat()["tools"]  # tools were offered
    [tc] = reply.tool_calls
    assert (tc["name"], tc["args"]) == ("read_file", READ)
    assert tc["id"].startswith("call_")
    assert reply.additional_kwargs[TEXT_CALLS_KEY] == [tc["id"]]
    assert reply.text == ""  # the call's text is no answer
    assert not reply.invalid_tool_calls


async def test_an_openai_compatible_server_s_text_call_too(
    fake_openai: FakeOpenAIServer, openai_hub: ModelHub
) -> None:
    fake_openai.extend([FakeReply(text=SHAPES["tool_call tag"])])
    reply = await openai_hub.stream_text(Q, tools=tool_specs())
    assert [(tc["name"], tc["args"]) for tc in reply.tool_calls] == [("read_file", READ)]
    assert reply.text == ""


async def test_several_tagged_calls_run_in_order(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    text = (
        '<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</tool_call>\n'
        '<tool_call>{"name": "grep", "arguments": {"pattern": "TODO", "path": "src"}}'
        "</tool_call>"
    )
    fake_ollama.extend([FakeReply(text=text)])
    reply = await ollama_hub.stream_text(Q, tools=tool_specs())
    assert [(tc["name"], tc["args"]) for tc in reply.tool_calls] == [
        ("read_file", {"path": "a.txt"}),
        ("grep", {"pattern": "TODO", "path": "src"}),
    ]
    assert len({tc["id"] for tc in reply.tool_calls}) == 2
    assert reply.text == ""


async def test_argument_types_are_put_back_like_a_native_calls(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    text = '{"name": "read_file", "arguments": {"path": "a.txt", "limit": "2"}}'
    fake_ollama.extend([FakeReply(text=text)])
    reply = await ollama_hub.stream_text(Q, tools=tool_specs())
    assert reply.tool_calls[0]["args"] == {"path": "a.txt", "limit": 2}


async def test_a_leading_thinking_block_is_kept_as_the_text(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    text = "<think>I should read it.</think>\n" + SHAPES["bare"]
    fake_ollama.extend([FakeReply(text=text)])
    reply = await ollama_hub.stream_text(Q, tools=tool_specs())
    assert [tc["name"] for tc in reply.tool_calls] == ["read_file"]
    assert "read_file" not in reply.text


async def test_cut_reply_with_an_unclosed_tag_stays_text(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    text = '<tool_call>{"name": "read_file", "arguments": {"path": "notes.txt"}}'
    fake_ollama.extend([FakeReply(text=text, done_reason="length")])
    reply = await ollama_hub.stream_text(Q, tools=tool_specs())
    assert not reply.tool_calls
    assert reply.text.startswith(text)


async def test_without_tools_offered_a_call_stays_text(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend([FakeReply(text=SHAPES["bare"])])
    reply = await ollama_hub.stream_text(Q)
    assert not reply.tool_calls
    assert reply.text == SHAPES["bare"]


STAYS_TEXT = {
    "prose around the JSON": 'I will call {"name": "read_file", "arguments": {"path": "a"}} now.',
    "prose after a fence": '```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```\nDone.',
    "prose before a tag": 'First: <tool_call>{"name": "read_file", "arguments": {"path": "a"}}'
    "</tool_call>",
    "two bare objects": '{"name": "read_file", "arguments": {"path": "a"}}\n'
    '{"name": "read_file", "arguments": {"path": "b"}}',
    "a list of calls": '[{"name": "read_file", "arguments": {"path": "a"}}]',
    "a tool not offered": '{"name": "delete_all", "arguments": {}}',
    "a required argument missing": '{"name": "read_file", "arguments": {"file": "a"}}',
    "a path given as an object": '{"name": "read_file", "arguments": {"path": {"p": "a"}}}',
    "a path given as a number": '{"name": "read_file", "arguments": {"path": 3}}',
    "a number that is not one": '{"name": "read_file", "arguments": {"path": "a", "limit": "x"}}',
    "no arguments key": '{"name": "read_file"}',
    "both argument keys": '{"name": "read_file", "arguments": {"path": "a"}, '
    '"parameters": {"path": "a"}}',
    "another key beside the call": '{"name": "read_file", "arguments": {"path": "a"}, "why": 1}',
    "arguments that are not an object": '{"name": "read_file", "arguments": ["a"]}',
    "arguments string that is not JSON": '{"name": "read_file", "arguments": "path=a"}',
    "a type other than function": '{"type": "tool", "name": "read_file", "parameters": {}}',
    "data that names a tool": '{"name": "read_file", "description": "reads files"}',
    "a JSON answer": '{"answer": "the first item is tidy the docs"}',
    "broken JSON": '{"name": "read_file", "arguments": {"path": "a"}',
    "one good one bad tag": '<tool_call>{"name": "read_file", "arguments": {"path": "a"}}'
    '</tool_call><tool_call>{"name": "nope", "arguments": {}}</tool_call>',
    "a fence of another language": '```python\n{"name": "read_file", "arguments": {"path": "a"}}'
    "\n```",
}


@pytest.mark.parametrize("text", STAYS_TEXT.values(), ids=STAYS_TEXT.keys())
def test_anything_else_stays_text(text: str) -> None:
    message = AIMessage(content=text)
    out = normalize_tool_calls(message, tool_specs(), coerce=False)
    assert not out.tool_calls and not out.invalid_tool_calls
    assert out.text == text
    assert TEXT_CALLS_KEY not in out.additional_kwargs


def test_a_native_call_wins_over_text() -> None:
    native = {"name": "list_dir", "args": {"path": "."}, "id": "n1", "type": "tool_call"}
    message = AIMessage(content=SHAPES["bare"], tool_calls=[native])
    out = normalize_tool_calls(message, tool_specs())
    assert [tc["name"] for tc in out.tool_calls] == ["list_dir"]
    assert out.text == SHAPES["bare"]


def test_an_offered_mcp_tool_is_called_by_its_schema() -> None:
    spec: dict[str, Any] = {
        "type": "function",
        "function": {
            "name": "lookup_word",
            "description": "[glossary] Look up what a word means",
            "parameters": {
                "type": "object",
                "properties": {"word": {"type": "string", "maxLength": 999}},
                "required": ["word"],
            },
        },
    }
    params = tool_parameters([*tool_specs(), spec])
    found = parse_text_calls('{"name": "lookup_word", "arguments": {"word": "zephyr"}}', params)
    assert found is not None
    [call], rest = found
    assert (call.name, call.args, rest) == ("lookup_word", {"word": "zephyr"}, "")
    assert parse_text_calls('{"name": "lookup_word", "arguments": {}}', params) is None
