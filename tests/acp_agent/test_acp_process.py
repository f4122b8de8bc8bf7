"""``soothe acp`` as a subprocess, driven by the ``acp`` package's client side against
the fake Ollama: the handshake, a grounded answer with its tool calls, a write allowed
and a write rejected, a prompt cancelled, and the session loaded in a new process with
its history replayed and its paused goal resumed. make test starts one process (the
first test); the second (two starts) is in make test-acp (marker ``acp``)."""

from __future__ import annotations

import asyncio

import pytest

from tests.acp_agent.client import Recorder, acp_process, stderr_of
from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import TRACEBACK, Env, brain, env, fake, read_store

__all__ = ["brain", "env", "fake"]  # fixtures

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": False}
SIMPLE = {"label": "simple", "answer": "", "reason": "needs the files"}


def _plan(description: str) -> dict[str, object]:
    return {"steps": [{"id": "S-01", "description": description}]}


def _call(name: str, **args: object) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "args": args}])


async def _new(conn: object, env: Env) -> str:
    made = await asyncio.wait_for(conn.new_session(cwd=str(env.workspace), mcp_servers=[]), 30)  # type: ignore[attr-defined]
    return str(made.session_id)


def test_a_grounded_answer_then_a_write_allowed_and_one_rejected(brain: Brain, env: Env) -> None:
    (env.workspace / "notes.txt").write_text("the launch is on Friday\n")
    brain.add("Classification", SIMPLE, SIMPLE)
    brain.add("PlanGeneration", _plan("read notes.txt and write SUMMARY.md"))
    brain.step("S-01", _call("read_file", path="notes.txt"))
    brain.step("S-01", _call("write_file", path="SUMMARY.md", content="Launch: Friday\n"))
    brain.step("S-01", "The launch is on Friday (notes.txt); I wrote SUMMARY.md.")
    recorder = Recorder()
    recorder.choices = ["allow_once"]

    async def drive() -> None:
        async with acp_process(env, recorder) as (conn, _proc):
            await _new(conn, env)  # a session nothing is asked in: gone at exit
            session_id = await _new(conn, env)
            made = await conn.prompt(
                session_id=session_id,
                prompt=[{"type": "text", "text": "When is the launch? Note it in SUMMARY.md"}],
            )
            assert made.stop_reason == "end_turn"
            first = list(recorder.updates)
            recorder.clear()
            # the second request: the write is rejected, nothing is written
            brain.add("PlanGeneration", _plan("write NOTES2.md"))
            brain.step("S-01", _call("write_file", path="NOTES2.md", content="x\n"))
            brain.step("S-01", "I could not write NOTES2.md: you rejected it.")
            # a follow-up in the thread starts with an assessment: it needs a new plan
            brain.add("StatusAssessment", {"status": "replan", "goal_progress": "none"}, DONE)
            # the step that could not write failed (loop truth): a replan reports it
            brain.add("PlanGeneration", {"steps": [{"id": "S-02", "description": "report"}]})
            brain.step("S-02", "I could not write NOTES2.md: you rejected it.")
            brain.add("StatusAssessment", DONE)
            recorder.choices = ["reject"]
            again = await conn.prompt(
                session_id=session_id, prompt=[{"type": "text", "text": "write NOTES2.md"}]
            )
            assert again.stop_reason == "end_turn"
            _check_first(first, recorder, env)
            _check_rejected(recorder, env)

    asyncio.run(asyncio.wait_for(drive(), 90))
    assert brain.unscripted == [] and brain.leftover() == {}
    assert TRACEBACK not in stderr_of(env), stderr_of(env)
    (thread,) = read_store(env.db_path).threads
    assert thread.title == "When is the launch? Note it in SUMMARY.md"


def _check_first(updates: list[tuple[str, object]], recorder: Recorder, env: Env) -> None:
    kinds = [u.session_update for _, u in updates]  # type: ignore[attr-defined]
    starts = [u for _, u in updates if u.session_update == "tool_call"]  # type: ignore[attr-defined]
    assert [(s.kind, s.title) for s in starts] == [
        ("read", "read_file notes.txt"),
        ("edit", "write_file SUMMARY.md"),
    ]
    assert [loc.path for loc in starts[0].locations] == [str(env.workspace / "notes.txt")]
    done = [
        u
        for _, u in updates
        if u.session_update == "tool_call_update" and u.status in ("completed", "failed")  # type: ignore[attr-defined]
    ]
    assert [(u.tool_call_id, u.status) for u in done] == [
        (starts[0].tool_call_id, "completed"),
        (starts[1].tool_call_id, "completed"),
    ]
    assert "the launch is on Friday" in done[0].content[-1].content.text
    diff = done[1].content[0]
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == (
        "diff",
        str(env.workspace / "SUMMARY.md"),
        None,
        "Launch: Friday\n",
    )
    # the permission request: the call, its diff and the three choices
    (tool_call, options), *_ = recorder.permissions
    assert tool_call.tool_call_id == starts[1].tool_call_id
    assert tool_call.content[0].new_text == "Launch: Friday\n"
    assert [(o.option_id, o.kind) for o in options] == [
        ("allow_once", "allow_once"),
        ("allow_always", "allow_always"),
        ("reject", "reject_once"),
    ]
    assert options[1].name == "Always allow write_file"
    assert (env.workspace / "SUMMARY.md").read_text() == "Launch: Friday\n"
    # the plan: the goal's step DAG, kept current (pending/in progress -> completed)
    plans = [u for _, u in updates if u.session_update == "plan"]  # type: ignore[attr-defined]
    assert plans and [e.status for e in plans[-1].entries] == ["completed"]
    assert plans[-1].entries[0].content == "S-01 read notes.txt and write SUMMARY.md"
    assert any(e.status == "in_progress" for p in plans for e in p.entries)
    answer = "".join(
        u.content.text
        for _, u in updates
        if u.session_update == "agent_message_chunk"  # type: ignore[attr-defined]
    )
    assert answer == "The launch is on Friday (notes.txt); I wrote SUMMARY.md."
    assert kinds.index("plan") < kinds.index("tool_call") < kinds.index("agent_message_chunk")


def _check_rejected(recorder: Recorder, env: Env) -> None:

    ((tool_call, _),) = recorder.permissions[1:]
    assert tool_call.title == "write_file NOTES2.md"
    failed = [u for u in recorder.of("tool_call_update") if u.status == "failed"]
    assert len(failed) == 1 and "denied" in failed[0].content[-1].content.text
    assert not (env.workspace / "NOTES2.md").exists()
    assert recorder.text("agent_message_chunk") == ("I could not write NOTES2.md: you rejected it.")


@pytest.mark.acp  # two process starts: make test-acp (make test keeps the one above)
def test_cancel_then_load_in_a_new_process_replays_and_resumes(brain: Brain, env: Env) -> None:
    """A prompt cancelled mid-step ends ``cancelled`` with its step suspended; a new
    process loads the session with its history replayed, ``/resume`` finishes the goal,
    and a clarification ends a turn that the next prompt answers."""
    (env.workspace / "notes.txt").write_text("hello\n")
    brain.add("Classification", {"label": "quiz", "answer": "4", "reason": "math"}, SIMPLE)
    brain.add("PlanGeneration", _plan("list the files"))
    brain.step("S-01", _call("list_dir", path="."))
    release = brain.hold("step:S-01")
    recorder = Recorder()

    async def first() -> str:
        async with acp_process(env, recorder) as (conn, _proc):
            session_id = await _new(conn, env)
            quiz = await conn.prompt(
                session_id=session_id, prompt=[{"type": "text", "text": "what is 2+2?"}]
            )
            assert (quiz.stop_reason, recorder.text("agent_message_chunk")) == ("end_turn", "4")
            running = asyncio.ensure_future(
                conn.prompt(
                    session_id=session_id, prompt=[{"type": "text", "text": "list the files"}]
                )
            )
            await asyncio.to_thread(brain.seen("step:S-01").wait, 20)
            await conn.cancel(session_id=session_id)
            stopped = await asyncio.wait_for(running, 20)
            release.set()
            assert stopped.stop_reason == "cancelled"
            return session_id

    session_id = asyncio.run(asyncio.wait_for(first(), 60))
    stored = read_store(env.db_path)
    (goal,) = stored.goals
    assert goal.status == "suspended" and goal.thread_id == session_id
    assert [t.title for t in stored.threads] == ["what is 2+2?"]

    brain.step("S-01", _call("list_dir", path="."))
    brain.step("S-01", "The folder holds notes.txt.")
    brain.add("Classification", SIMPLE)
    brain.add(
        "PlanGeneration",
        {
            "steps": [
                {
                    "id": "S-01",
                    "description": "ask which file",
                    "kind": "ask_user",
                    "questions": ["Which file should I read?"],
                },
                {"id": "S-02", "description": "read the file", "dependencies": ["S-01"]},
            ]
        },
    )
    brain.step("S-02", _call("read_file", path="notes.txt"))
    brain.step("S-02", "notes.txt says hello.")
    brain.add("StatusAssessment", {"status": "replan", "goal_progress": "none"}, DONE)
    again = Recorder()

    async def second() -> None:
        async with acp_process(env, again) as (conn, _proc):
            await asyncio.wait_for(
                conn.load_session(cwd=str(env.workspace), session_id=session_id, mcp_servers=[]),
                30,
            )
            replayed = [(u.session_update, _text(u)) for _, u in again.updates]
            assert ("user_message_chunk", "what is 2+2?") in replayed
            assert ("agent_message_chunk", "4") in replayed
            assert ("user_message_chunk", "list the files") in replayed
            plan = again.of("plan")[-1]
            assert [(e.content, e.status) for e in plan.entries] == [
                ("S-01 list the files", "pending")
            ]
            again.clear()
            resumed = await conn.prompt(
                session_id=session_id, prompt=[{"type": "text", "text": "/resume"}]
            )
            assert resumed.stop_reason == "end_turn"
            assert again.text("agent_message_chunk") == "The folder holds notes.txt."
            assert [e.status for e in again.of("plan")[-1].entries] == ["completed"]
            again.clear()
            asked = await conn.prompt(
                session_id=session_id, prompt=[{"type": "text", "text": "read a file for me"}]
            )
            assert asked.stop_reason == "end_turn"
            assert again.text("agent_message_chunk") == (
                "Which file should I read?\n\nReply to answer."
            )
            again.clear()
            answered = await conn.prompt(
                session_id=session_id, prompt=[{"type": "text", "text": "notes.txt"}]
            )
            assert answered.stop_reason == "end_turn"
            assert again.text("agent_message_chunk") == "notes.txt says hello."
            assert "A: notes.txt" in "\n".join(brain.prompts("step:S-02"))

    asyncio.run(asyncio.wait_for(second(), 90))
    assert brain.unscripted == [] and brain.leftover() == {}
    assert TRACEBACK not in stderr_of(env), stderr_of(env)


def _text(update: object) -> str:
    content = getattr(update, "content", None)
    return str(getattr(content, "text", ""))
