"""The loop through the real ChatOllama client against the fake Ollama server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from soothe.engine.interact import ClarificationResponse
from tests.fakes import FakeOllamaServer, FakeReply
from tests.fakes.brain import Brain
from tests.loop.conftest import SessionFactory
from tests.loop.helpers import (
    answering,
    assess,
    classify,
    make_settings,
    of_type,
    one,
    plan,
    run_all,
    step,
)


def wire_settings(tmp_path: Path, ws: Path, fake: FakeOllamaServer, **sections: Any) -> Any:
    model = {"provider": "ollama", "base_url": fake.url, "name": "llama3.2", "timeout": 5}
    return make_settings(tmp_path, ws, model=model, **sections)


async def test_one_step_terminal_plan_over_the_wire(
    make_session: SessionFactory, fake_ollama: FakeOllamaServer, tmp_path: Path, ws: Path
) -> None:
    brain = Brain()
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01", "read the README")))
    brain.add(
        "step:S-01",
        FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "README.md"}}]),
        "It is a small demo project.",
    )
    fake_ollama.responder = brain
    session = await make_session(settings=wire_settings(tmp_path, ws, fake_ollama))
    events = await run_all(session, "what is this project?")

    assert brain.kinds() == ["Classification", "PlanGeneration", "step:S-01", "step:S-01"]
    chats = fake_ollama.chat_requests()
    assert len(chats) == 4
    assert [c["format"]["title"] for c in chats[:2]] == ["Classification", "PlanGeneration"]
    assert "format" not in chats[2] and chats[2]["tools"]
    # The tool result went back to the model on the wire.
    tool_msgs = [m for m in chats[3]["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1 and "A small demo project." in tool_msgs[0]["content"]
    assert one(events, "answer.final").text == "It is a small demo project."
    assert one(events, "run.finished").model_calls == 4
    goal_id = one(events, "answer.final").goal_id
    assert session.context.get_goal(goal_id).status == "completed"


async def test_parallel_wave_over_the_wire(
    make_session: SessionFactory, fake_ollama: FakeOllamaServer, tmp_path: Path, ws: Path
) -> None:
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.add(
        "PlanGeneration",
        plan(step("S-01", "one"), step("S-02", "two"), step("S-03", "both", ["S-01", "S-02"])),
    )
    brain.add("step:S-01", FakeReply(text="first", delay=0.2))
    brain.add("step:S-02", FakeReply(text="second", delay=0.2))
    brain.add("step:S-03", "first and second")
    brain.add("StatusAssessment", assess("done"))
    brain.add("complete", FakeReply(stream_chunks=["All ", "done: ", "first and second."]))
    fake_ollama.responder = brain
    session = await make_session(settings=wire_settings(tmp_path, ws, fake_ollama))
    events = await run_all(session, "do both, then combine")

    started = {e.step_id: e for e in of_type(events, "step.started")}
    completed = {e.step_id: e for e in of_type(events, "step.completed")}
    # Both parallel steps were in flight together; the dependent came after both.
    assert max(started["S-01"].seq, started["S-02"].seq) < min(
        completed["S-01"].seq, completed["S-02"].seq
    )
    assert started["S-03"].seq > max(completed["S-01"].seq, completed["S-02"].seq)
    assert one(events, "answer.final").text == "All done: first and second."
    tokens = "".join(e.text for e in of_type(events, "step.token") if e.step_id is None)
    assert tokens == "All done: first and second."


async def test_ask_user_over_the_wire(
    make_session: SessionFactory, fake_ollama: FakeOllamaServer, tmp_path: Path, ws: Path
) -> None:
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.add(
        "PlanGeneration",
        plan(
            step("S-01", "ask", kind="ask_user", questions=["Which file?"]),
            step("S-02", "read it", ["S-01"]),
        ),
    )
    brain.add("step:S-02", "notes.txt says alpha")
    brain.add("StatusAssessment", assess("done", completion=False))
    fake_ollama.responder = brain
    settings = wire_settings(tmp_path, ws, fake_ollama, tools={"clarify": "ask"})
    session = await make_session(settings=settings)

    def reply(event: Any) -> None:
        session.broker.answer(event.request_id, ClarificationResponse(answers=["notes.txt"]))

    async with answering(session.bus, "clarification.requested", reply):
        events = await run_all(session, "read the file I pick")

    goal_id = one(events, "answer.final").goal_id
    assert "awaiting_clarification" in [
        e.to_status for e in of_type(events, "goal.status_changed", goal_id=goal_id)
    ]
    assert "A: notes.txt" in brain.step_prompts("S-02")[0]
    assert one(events, "answer.final").text == "notes.txt says alpha"
