"""Routing sees the tools (issue 31, Deliver 9): the classification prompt lists the
offered tools, MCP servers' included, and a request that matches an MCP tool is never
answered as a quiz. Through ``soothe -p`` against the fake Ollama, with a real FastMCP
server (tests/mcp/glossary_server.py); the assertions read what the fake RECEIVED."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.fakes._base import FakeReply
from tests.faults.harness import Brain, Env, Result, brain, env, fake, soothe
from tests.mcp.test_mcp import write_config

__all__ = ["brain", "env", "fake", "soothe"]  # fixtures used here

GLOSSARY = str(Path(__file__).with_name("glossary_server.py"))
QUESTION = "What does the word zephyr mean in our glossary?"
QUIZ = {"label": "quiz", "answer": "A zephyr is a soft, gentle breeze.", "reason": "a word"}
TOOL_LINE = "- lookup_word: Look up what a word means in the project glossary."


def glossary_config(env: Env) -> None:
    write_config(
        env,
        f'[mcp.servers.glossary]\ncommand = "{sys.executable}"\nargs = ["{GLOSSARY}"]\n'
        '[tools.rules]\n"glossary.*" = "auto"\n',
    )


def test_a_request_matching_an_mcp_tool_is_not_a_quiz_and_the_tool_is_called(
    soothe: object, brain: Brain, env: Env
) -> None:
    glossary_config(env)
    # The model takes it for a quiz (as it did in the issue); routing does not.
    brain.add("Classification", QUIZ)
    brain.add(
        "PlanGeneration",
        {"steps": [{"id": "S-01", "description": "Look up zephyr in the glossary"}]},
    )
    answer = "In our glossary, zephyr is the code name of the 2.0 release."
    brain.step(
        "S-01", FakeReply(tool_calls=[{"name": "lookup_word", "args": {"word": "zephyr"}}]), answer
    )
    r: Result = soothe("-p", QUESTION, "--json")  # type: ignore[operator]
    assert r.code == 0, r.err
    events = r.json_lines()
    [classified] = [e for e in events if e["type"] == "classification"]
    assert classified["label"] == "simple" and "lookup_word" in classified["reason"]
    # The classification prompt listed the tools, ours and the MCP server's, one line each.
    [prompt] = brain.prompts("Classification")
    assert TOOL_LINE in prompt
    assert "- read_file: Read a text file in the workspace" in prompt
    assert prompt.rstrip().endswith(QUESTION)  # the request stays last
    listed = [line for line in prompt.splitlines() if line.startswith("- ")]
    assert all(len(line) <= 120 for line in listed)
    # The step was offered the tool and called it; its result went back to the model.
    first_step = next(c.body for c in brain.calls if c.kind == "step:S-01")
    assert "lookup_word" in {t["function"]["name"] for t in first_step["tools"]}
    results = [e for e in events if e["type"] == "step.tool_result"]
    assert [(e["tool"], e["ok"]) for e in results] == [("lookup_word", True)]
    assert "code name of the 2.0 release" in results[0]["output"]
    [final] = [e for e in events if e["type"] == "answer.final"]
    assert final["text"] == answer


def test_a_question_the_tools_do_not_touch_is_still_a_quiz(
    soothe: object, brain: Brain, env: Env
) -> None:
    glossary_config(env)
    brain.add("Classification", {"label": "quiz", "answer": "Paris.", "reason": "geography"})
    r: Result = soothe("-p", "What is the capital of France?")  # type: ignore[operator]
    assert (r.code, r.out) == (0, "Paris.\n"), r.err
    assert brain.kinds() == ["Classification"]
    assert TOOL_LINE in brain.prompts("Classification")[0]


def test_on_the_small_profile_a_read_only_request_is_offered_the_matching_mcp_tool(
    soothe: object, brain: Brain, env: Env
) -> None:
    """The small profile offers a read-only request no MCP tool, except the ones the
    request is about: routing sent it down the task path for them."""
    glossary_config(env)
    path = env.home / "xdg-config" / "soothe" / "config.toml"
    path.write_text(path.read_text() + '[model]\nprofile = "small"\n')
    brain.add("Classification", QUIZ)
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Look it up"}]})
    answer = "In our glossary, zephyr is the code name of the 2.0 release."
    brain.step(
        "S-01", FakeReply(tool_calls=[{"name": "lookup_word", "args": {"word": "zephyr"}}]), answer
    )
    r: Result = soothe("-p", QUESTION, "--json")  # type: ignore[operator]
    assert r.code == 0, r.err
    first_step = next(c.body for c in brain.calls if c.kind == "step:S-01")
    offered = {t["function"]["name"] for t in first_step["tools"]}
    assert offered == {"read_file", "list_dir", "glob", "grep", "lookup_word"}
    results = [e for e in r.json_lines() if e["type"] == "step.tool_result"]
    assert [(e["tool"], e["ok"]) for e in results] == [("lookup_word", True)]
