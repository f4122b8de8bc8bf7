"""File names are bytes and model text may hold lone surrogates: the whole program (the
``soothe`` CLI as a subprocess against the fake Ollama) lists, reads and reports them
escaped, and a name the model got from list_dir works in read_file."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes._base import FakeReply
from tests.fakes.cli_harness import run_soothe
from tests.fakes.openai_server import FakeOpenAIServer
from tests.faults.harness import (
    ONE_STEP,
    SIMPLE,
    TRACEBACK,
    Brain,
    Env,
    brain,
    env,
    fake,
    quick_retries,
)

__all__ = ["brain", "env", "fake", "quick_retries"]  # fixtures used here

BAD_NAME = b"caf\xff.txt"


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"]


def read_what_list_dir_named(body: dict[str, Any]) -> FakeReply:
    """The model's second turn: read_file of the entry list_dir showed for the odd name."""
    listing = tool_messages(body)[-1]
    (line,) = [ln for ln in listing.splitlines() if ln.startswith("caf")]
    name = re.sub(r"\s+\(\d+ bytes\)$", "", line)
    return FakeReply(tool_calls=[{"name": "read_file", "args": {"path": name}}])


def answer_with_what_was_read(body: dict[str, Any]) -> str:
    return "read: " + tool_messages(body)[-1].strip()


def test_a_name_that_is_not_utf8_is_listed_escaped_and_read_back(brain: Brain, env: Env) -> None:
    with open(os.path.join(os.fsencode(env.workspace), BAD_NAME), "wb") as f:
        f.write(b"bonjour\n")
    (env.workspace / "normal.txt").write_text("plain\n")
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}]),
        read_what_list_dir_named,
        answer_with_what_was_read,
    )
    r = run_soothe(env, "-p", "what do the files say?")
    assert TRACEBACK not in r.err
    assert (r.code, r.err) == (0, "")
    assert r.out == "read: bonjour\n"
    step_calls = [body for kind, body in brain.calls if kind == "step:S-01"]
    listing = tool_messages(step_calls[1])[-1]
    assert "caf\\xff.txt  (8 bytes)" in listing and "normal.txt  (6 bytes)" in listing

    # The same through --json: every line is JSON, the name shown escaped.
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "glob", "args": {"pattern": "*.txt"}}]),
        FakeReply(tool_calls=[{"name": "grep", "args": {"pattern": "o"}}]),
        "done",
    )
    r = run_soothe(env, "-p", "find the text files", "--json")
    assert (r.code, r.err) == (0, "")
    events = r.json_lines()
    results = [e["output"] for e in events if e["type"] == "step.tool_result"]
    assert results[0] == "caf\\xff.txt\nnormal.txt"
    assert "caf\\xff.txt:1: bonjour" in results[1]
    assert [e["type"] for e in events][-2:] == ["run.finished", "answer.final"]


# What an OpenAI-compatible server passes through from the model: the arguments as the
# model wrote them, here with a JSON escape of a lone surrogate (valid JSON, not Unicode).
SURROGATE_ARGS = '{"path": "odd\\ud800.txt", "content": "x\\udcff"}'


@pytest.fixture
def openai(brain: Brain) -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer(responder=brain, hang_limit=5.0)
    with server:
        yield server
    assert not server.errors, "\n".join(server.errors)


def test_a_lone_surrogate_in_a_tool_argument_keeps_json_whole(
    brain: Brain, env: Env, openai: FakeOpenAIServer
) -> None:
    """--json prints one JSON object a line up to the run's end; the call ran with the
    surrogate shown escaped."""
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.step(
        "S-01", FakeReply(tool_calls=[{"name": "write_file", "args": SURROGATE_ARGS}]), "written"
    )
    r = run_soothe(
        env,
        "-p",
        "write the odd file",
        "--json",
        "--yes",
        "--provider",
        "openai",
        "--base-url",
        f"{openai.url}/v1",
    )
    assert TRACEBACK not in r.out + r.err
    events = [json.loads(ln) for ln in r.out.splitlines() if ln.strip()]  # every line
    # The run's end is the last line: its answer after run.finished, or run.failed.
    types = [e["type"] for e in events]
    assert types[-2:] == ["run.finished", "answer.final"] or types[-1] == "run.failed", types
    (called,) = [e for e in events if e["type"] == "step.tool_call"]
    assert called["args"]["path"] == "odd\\ud800.txt"
    (result,) = [e for e in events if e["type"] == "step.tool_result"]
    assert result["ok"], result
    assert (env.workspace / "odd\\ud800.txt").read_text() == "x\\xff"
    assert (r.code, r.err) == (0, "")


def test_a_request_and_a_file_name_in_bytes_are_written_and_undone(brain: Brain, env: Env) -> None:
    """A request whose argv bytes are not UTF-8, and a write to the odd name as the model
    saw it: the real file is replaced (journaled with its exact name), undo puts it back."""
    real = os.path.join(os.fsencode(env.workspace), BAD_NAME)
    with open(real, "wb") as f:
        f.write(b"bonjour\n")
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    call = {"name": "write_file", "args": {"path": "caf\\xff.txt", "content": "salut\n"}}
    brain.step("S-01", FakeReply(tool_calls=[call]), "rewritten")
    request = os.fsdecode(b"rewrite caf\xff.txt")  # what Python makes of such argv bytes
    r = run_soothe(env, "-p", request, "--json", "--yes")
    assert TRACEBACK not in r.err
    assert (r.code, r.err) == (0, "")
    events = r.json_lines()
    assert events[1]["type"] == "run.started" and events[1]["text"] == "rewrite caf\\xff.txt"
    assert "rewrite caf\\xff.txt" in brain.user_prompts("Classification")[0]
    (result,) = [e for e in events if e["type"] == "step.tool_result"]
    assert result["ok"] and "to caf\\xff.txt (replaced the existing file)" in result["output"]
    with open(real, "rb") as f:
        assert f.read() == b"salut\n"
    assert os.listdir(os.fsencode(env.workspace)) == [BAD_NAME]

    undo = run_soothe(env, "undo")
    assert TRACEBACK not in undo.err
    assert (undo.code, undo.err) == (0, "")
    assert undo.out == f"restored {env.workspace}/caf\\xff.txt\n"
    with open(real, "rb") as f:
        assert f.read() == b"bonjour\n"


def test_the_escaping_rule_and_its_way_back(tmp_path: Path) -> None:
    from soothe.engine.agent.workspace import PathRefused, Workspace
    from soothe.engine.bytesafe import escape, escape_in, unescape_name

    assert escape(os.fsdecode(BAD_NAME)) == "caf\\xff.txt"
    assert escape("a\ud800b\udfff") == "a\\ud800b\\udfff"
    assert escape_in({"k\udcfe": ["x", ("\ud801",)]}) == {"k\\xfe": ["x", ("\\ud801",)]}
    plain = {"path": "é.txt"}
    assert escape_in(plain) is plain
    assert unescape_name("caf\\xff.txt") == os.fsdecode(BAD_NAME)
    assert unescape_name("tab\\x09") == "tab\\x09"  # only bytes that UTF-8 could not hold

    ws = Workspace.at(tmp_path)
    with open(os.path.join(os.fsencode(tmp_path), BAD_NAME), "wb") as f:
        f.write(b"bytes\n")
    assert ws.resolve("caf\\xff.txt") == ws.root / os.fsdecode(BAD_NAME)
    assert ws.rel(ws.resolve("caf\\xff.txt")) == "caf\\xff.txt"
    (tmp_path / "caf\\xff.txt").write_text("literal\n")  # a file really named so wins
    assert ws.resolve("caf\\xff.txt") == ws.root / "caf\\xff.txt"
    with pytest.raises(PathRefused, match="lone surrogate"):
        ws.resolve("odd\ud800.txt")
