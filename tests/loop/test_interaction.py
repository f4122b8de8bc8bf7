"""The loop with the user in it: clarification, approvals, confinement, bad plans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage

from soothe.engine.interact import ApprovalResponse, ClarificationResponse
from soothe.engine.llm.scripted import ScriptedReply
from soothe.engine.session import Session
from tests.fakes.brain import Brain
from tests.loop.conftest import SessionFactory
from tests.loop.helpers import (
    answering,
    assess,
    classify,
    goal_moves,
    of_type,
    one,
    plan,
    run_all,
    step,
)


async def test_ask_user_step_answered_through_the_broker(make_session: SessionFactory) -> None:
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.add(
        "PlanGeneration",
        plan(
            step("S-01", "ask for the colour", kind="ask_user", questions=["Which colour?"]),
            step("S-02", "paint it", ["S-01"]),
        ),
    )
    brain.add("step:S-02", "painted it blue")
    brain.add("StatusAssessment", assess("done", completion=False))
    session = await make_session(brain, tools={"clarify": "ask"})

    def reply(event: Any) -> None:
        session.broker.answer(event.request_id, ClarificationResponse(answers=["blue"]))

    async with answering(session.bus, "clarification.requested", reply) as asked:
        events = await run_all(session, "paint the shed")

    (request,) = asked
    assert request.questions == ["Which colour?"] and request.step_id == "S-01"
    goal_id = one(events, "answer.final").goal_id
    assert goal_moves(events, goal_id) == [
        "active",
        "awaiting_clarification",
        "pending",
        "active",
        "validated",
        "completed",
    ]
    assert one(events, "clarification.answered").answers == ["blue"]
    s1 = session.context.step_dag(goal_id).get("S-01")
    assert s1.status == "completed" and "A: blue" in s1.result_summary
    evidence = [e for e in session.context.evidence(goal_id) if e.step_id == "S-01"]
    assert any("A: blue" in e.content for e in evidence)
    # The user's answer reached the next step's prompt, and no model call was spent on S-01.
    (s2_prompt,) = brain.step_prompts("S-02")
    assert "blue" in s2_prompt
    assert "step:S-01" not in brain.kinds()
    # Events after the pause still belong to the loop (the goal kept its loop id).
    done = one(events, "step.completed", step_id="S-02")
    assert done.loop_id == f"{goal_id}-L1"
    assert one(events, "answer.final").text == "painted it blue"


async def test_one_approval_granted_and_one_denied(make_session: SessionFactory, ws: Path) -> None:
    brain = Brain()
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01", "write two files")))
    brain.add(
        "step:S-01",
        ScriptedReply(
            tool_calls=[
                {"name": "write_file", "args": {"path": "yes.txt", "content": "kept"}},
                {"name": "write_file", "args": {"path": "no.txt", "content": "refused"}},
            ]
        ),
        "Wrote yes.txt; no.txt was refused.",
    )
    session = await make_session(brain, tools={"approval": "ask"})

    def decide(event: Any) -> None:
        outcome = "approve_once" if event.args.get("path") == "yes.txt" else "deny"
        session.broker.answer(event.request_id, ApprovalResponse(outcome=outcome))

    async with answering(session.bus, "approval.requested", decide) as asked:
        events = await run_all(session, "write the files")

    assert [a.args["path"] for a in asked] == ["yes.txt", "no.txt"]
    assert [a.outcome for a in of_type(events, "approval.answered")] == ["approve_once", "deny"]
    assert (ws / "yes.txt").read_text() == "kept"
    assert not (ws / "no.txt").exists()
    results = of_type(events, "step.tool_result", tool="write_file")
    assert [r.ok for r in results] == [True, False]
    # The model saw the refusal as a tool message.
    last_call = _model(session).calls[-1]
    tool_msgs = [m for m in last_call.messages if isinstance(m, ToolMessage)]
    assert len(tool_msgs) == 2
    assert "denied write_file" in str(tool_msgs[1].content)
    assert tool_msgs[1].status == "error"


async def test_path_escape_is_refused(make_session: SessionFactory, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("TOP-SECRET-VALUE")
    brain = Brain()
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01", "read the secret")))
    brain.add(
        "step:S-01",
        ScriptedReply(tool_calls=[{"name": "read_file", "args": {"path": "../secret.txt"}}]),
        "I cannot read files outside the workspace.",
    )
    session = await make_session(brain)
    events = await run_all(session, "read ../secret.txt")

    result = one(events, "step.tool_result", tool="read_file")
    assert not result.ok and "outside the workspace" in result.output
    last_call = _model(session).calls[-1]
    (tool_msg,) = [m for m in last_call.messages if isinstance(m, ToolMessage)]
    assert "outside the workspace" in str(tool_msg.content)
    # Nothing outside the workspace was read: the secret is in no prompt, event or evidence.
    for call in _model(session).calls:
        assert all("TOP-SECRET" not in str(m.content) for m in call.messages)
    assert all("TOP-SECRET" not in e.model_dump_json() for e in events)


# --- invalid plans ----------------------------------------------------------------------------


async def test_plan_repaired_from_code_fences_and_trailing_comma(
    make_session: SessionFactory,
) -> None:
    brain = Brain()
    brain.add("Classification", classify("simple"))
    fenced = '```json\n{"steps": [{"id": "S-01", "description": "list files",},],}\n```'
    brain.add("PlanGeneration", fenced)
    brain.add("step:S-01", "two files")
    session = await make_session(brain)
    events = await run_all(session, "list files")

    assert brain.count("PlanGeneration") == 1  # repaired locally, not re-asked
    assert [s.id for s in one(events, "plan.created").steps] == ["S-01"]
    assert one(events, "answer.final").text == "two files"


async def test_plan_reasked_after_a_schema_invalid_reply(make_session: SessionFactory) -> None:
    brain = Brain()
    brain.add("Classification", classify("simple"))
    brain.add(
        "PlanGeneration",
        {"steps": [{"id": "S-01"}], "execution_mode": "sideways"},  # no description, bad enum
        plan(step("S-01", "list files")),
    )
    brain.add("step:S-01", "two files")
    session = await make_session(brain)
    events = await run_all(session, "list files")

    assert brain.count("PlanGeneration") == 2
    # The re-ask showed the model what was wrong with its first reply.
    second = [c for c in _model(session).calls if c.kwargs.get("format", {}).get("title")]
    plan_calls = [c for c in second if c.kwargs["format"]["title"] == "PlanGeneration"]
    feedback = str(plan_calls[1].messages[-1].content)
    assert "description" in feedback and "execution_mode" in feedback
    assert one(events, "plan.created").steps[0].description == "list files"
    assert one(events, "answer.final").text == "two files"


async def test_always_invalid_plan_fails_the_goal_without_raising(
    make_session: SessionFactory,
) -> None:
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.always["PlanGeneration"] = "I would rather chat about it."
    brain.always["StatusAssessment"] = "{not json"
    session = await make_session(brain)
    events = await run_all(session, "plan something")  # no exception reaches the caller

    assert not of_type(events, "run.failed")
    one(events, "run.finished")
    goal_id = one(events, "answer.final").goal_id
    goal = session.context.get_goal(goal_id)
    assert goal.status == "failed"
    assert "\n" not in goal.error and "PlanGeneration" in goal.error
    # One plan asked 1 + 2 re-asks; a model that cannot plan is not retried another round.
    assert brain.count("PlanGeneration") == 3
    moves = of_type(events, "goal.status_changed")
    failures = [e for e in moves if e.to_status == "failed" or e.will_retry]
    assert [(e.to_status, e.will_retry) for e in failures] == [("failed", False)]
    assert not of_type(events, "step.started")
    answer = one(events, "answer.final").text
    assert answer.startswith("The goal could not be completed") and "\n" not in answer


def _model(session: Session) -> Any:
    return session.hub.chat_model()


async def test_a_plan_cut_at_the_token_limit_is_never_installed(
    make_session: SessionFactory,
) -> None:
    """Every plan reply was cut mid-step: the half step ("Read no") is not repaired into
    a plan and run; planning fails honestly instead."""
    brain = Brain()
    brain.add("Classification", classify("simple"))
    cut = '{"steps": [{"id": "S-01", "description": "Read no'
    brain.add("PlanGeneration", *[ScriptedReply(text=cut, done_reason="length")] * 3)
    session = await make_session(brain)
    events = await run_all(session, "summarise the project")

    assert brain.count("PlanGeneration") == 3
    assert not [e for e in events if e.type == "plan.created"]
    assert session.context.get_goal("G1").status == "failed"
    answer = one(events, "answer.final").text
    assert "could not get a valid PlanGeneration" in answer and "cut off" in answer
