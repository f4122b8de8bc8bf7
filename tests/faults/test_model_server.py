"""The model server fails: down, missing model, no tools, errors and drops mid-stream,
silence. Each run ends with one clear line (or a stated answer), never a traceback, and
what was persisted stays whole and resumable."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from soothe.engine.events import FinalAnswer, RunFailed, StepFailed, StepToken
from soothe.engine.session import Session
from tests.fakes._base import FakeReply
from tests.fakes.ollama_server import FakeOllamaModel, FakeOllamaServer
from tests.faults.harness import (
    ONE_STEP,
    SIMPLE,
    TRACEBACK,
    Brain,
    Env,
    Result,
    check_persisted,
    settings_for,
)
from tests.loop.helpers import collect

Soothe = Callable[..., Result]


def test_server_down_at_start(soothe: Soothe, fake: FakeOllamaServer, env: Env) -> None:
    fake.stop()
    r = soothe("-p", "what is in this folder?")
    assert r.code == 1 and r.out == ""
    line = r.one_error()
    assert fake.url in line and "ollama serve" in line
    saved = check_persisted(env.data_dir)
    # nothing but the request and its error: the thread is not kept (issue 32 item 10)
    assert saved.threads == {} and saved.goals == {} and saved.messages == {}


def test_model_not_pulled(soothe: Soothe, fake: FakeOllamaServer, env: Env) -> None:
    fake.models.clear()
    fake.add_model("qwen2.5:7b")
    r = soothe("-p", "hello")
    assert r.code == 1
    line = r.one_error()
    assert "ollama pull llama3.2" in line and "llama3.2" in line
    check_persisted(env.data_dir)


def test_model_without_tool_support_stops_at_the_first_step(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    fake.models.clear()
    fake.add_model(FakeOllamaModel("llama3.2", tools=False))
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    r = soothe("-p", "list the files")
    assert r.code == 1
    line = r.one_error()
    assert "does not support tool calls" in line and "llama3.2" in line
    # One try of the step (refused by the server), no replanning around a model that
    # cannot use tools.
    assert brain.kinds() == ["Classification", "PlanGeneration"]
    assert len(fake.chat_requests()) == 3 and fake.chat_requests()[-1]["tools"]
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "suspended" and saved.steps[goal.id] == {"S-01": "pending"}


async def test_server_goes_down_mid_stream_and_comes_back(
    brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    """One Session: the server dies while a step streams; the run fails with one line
    and its goal is suspended; the server comes back on the same port; the next request
    of the same Session works, and the suspended goal resumes from its checkpoint."""
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    words = [f"word{i} " for i in range(40)]
    brain.step("S-01", FakeReply(stream_chunks=words, chunk_delay=0.2))
    session = Session(settings_for(env))
    await session.start()
    try:
        streaming = asyncio.Event()
        session.bus.add_listener(lambda e: isinstance(e, StepToken) and streaming.set())

        async def stop_while_streaming() -> None:
            await streaming.wait()
            await asyncio.to_thread(fake.stop)

        stopper = asyncio.create_task(stop_while_streaming())
        first = await collect(session, session.run("list the files"))
        await stopper
        (failed,) = [e for e in first if isinstance(e, RunFailed)]
        assert "cannot reach Ollama" in failed.error and fake.url in failed.error
        (step_failed,) = [e for e in first if isinstance(e, StepFailed)]
        assert "connection dropped" in step_failed.error
        (goal,) = session.context.list_goals()
        assert goal.status == "suspended"

        fake.restart()  # back on the same port
        brain.add("Classification", {"label": "quiz", "answer": "4", "reason": "math"})
        second = await collect(session, session.run("what is 2+2?"))
        assert [e.text for e in second if isinstance(e, FinalAnswer)] == ["4"]
        assert not [e for e in second if isinstance(e, RunFailed)]

        brain.add("StatusAssessment", {"status": "replan", "goal_progress": "none"})
        brain.add("PlanGeneration", ONE_STEP)
        brain.add("step", "a.txt and b.txt")  # the new plan's S-01 (renamed)
        brain.add("StatusAssessment", {"status": "done", "goal_progress": "complete"})
        brain.add("text", "The folder holds a.txt and b.txt.")
        third = await collect(session, session.resume())
        assert [e.text for e in third if isinstance(e, FinalAnswer)] == [
            "The folder holds a.txt and b.txt."
        ]
        assert session.context.get_goal(goal.id).status == "completed"
    finally:
        await session.close()
    saved = check_persisted(env.data_dir)
    # The replan replaced the failed step with one (renamed) that completed.
    assert list(saved.steps[goal.id].values()) == ["completed"]
    assert not brain.unscripted


def test_error_line_mid_stream(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    """An `{"error": ...}` line after tokens: a structured call is asked again (nothing
    was shown yet); a step that already streamed fails, and the loop plans around it."""
    brain.add(
        "Classification",
        FakeReply(text='{"label": "sim', error="CUDA error: out of memory"),
        SIMPLE,
    )
    brain.add("PlanGeneration", ONE_STEP)
    brain.step("S-01", FakeReply(text="Let me look", error="CUDA error: out of memory"))
    brain.add("StatusAssessment", {"status": "replan", "goal_progress": "none"})
    brain.add("PlanGeneration", ONE_STEP)
    brain.add("step", "two files")  # the new plan's S-01 (renamed)
    brain.add("StatusAssessment", {"status": "done", "goal_progress": "complete"})
    brain.add("text", "There are two files.")
    r = soothe("-p", "list the files", "--json")
    assert r.code == 0, r.err
    assert TRACEBACK not in r.err and r.err == ""
    events = r.json_lines()
    assert events[-1]["type"] == "answer.final" and events[-1]["text"] == "There are two files."
    (step_failed,) = [e for e in events if e["type"] == "step.failed"]
    assert "out of memory" in step_failed["error"] and "\n" not in step_failed["error"]
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "completed"
    # A replan replaces the failed step (the ledger keeps the failure).
    assert list(saved.steps[goal.id].values()) == ["completed"]


def test_connection_dropped_mid_stream(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    """A dropped connection: retried where nothing was shown (the plan), not repeated
    where tokens were already on screen (the completion) - that run fails cleanly."""
    two_steps = {
        "steps": [
            {"id": "S-01", "description": "list the files"},
            {"id": "S-02", "description": "read them", "dependencies": ["S-01"]},
        ]
    }
    brain.add("Classification", SIMPLE)
    brain.add("PlanGeneration", FakeReply(text='{"steps": [', drop=True), two_steps)
    brain.step("S-01", "a.txt").step("S-02", "it is empty")
    brain.add("StatusAssessment", {"status": "done", "goal_progress": "complete"})
    brain.add("text", FakeReply(text="The folder has", drop=True))
    r = soothe("-p", "list the files")
    assert r.code == 1
    line = r.one_error()
    assert "connection dropped" in line and "llama3.2" in line
    assert brain.kinds().count("PlanGeneration") == 2 and brain.count("text") == 1
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    # Both steps' work is kept; the goal waits for a resume to write its answer.
    assert goal.status == "suspended"
    assert saved.steps[goal.id] == {"S-01": "completed", "S-02": "completed"}
    assert saved.evidence[goal.id] >= 2


def test_server_that_never_answers_times_out(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    config = env.home / "config.toml"
    config.write_text("[model]\ntimeout = 1\n", encoding="utf-8")
    brain.add("Classification", FakeReply(hang=True))
    r = soothe("-p", "hello", "--config", str(config))
    assert r.code == 1
    line = r.one_error()
    assert "did not answer within 1s" in line and "model.timeout" in line
    assert brain.kinds() == ["Classification"]  # a timeout is not retried
    saved = check_persisted(env.data_dir)
    assert saved.threads == {} and saved.messages == {}  # a failed request leaves no thread
