"""The small-model profile wired in: read-only tools for read-only requests, prompts
without examples a small model copies, and the profile shown (``soothe -p`` progress and
--json). Black-box through ``soothe -p`` against the fake Ollama: the assertions read
what the server RECEIVED."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from soothe.engine.agent.read_only import READ_ONLY_TOOLS, is_read_only_request, offered_tools
from soothe.engine.events import parse_event
from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain, route
from tests.fakes.cli_harness import Env


@pytest.mark.parametrize(
    "text",
    [
        "Summarize README.md",
        "List the files in this folder",
        "Read notes.txt and tell me the first item",
        "what files are here?",
        "Where is the config loaded? grep for it",
    ],
)
def test_read_only_requests(text: str) -> None:
    assert is_read_only_request(text)
    assert offered_tools(text, small=True) == frozenset(READ_ONLY_TOOLS)
    assert offered_tools(text, small=False) is None  # only the small profile narrows


@pytest.mark.parametrize(
    "text",
    [
        "fix the typo in notes.txt",
        "Run the tests",
        "create hello.py that prints hi",
        "delete the build folder",
        "Write a summary of README.md to SUMMARY.md",
        "change the title in README.md",
        "Edit app.py",
        "",
    ],
)
def test_requests_that_may_change_something_keep_every_tool(text: str) -> None:
    assert not is_read_only_request(text)
    assert offered_tools(text, small=True) is None


def _tools_of(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def _steps(fake: Any) -> list[dict[str, Any]]:
    return [b for b in fake.chat_requests() if route(b)[0].startswith("step")]


def _small(monkeypatch: pytest.MonkeyPatch, env: Env) -> None:
    monkeypatch.setenv("SOOTHE_MODEL__PROFILE", "small")
    (env.workspace / "README.md").write_text("# Demo\nA demo project.\n")


def test_small_profile_read_only_request_offers_read_only_tools_and_short_prompts(
    soothe, brain: Brain, env: Env, fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small(monkeypatch, env)
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Summarize it"}]})
    brain.step("S-01", "A demo project.")

    result = soothe("-p", "Summarize README.md", "--json")

    assert result.code == 0, result.err
    events = [parse_event(line) for line in result.out.splitlines()]
    assert events[0].type == "model.profile"
    assert (events[0].profile, events[0].reason) == ("small", "configured")
    assert {e.thread_id for e in events} == {events[-1].thread_id} != {""}
    (step,) = _steps(fake)
    assert _tools_of(step) == list(READ_ONLY_TOOLS)
    system = step["messages"][0]["content"]
    assert str(env.workspace) not in system  # no absolute path to copy into a call
    assert "src/app.py" not in system and "write_file" not in system
    (plan,) = [b for b in fake.chat_requests() if route(b)[0] == "PlanGeneration"]
    plan_text = "\n".join(m["content"] for m in plan["messages"])
    assert "S-01, S-02" not in plan_text  # the sample ids a small model copies


def test_small_profile_change_request_keeps_every_tool(
    soothe, brain: Brain, env: Env, fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small(monkeypatch, env)
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Write it"}]})
    brain.step("S-01", "Nothing written (test).")

    soothe("-p", "Write a one-line summary of README.md to SUMMARY.md")

    (step,) = _steps(fake)
    assert {"write_file", "edit_file", "run_shell"} <= set(_tools_of(step))


def test_a_tool_not_offered_is_refused_even_when_the_model_calls_it(
    soothe, brain: Brain, env: Env, fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small(monkeypatch, env)
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Summarize it"}]})
    write = FakeReply(
        tool_calls=[{"name": "write_file", "args": {"path": "x.txt", "content": "y"}}]
    )
    brain.step("S-01", write, "A demo project.")

    result = soothe("-p", "Summarize README.md", "--yes", "--json")

    assert not Path(env.workspace / "x.txt").exists()
    events = [parse_event(line) for line in result.out.splitlines()]
    (refused,) = [e for e in events if e.type == "step.tool_result"]
    assert not refused.ok and "not offered for this read-only request" in refused.output


def test_default_profile_offers_every_tool_and_says_so(
    soothe, brain: Brain, env: Env, fake
) -> None:
    (env.workspace / "README.md").write_text("# Demo\nA demo project.\n")
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Summarize it"}]})
    brain.step("S-01", "A demo project.")

    result = soothe("-p", "Summarize README.md", "--json")

    events = [parse_event(line) for line in result.out.splitlines()]
    assert events[0].type == "model.profile" and events[0].profile == "default"
    (step,) = _steps(fake)
    assert "write_file" in _tools_of(step)
    assert str(env.workspace) in step["messages"][0]["content"]


def test_the_small_profile_is_a_progress_line_on_a_terminal(
    soothe, brain: Brain, env: Env, fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    _small(monkeypatch, env)
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Summarize it"}]})
    brain.step("S-01", "A demo project.")
    err = Tty()
    monkeypatch.setattr("sys.stderr", err)

    result = soothe("-p", "Summarize README.md")

    assert result.code == 0
    lines = err.getvalue().splitlines()
    assert lines[0] == "model llama3.2: profile small (configured)"
    assert lines[1].startswith("goal G")
