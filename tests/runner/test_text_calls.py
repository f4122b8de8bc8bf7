"""``soothe -p`` with a model that writes its tool call into the text (issue 31, Deliver 4):
for each of the four shapes the call runs, its result goes back to the model and is the
goal's evidence, and the answer does not keep the call's text. The assertions read what
the fake Ollama RECEIVED and what the run stored."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, run_soothe

NOTES = "- tidy the docs\n- ship it\n"
FINDING = "The first item is: tidy the docs."
CALL = {"name": "read_file", "arguments": {"path": "notes.txt"}}

SHAPES = {
    "bare JSON": '{"name": "read_file", "arguments": {"path": "notes.txt"}}',
    "fenced JSON": '```json\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n```',
    "tool_call tag": '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}'
    "\n</tool_call>",
    "llama 3.2": '{"type": "function", "name": "read_file", "parameters": {"path": "notes.txt"}}',
}


def script(brain: Brain, env: Env, text: str) -> None:
    (env.workspace / "notes.txt").write_text(NOTES)
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Read notes.txt"}]})
    brain.step("S-01", FakeReply(text=text), FINDING)


def tool_results(fake: Any) -> list[str]:
    """The tool messages the server received (in the requests after the call)."""
    return [
        m["content"]
        for body in fake.chat_requests()
        for m in body.get("messages", [])
        if m.get("role") == "tool"
    ]


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_a_call_written_as_text_is_run_and_its_result_is_the_evidence(
    text: str, soothe: Any, brain: Brain, env: Env, fake: Any, stored: Any
) -> None:
    script(brain, env, text)
    result = soothe("-p", "What is the first item in notes.txt?")
    assert (result.code, result.out) == (0, FINDING + "\n"), result.err
    assert "read_file" not in result.out
    # The model got the file back as the call's result (not "Facts (tool output): (none)").
    assert any(r.startswith(NOTES.strip()[:10]) for r in tool_results(fake)), tool_results(fake)
    assert not any("Facts (tool output):\n(none)" in p for p in brain.prompts())
    assert brain.count("step:S-01") == 2  # the call, then the answer: no re-ask
    db = stored()
    [goal] = db.goals
    assert goal.status == "completed"
    tools = [e for e in db.evidence[goal.id] if e.kind == "tool"]
    assert any("read_file" in e.summary and "tidy the docs" in e.summary for e in tools), [
        e.summary for e in tools
    ]


def test_the_json_stream_shows_the_text_call_as_a_tool_call(
    brain: Brain, env: Env, fake: Any
) -> None:
    """As a subprocess, --json: the call is a step.tool_call / step.tool_result pair like a
    native call, and the final answer is the model's answer alone."""
    script(brain, env, SHAPES["tool_call tag"])
    result = run_soothe(env, "-p", "What is the first item in notes.txt?", "--json")
    assert result.code == 0, result.err
    events = result.json_lines()
    called = [e for e in events if e["type"] == "step.tool_call"]
    done = [e for e in events if e["type"] == "step.tool_result"]
    assert [(e["tool"], e["args"].get("path")) for e in called] == [("read_file", "notes.txt")]
    assert [(e["ok"], e["output"].startswith("- tidy the docs")) for e in done] == [(True, True)]
    assert called[0]["call_id"] == done[0]["call_id"]
    [answer] = [e for e in events if e["type"] == "answer.final"]
    assert answer["text"] == FINDING
