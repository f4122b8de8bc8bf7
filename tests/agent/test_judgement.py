"""Steps that do not fool themselves: repeated calls are not run again, echoes and empty
answers are not accepted as answers (issue 12 item 4)."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from soothe.engine.agent.judge import RAW_MARK, REPEAT_NOTE, call_key, no_answer_reason
from soothe.engine.agent.prompts import BUDGET_SPENT, system_prompt
from soothe.engine.events import ToolResult
from soothe.engine.llm.scripted import ScriptedChatModel
from tests.agent.helpers import Recorder
from tests.agent.test_core import build, run, tool_reply


async def test_an_identical_call_is_not_run_again_and_the_second_repeat_ends_the_step(
    ws: Path,
) -> None:
    model = ScriptedChatModel(
        script=[
            tool_reply("read_file", {"path": "README.md"}, call_id="a"),
            # The same call in other words: an alias and a default spelled out.
            tool_reply("read_file", {"file_path": "README.md", "offset": "0"}, call_id="b"),
            tool_reply("read_file", {"path": "README.md"}, call_id="c"),
            "A small demo project.",
        ]
    )
    agent, bus, _ = build(ws, model)
    rec = Recorder(bus)
    out = await run(agent)
    assert out.ok and out.answer == "A small demo project."
    assert [o.call_id for o in out.tool_outcomes] == ["a"]  # run once
    second = model.calls[2].messages
    repeat = second[-1]
    assert isinstance(repeat, ToolMessage) and repeat.tool_call_id == "b"
    assert "A small project." in repeat.content and repeat.content.endswith(REPEAT_NOTE)
    # The second repeat ends the step: the answer is asked for without tools.
    last = model.calls[3]
    assert last.tool_names == [] and "repeating a tool call" in last.messages[-1].content
    results = {e.call_id: e for e in rec.of(ToolResult)}
    assert results["b"].output.startswith("not run again") and not results["b"].ok
    assert model.remaining == 0


async def test_different_arguments_are_different_calls(ws: Path) -> None:
    model = ScriptedChatModel(
        script=[
            tool_reply("read_file", {"path": "README.md"}, call_id="a"),
            tool_reply("read_file", {"path": "README.md", "offset": 1}, call_id="b"),
            "done",
        ]
    )
    agent, _, _ = build(ws, model)
    out = await run(agent)
    assert [o.call_id for o in out.tool_outcomes] == ["a", "b"]


async def test_a_tool_call_written_as_text_is_asked_again_compactly(ws: Path) -> None:
    # A call in none of the shapes textcalls runs (those become native calls, see
    # tests/agent/test_text_calls.py): a Python-style call stays text, and is no answer.
    model = ScriptedChatModel(
        script=[
            tool_reply("read_file", {"path": "README.md"}),
            'read_file(path="README.md")',
            "It is a small demo project.",
        ]
    )
    agent, _, _ = build(ws, model)
    out = await run(agent)
    assert out.ok and out.answer == "It is a small demo project." and not out.raw
    assert out.no_answer == "a tool call written as text"
    [prompt] = model.calls[2].messages
    assert isinstance(prompt, HumanMessage) and model.calls[2].tool_names == []
    assert "A small project." in prompt.content  # the last tool output is the facts
    assert "Step S-01: Read the README" in prompt.content
    assert "Rules:" not in prompt.content  # compact: not the system prompt again


async def test_echoed_budget_line_twice_gives_the_raw_tool_output(ws: Path) -> None:
    echo = BUDGET_SPENT.format(budget=1)
    model = ScriptedChatModel(
        script=[
            tool_reply("read_file", {"path": "README.md"}),
            echo,
            "Answer now with what you found.",
        ]
    )
    agent, _, _ = build(ws, model, budget=1)
    out = await run(agent)
    assert out.ok and out.raw and out.no_answer == "a copy of the step's instructions"
    assert out.answer.startswith(RAW_MARK + "\n")
    assert "A small project." in out.answer and out.model_calls == 3


async def test_no_answer_and_no_tool_output_fails_the_step(ws: Path) -> None:
    model = ScriptedChatModel(script=['read_file(path="README.md")', "<tool_call>x</tool_call>"])
    agent, _, _ = build(ws, model)
    out = await run(agent)
    assert not out.ok and out.error == "the model gave no answer (a tool call written as text)"


RULES = system_prompt(Path("/w"), 4)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n",
        '{"name": "grep", "parameters": {"pattern": "TODO"}}',
        '[{"tool": "list_dir", "args": {}}]',
        '{"name": "read_file", "arguments": {"pa',
        "list_dir(path='.')",
        "<tool_call>{...}</tool_call>",
        "- Get facts with the tools; never invent file contents or command output.",
        "Stop calling tools as soon as you can answer. You have at most 4 tool calls.",
        BUDGET_SPENT.format(budget=4),
    ],
)
def test_no_answer_is_recognised(text: str) -> None:
    assert no_answer_reason(text, [RULES, BUDGET_SPENT.format(budget=4)]) is not None


@pytest.mark.parametrize(
    "text",
    [
        "The README says it is a small project.",
        "The workspace has README.md, docs/ and src/.",
        '{"files": ["README.md"], "count": 1}',
        "grep found 3 TODO lines: README.md:3, docs/guide.md:2, src/pkg/core.py:6.",
        "Tools are available but I did not need them.",
    ],
)
def test_real_answers_are_accepted(text: str) -> None:
    assert no_answer_reason(text, [RULES, BUDGET_SPENT.format(budget=4)]) is None


def test_call_key_ignores_spelling_but_not_meaning() -> None:
    a = call_key({"name": "grep", "args": {"pattern": "x"}})
    assert a == call_key({"name": "grep", "args": {"regex": "x", "path": "."}})
    assert a != call_key({"name": "grep", "args": {"pattern": "y"}})
    assert call_key({"name": "grep", "args": "{", "error": "bad json"}) is None
