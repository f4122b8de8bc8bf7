"""The model answers, but badly: broken or schema-invalid JSON, cut-off replies, unknown
tools, wrong argument types, empty replies, and a model that never says it is done."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.fakes._base import FakeReply
from tests.fakes.ollama_server import FakeOllamaServer
from tests.faults.harness import ONE_STEP, SIMPLE, Brain, Env, Result, check_persisted

Soothe = Callable[..., Result]
DONE = {"status": "done", "goal_progress": "complete"}


def user_prompts(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def test_broken_output_is_repaired_or_asked_again(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    """Code fences and trailing prose are repaired locally; a wrong enum, a missing field
    and a reply cut off at the token limit are asked again with what was wrong."""
    plan = json.dumps(ONE_STEP)
    brain.add("Classification", {"label": "urgent", "answer": ""}, SIMPLE)
    brain.add(
        "PlanGeneration",
        FakeReply(text=plan[:30], done_reason="length"),
        {"steps": [{"id": "S-01"}]},
        f"Here is the plan:\n```json\n{plan}\n```\nHope this helps!",
    )
    brain.step("S-01", "a.txt")
    r = soothe("-p", "list the files")
    assert (r.code, r.out, r.err) == (0, "a.txt\n", "")
    kinds = brain.kinds()
    assert kinds.count("Classification") == 2 and kinds.count("PlanGeneration") == 3
    bodies = [b for k, b in brain.calls if k in ("Classification", "PlanGeneration")]
    assert (
        "label: Input should be 'quiz', 'trivial', 'simple' or 'complex'"
        in (user_prompts(bodies[1])[-1])
    )
    assert "cut off at the token limit" in user_prompts(bodies[3])[-1]
    assert "steps.0.description: Field required" in user_prompts(bodies[4])[-1]
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "completed" and saved.steps[goal.id] == {"S-01": "completed"}


def test_output_that_stays_broken_fails_the_goal(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    """Give-up: the classifier falls back to planning; planning fails after its re-asks in
    every agentic round; the goal ends failed, and the run exits 1 with one line."""
    for kind in ("Classification", "PlanGeneration", "StatusAssessment"):
        brain.add(kind, *["I think you should list the files."] * 20)
    r = soothe("-p", "list the files")
    assert r.code == 1 and r.out == ""
    line = r.one_error()
    assert line == (
        "error: the goal could not be completed: could not get a valid PlanGeneration "
        "from the model after 3 tries: the reply is not a JSON object"
    )
    # Bounded: 3 classify tries, then plan x3 - at most in each of the 3 agentic rounds
    # (with an assessment x3 before the later ones).
    kinds = brain.kinds()
    assert kinds[:6] == ["Classification"] * 3 + ["PlanGeneration"] * 3
    assert len(kinds) <= 3 + 3 + 6 + 6
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "failed" and goal.error in line
    (thread,) = saved.messages
    assert saved.messages[thread][0] == ("user", "list the files")


def test_unknown_tools_and_wrong_argument_types_are_not_run(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env, monkeypatch: Any
) -> None:
    monkeypatch.setenv("SOOTHE_LOOP__AGENTIC_MAX_ITERATIONS", "1")
    (env.workspace / "keep.txt").write_text("keep me\n")
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    calls = [
        {"name": "delete_everything", "args": {"path": "."}},
        {"name": "write_file", "args": {"path": ["keep.txt"], "content": 42}},
        {"name": "read_file", "args": {"path": "keep.txt", "limit": "lots"}},
        {"name": "run_shell", "args": {"command": ["rm", "-rf", "."]}},
    ]
    brain.step("S-01", FakeReply(tool_calls=calls), "I could not use those tools.")
    brain.add("complete", "Nothing was cleaned up.")
    r = soothe("-p", "clean up", "--json", "--yes", "--max-iterations", "1")
    # The step's only write was refused (invalid arguments): the change did not happen,
    # so the goal fails however the step answered (issue 31).
    assert r.code == 1
    (failed,) = [e for e in r.json_lines() if e["type"] == "run.failed"]
    assert "the change did not happen: write_file(" in failed["error"]
    results = [e for e in r.json_lines() if e["type"] == "step.tool_result"]
    by_tool = {e["tool"]: e["output"] for e in results}
    assert [e["ok"] for e in results] == [False] * 4 and len(by_tool) == 4
    assert "unknown tool 'delete_everything'" in by_tool["delete_everything"]
    for tool in ("write_file", "read_file", "run_shell"):
        assert by_tool[tool].startswith(f"invalid arguments for {tool}: "), by_tool[tool]
    # The model hears what was wrong, once per call.
    step_calls = [body for kind, body in brain.calls if kind == "step:S-01"]
    tool_msgs = [m for m in step_calls[-1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs] == [e["output"] for e in results]
    assert (env.workspace / "keep.txt").read_text() == "keep me\n"
    assert sorted(p.name for p in env.workspace.iterdir()) == ["keep.txt"]
    check_persisted(env.data_dir)


def test_empty_replies(soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env) -> None:
    """Empty classification -> plan anyway; an empty step answer fails the step and the
    loop replans; an empty final summary falls back to the last step's answer."""
    brain.add("Classification", "", "", "")
    brain.add("PlanGeneration", ONE_STEP, ONE_STEP)
    # Asked twice (the second time compactly); the replan's step is renamed.
    brain.step("S-01", "", "").add("step", "a.txt and b.txt")
    brain.add("StatusAssessment", {"status": "replan", "goal_progress": "none"}, DONE)
    brain.add("text", "")
    r = soothe("-p", "list the files", "--json")
    assert r.code == 0 and r.err == ""
    events = r.json_lines()
    assert events[-1]["type"] == "answer.final" and events[-1]["text"] == "a.txt and b.txt"
    (failed,) = [e for e in events if e["type"] == "step.failed"]
    assert failed["error"] == "the model returned an empty answer"
    assert not brain.leftover() and not brain.unscripted
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "completed" and goal.findings == "a.txt and b.txt"


def test_a_model_that_never_says_done_is_stopped_by_the_iteration_bound(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    brain.add("Classification", {"label": "complex", "answer": "", "reason": "big"})
    brain.add("PlanGeneration", *[ONE_STEP] * 30)
    brain.add("step", *["found one more thing"] * 30)
    brain.add("StatusAssessment", *[{"status": "continue", "goal_progress": "low"}] * 30)
    brain.add("text", *["Partly done: one thing found; the rest is unknown."] * 5)
    r = soothe("-p", "find everything", "--max-iterations", "2")
    assert (r.code, r.err) == (0, "")
    assert r.out == (
        "Partly done: one thing found; the rest is unknown.\n\n"
        "_Stopped at the iteration limit (2); the goal may be incomplete._\n"
    )
    kinds = brain.kinds()
    steps = [k for k in kinds if k.startswith("step")]
    # Each agentic round (3 by default) runs at most 2 iterations of one step.
    assert 2 <= len(steps) <= 2 * 3 and brain.count("text") <= 3
    assert brain.calls[-1].matches("text")
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "completed" and goal.report == "iteration limit reached"


def test_autonomous_run_with_a_failed_sub_goal_prints_its_report_and_exits_1(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    brain.add(
        "GoalDecomposition",
        {
            "subgoals": [
                {"key": "a", "description": "list the files"},
                {"key": "b", "description": "count the lines", "depends_on": ["a"]},
            ]
        },
    )
    brain.add("PlanGeneration", {"steps": [{"id": "A-01", "description": "list the files"}]})
    brain.add("PlanGeneration", *["no plan, sorry"] * 20)
    brain.step("A-01", "a.txt")
    brain.add("StatusAssessment", DONE, *["no"] * 20)
    brain.add("text", "Files: a.txt")
    r = soothe("-p", "list and count", "--autonomous")
    assert r.code == 1
    line = r.one_error()
    assert line.startswith("error: the goal could not be completed: sub-goals not completed: G3")
    assert "could not get a valid PlanGeneration" in r.out  # G3's error, in the report
    assert r.out.startswith("# Report") and "[completed] list the files" in r.out
    saved = check_persisted(env.data_dir)
    assert [g.status for g in saved.goals.values()] == ["failed", "completed", "failed"]
