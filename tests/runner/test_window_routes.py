"""No request exceeds the window, on any route (issue 31, Deliver 2): a request naming a
200 KB README and four source files, under ``soothe -p`` against the fake Ollama, at
``num_ctx`` 2048 and 8192, and a thread with many follow-ups. The fake cuts an over-long
prompt silently from the front, as a real Ollama does; the assertions read what it
RECEIVED (``chat_log``: each request, its window and its size by the fake's own count)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": True}
SOURCES = ("app.py", "store.py", "util.py", "cli.py")
REQUEST = "Summarise README.md and explain " + ", ".join(f"src/{n}" for n in SOURCES)


def tool(name: str, **args: object) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "args": args}])


def workspace(env: Env) -> None:
    readme = "".join(
        f"Line {i}: Soothe runs goal-driven agents on local models.\n" for i in range(3500)
    )
    assert len(readme) > 200_000
    (env.workspace / "README.md").write_text(readme)
    src = env.workspace / "src"
    src.mkdir()
    for name in SOURCES:
        body = "".join(f"def f{i}(x):\n    return x + {i}  # {name}\n\n" for i in range(300))
        (src / name).write_text(body)


def fitted(fake: Any, since: int = 0) -> int:
    """Every request from ``since`` fit its window and was not cut; the largest, in tokens."""
    log = fake.chat_log[since:]
    assert log, "no request reached the server"
    for record in log:
        assert not record.truncated, (record.sent_tokens, record.window)
        assert record.sent_tokens <= record.window, (record.sent_tokens, record.window)
    return max(r.sent_tokens for r in log)


@pytest.fixture(params=[2048, 8192])
def num_ctx(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("SOOTHE_MODEL__NUM_CTX", str(request.param))
    return int(request.param)


def test_every_route_fits_the_window(soothe, brain: Brain, env: Env, fake, num_ctx: int) -> None:
    workspace(env)
    largest: dict[str, int] = {}

    # quiz (a request naming files is never a quiz: a long pasted text instead)
    brain.add("Classification", {"label": "quiz", "answer": "A workbench for agents."})
    pasted = "Soothe runs goal-driven agents on local models. " * 600
    result = soothe("-p", f"What is this about? {pasted}")
    assert (result.code, result.out) == (0, "A workbench for agents.\n"), result.err
    largest["quiz"] = fitted(fake)

    # agentic: two steps read the README and a source file, then the final answer
    since = len(fake.chat_log)
    brain.add("Classification", {"label": "complex"})
    brain.add(
        "PlanGeneration",
        {
            "steps": [
                {"id": "S-01", "description": "Read README.md"},
                {"id": "S-02", "description": "Read src/app.py", "dependencies": ["S-01"]},
            ]
        },
    )
    brain.step("S-01", tool("read_file", path="README.md"), "README: a workbench.")
    brain.step("S-02", tool("read_file", path="src/app.py"), "app.py adds numbers.")
    brain.always["StatusAssessment"] = DONE
    brain.always["complete"] = "Soothe is a workbench; app.py adds numbers."
    result = soothe("-p", REQUEST)
    assert result.code == 0, result.err
    assert "workbench" in result.out
    largest["agentic"] = fitted(fake, since)

    # autonomous: decomposed into sub-goals, each planned and run
    since = len(fake.chat_log)
    brain.add(
        "GoalDecomposition",
        {"subgoals": [{"key": "A", "description": "Summarise README.md"}]},
    )
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Read README.md"}]})
    brain.step("S-01", tool("read_file", path="README.md"), "README: a workbench.")
    result = soothe("-p", REQUEST, "--autonomous")
    assert result.code == 0, result.err
    largest["autonomous"] = fitted(fake, since)

    # follow-ups in one thread: the conversation grows, the prompts do not pass the window
    since = len(fake.chat_log)
    thread = soothe("threads").out.splitlines()[0].split()[0]
    for name in SOURCES:
        brain.add("Classification", {"label": "simple"})
        brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": f"Read src/{name}"}]})
        brain.step("S-01", tool("read_file", path=f"src/{name}"), f"{name} defines f0 to f299.")
        result = soothe("-p", f"And what does src/{name} do? {REQUEST}", "--thread", thread)
        assert result.code == 0, result.err
    largest["follow-up"] = fitted(fake, since)

    print(f"\nlargest prompt per route at num_ctx {num_ctx} (tokens, the fake's count):")
    for route, tokens in largest.items():
        print(f"  {route:<11} {tokens:>5} / {num_ctx}")


def test_a_window_too_small_for_the_plan_fails_in_one_line(
    soothe, brain: Brain, env: Env, fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """num_ctx 512: the request is classified, but the planner's rules and schema alone do
    not fit: exit 1 with one line naming the window and the setting, nothing sent over it."""
    monkeypatch.setenv("SOOTHE_MODEL__NUM_CTX", "512")
    workspace(env)
    brain.always["Classification"] = {"label": "simple"}
    result = soothe("-p", REQUEST)
    assert result.code == 1
    (line,) = result.err.splitlines()
    assert line.startswith("error: the prompt needs ~")
    assert line.endswith("tokens but the window is 512 (model.num_ctx): raise model.num_ctx")
    assert brain.kinds() == ["Classification"], "the plan that cannot fit is never sent"
    fitted(fake)
