"""The longer ``soothe acp`` matrix (marker ``acp``, ``make test-acp``): what
``initialize`` and ``session/new`` advertise, modes and the model option, and an "allow
always" that covers the next call of the same tool without asking again."""

from __future__ import annotations

import asyncio

import pytest

from tests.acp_agent.client import Recorder, acp_process, stderr_of
from tests.acp_agent.test_acp_process import SIMPLE, _call, _plan
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import TRACEBACK, Env, brain, env, fake
from tests.fakes.ollama_server import FakeOllamaServer

__all__ = ["brain", "env", "fake"]  # fixtures

pytestmark = pytest.mark.acp


def test_advertised_modes_options_and_allow_always(brain: Brain, env: Env) -> None:
    from acp import PROTOCOL_VERSION, RequestError

    brain.add("Classification", SIMPLE)
    brain.add("PlanGeneration", _plan("write a.txt and b.txt"))
    brain.step("S-01", _call("write_file", path="a.txt", content="a\n"))
    brain.step("S-01", _call("write_file", path="b.txt", content="b\n"))
    brain.step("S-01", "Wrote a.txt and b.txt.")
    recorder = Recorder()
    recorder.choices = ["allow_always"]

    async def drive() -> None:
        async with acp_process(env, recorder) as (conn, _proc):
            hello = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            caps = hello.agent_capabilities
            assert caps.load_session is True
            prompt = caps.prompt_capabilities
            assert (prompt.embedded_context, prompt.image, prompt.audio) == (True, False, False)
            assert hello.agent_info.name == "soothe"
            assert caps.session_capabilities.list is not None
            made = await conn.new_session(cwd=str(env.workspace), mcp_servers=[])
            assert made.modes.current_mode_id == "ask"
            assert [m.id for m in made.modes.available_modes] == ["ask", "autonomous"]
            options = {o.id: o for o in made.config_options}
            assert options["model"].current_value == "llama3.2"
            assert options["mode"].current_value == "ask"
            sid = made.session_id
            await conn.set_session_mode(session_id=sid, mode_id="autonomous")
            changed = await conn.set_config_option(config_id="mode", session_id=sid, value="ask")
            assert {o.id: o.current_value for o in changed.config_options}["mode"] == "ask"
            with pytest.raises(RequestError):
                await conn.set_session_mode(session_id=sid, mode_id="yolo")
            done = await conn.prompt(
                session_id=sid, prompt=[{"type": "text", "text": "write a.txt and b.txt"}]
            )
            assert done.stop_reason == "end_turn"
            assert len(recorder.permissions) == 1  # "always" covered the second write
            assert recorder.text("agent_message_chunk") == "Wrote a.txt and b.txt."
            listed = await conn.list_sessions(cwd=str(env.workspace))
            assert [(s.session_id, s.title) for s in listed.sessions] == [
                (sid, "write a.txt and b.txt")
            ]

    asyncio.run(asyncio.wait_for(drive(), 90))
    assert (env.workspace / "a.txt").read_text() == "a\n"
    assert (env.workspace / "b.txt").read_text() == "b\n"
    assert TRACEBACK not in stderr_of(env), stderr_of(env)


def test_the_autonomous_mode_takes_the_autonomous_route(
    brain: Brain, env: Env, fake: FakeOllamaServer
) -> None:
    """The mode and the model chosen through the session's config options are what the
    next prompt runs with."""
    fake.add_model("qwen3:0.6b")
    brain.add("GoalDecomposition", {"subgoals": [], "reasoning": "one piece"})
    brain.add("PlanGeneration", _plan("list the files"))
    brain.step("S-01", _call("list_dir", path="."))
    brain.step("S-01", "The folder is empty.")
    brain.add("StatusAssessment", {"status": "done", "goal_progress": "complete"})
    brain.add("text", "The folder is empty: nothing to tidy.")
    recorder = Recorder()

    async def drive() -> None:
        async with acp_process(env, recorder) as (conn, _proc):
            made = await conn.new_session(cwd=str(env.workspace), mcp_servers=[])
            (model,) = [o for o in made.config_options if o.id == "model"]
            assert [o.value for o in model.options] == ["llama3.2", "qwen3:0.6b"]
            await conn.set_session_mode(session_id=made.session_id, mode_id="autonomous")
            await conn.set_config_option(
                config_id="model", session_id=made.session_id, value="qwen3:0.6b"
            )
            done = await conn.prompt(
                session_id=made.session_id, prompt=[{"type": "text", "text": "tidy the folder"}]
            )
            assert done.stop_reason == "end_turn"

    asyncio.run(asyncio.wait_for(drive(), 90))
    assert brain.kinds()[0] == "GoalDecomposition"  # not a Classification: the route
    assert {body["model"] for body in fake.chat_requests()} == {"qwen3:0.6b"}
    assert "The folder is empty: nothing to tidy." in recorder.text("agent_message_chunk")
    assert brain.unscripted == [] and brain.leftover() == {}
    assert [u.kind for u in recorder.of("tool_call")] == ["read"]


def test_the_client_s_mcp_server_is_offered_and_asked_for(brain: Brain, env: Env) -> None:
    import sys
    from pathlib import Path

    from acp.schema import McpServerStdio

    server = str(Path(__file__).parents[1] / "mcp" / "words_server.py")
    brain.add("Classification", SIMPLE)
    brain.add("PlanGeneration", _plan("count the words"))
    brain.step("S-01", _call("count_words", text="one two three"))
    brain.step("S-01", "There are 3 words.")
    recorder = Recorder()
    recorder.choices = ["allow_once"]

    async def drive() -> None:
        async with acp_process(env, recorder) as (conn, _proc):
            words = McpServerStdio(name="words", command=sys.executable, args=[server], env=[])
            made = await conn.new_session(cwd=str(env.workspace), mcp_servers=[words])
            done = await conn.prompt(
                session_id=made.session_id,
                prompt=[{"type": "text", "text": "count the words in: one two three"}],
            )
            assert done.stop_reason == "end_turn"

    asyncio.run(asyncio.wait_for(drive(), 90))
    ((tool_call, _),) = recorder.permissions
    assert (tool_call.kind, tool_call.title) == ("other", "count_words(text=one two three)")
    (result,) = [u for u in recorder.of("tool_call_update") if u.status == "completed"]
    assert result.content[-1].content.text == "3 words"
    assert recorder.text("agent_message_chunk") == "There are 3 words."
    assert brain.unscripted == [] and brain.leftover() == {}


def test_sigterm_suspends_the_running_goal(brain: Brain, env: Env) -> None:
    """An editor closing its agent: the step is suspended (resumable), not left active."""
    import signal

    from tests.fakes.cli_harness import read_store

    brain.add("Classification", SIMPLE)
    brain.add("PlanGeneration", _plan("list the files"))
    brain.step("S-01", _call("list_dir", path="."))
    release = brain.hold("step:S-01")
    recorder = Recorder()

    async def drive() -> int:
        async with acp_process(env, recorder) as (conn, proc):
            made = await conn.new_session(cwd=str(env.workspace), mcp_servers=[])
            running = asyncio.ensure_future(
                conn.prompt(
                    session_id=made.session_id, prompt=[{"type": "text", "text": "list files"}]
                )
            )
            await asyncio.to_thread(brain.seen("step:S-01").wait, 20)
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 20)
            release.set()
            running.cancel()
            return code

    assert asyncio.run(asyncio.wait_for(drive(), 60)) == 0
    (goal,) = read_store(env.db_path).goals
    assert goal.status == "suspended"
    assert TRACEBACK not in stderr_of(env), stderr_of(env)
