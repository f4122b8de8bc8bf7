"""The loop tells the truth and recovers, through `soothe -p` against the fake Ollama:
a bad plan cannot kill a run, failed steps never end in a completed goal or exit 0, a
failed round is reflected on and retried with the failure in its prompt, and a goal whose
dependency failed is blocked, not left pending forever."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.fakes.brain import prompt_text
from tests.fakes.ollama_server import FakeOllamaServer
from tests.faults.harness import SIMPLE, Brain, Env, Result, check_persisted

Soothe = Callable[..., Result]
DONE = {"status": "done", "goal_progress": "complete"}


def plans(brain: Brain) -> list[dict[str, Any]]:
    return [b for k, b in brain.calls if k == "PlanGeneration"]


def test_a_self_dependent_first_plan_still_ends_with_an_answer(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    """The cycle is caught inside the re-ask path: the re-ask names it (and differs from
    the first try); when the model repeats it, the edge is dropped and recorded."""
    selfdep = {"steps": [{"id": "S-01", "description": "list the files", "dependencies": ["S-01"]}]}
    brain.add("Classification", SIMPLE)
    brain.add("PlanGeneration", selfdep, selfdep, selfdep)
    brain.step("S-01", "a.txt")
    brain.add("StatusAssessment", DONE)
    r = soothe("-p", "list the files")
    assert (r.code, r.out, r.err) == (0, "a.txt\n", "")
    bodies = plans(brain)
    assert len(bodies) == 3
    reask = bodies[1]["messages"][-1]["content"]
    assert "step S-01 depends on itself" in reask and "at most 3 steps" in reask
    assert bodies[0]["messages"][-1]["content"] != reask
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "completed" and saved.steps[goal.id] == {"S-01": "completed"}


def test_a_cycle_fixed_on_the_re_ask_costs_one_more_plan_call(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    cycle = {
        "steps": [
            {"id": "S-01", "description": "read a", "dependencies": ["S-02"]},
            {"id": "S-02", "description": "read b", "dependencies": ["S-01"]},
        ]
    }
    good = {"steps": [{"id": "S-01", "description": "read a and b"}]}
    brain.add("Classification", SIMPLE).add("PlanGeneration", cycle, good)
    brain.step("S-01", "a and b")
    brain.add("StatusAssessment", DONE)
    r = soothe("-p", "read a and b")
    assert (r.code, r.out) == (0, "a and b\n")
    assert "step cycle S-01 -> S-02 -> S-01" in plans(brain)[1]["messages"][-1]["content"]


def test_every_step_answer_empty_exits_1_and_the_goal_is_not_completed(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    brain.add("Classification", SIMPLE)
    brain.always["PlanGeneration"] = {"steps": [{"id": "S-01", "description": "list the files"}]}
    brain.always["step"] = ""
    # The model claims success anyway: not believed, no step succeeded.
    brain.always["StatusAssessment"] = DONE
    brain.always["Reflection"] = {"what_failed": "empty answers", "try_next": "use list_dir"}
    brain.always["text"] = ""
    r = soothe("-p", "list the files", "--json", "--max-iterations", "2")
    assert r.code == 1
    events = r.json_lines()
    assert events[-1]["type"] == "run.failed"
    assert "could not be completed" in events[-1]["error"]
    assert not [e for e in events if e["type"] == "answer.final" and e.get("text", "").strip()]
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "failed" and set(saved.steps[goal.id].values()) <= {"failed", "skipped"}
    (thread,) = saved.threads
    shown = soothe("threads", "show", thread)
    assert shown.code == 0 and "completed" not in shown.out.split("### ")[1].splitlines()[0]
    assert "✓ G1" not in shown.out


def test_a_second_round_runs_after_a_failed_first_with_the_failure_in_its_prompt(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    brain.add("Classification", SIMPLE)
    broken = {"steps": [{"id": "S-01", "description": "read the broken file"}]}
    other = {"steps": [{"id": "S-02", "description": "read the other file"}]}
    brain.add("PlanGeneration", broken, broken, other)
    brain.step("S-01", "", "")  # empty, asked again: empty -> the step fails
    brain.step("S-01.2", "", "")  # the replan's copy fails the same way
    brain.step("S-02", "found it")
    brain.add(
        "Reflection",
        {"what_failed": "the broken file gave nothing", "try_next": "read the other file"},
    )
    # Round 1 (2 iterations) ends exhausted with its steps failed: a reflection, the goal
    # back to pending (retry 1/2); round 2 starts with an assessment (continuation).
    replan = {"status": "replan", "goal_progress": "none"}
    brain.add("StatusAssessment", replan, replan, DONE)
    brain.add("text", "It is not done yet.", "found it")
    r = soothe("-p", "find it", "--json", "--max-iterations", "2")
    assert r.code == 0, (r.err, brain.kinds())
    events = r.json_lines()
    assert events[-1]["type"] == "answer.final" and events[-1]["text"] == "found it"
    kinds = brain.kinds()
    assert kinds.index("Reflection") < kinds.index("step:S-02")
    after = kinds[kinds.index("Reflection") + 1 :]
    assert after[:2] == ["StatusAssessment", "PlanGeneration"]  # round 2 assesses first
    round2 = plans(brain)[2]
    text = prompt_text(round2)
    assert "The previous attempt failed" in text and "S-01" in text
    assert "read the other file" in text  # the reflection's advice
    moves = [e["to_status"] for e in events if e["type"] == "goal.status_changed"]
    assert moves == ["active", "pending", "active", "validated", "completed"]
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "completed" and goal.retry_count == 1


def test_an_empty_done_is_sent_back_not_completed(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    """done with an empty final answer: send_back_goal, another round; in the last round
    the goal fails with the reason instead of completing."""
    brain.add("Classification", {"label": "complex", "answer": "", "reason": "big"})
    brain.always["PlanGeneration"] = {"steps": [{"id": "S-01", "description": "look"}]}
    brain.always["step"] = "   "
    brain.always["StatusAssessment"] = DONE
    brain.always["Reflection"] = {"what_failed": "nothing", "try_next": "look harder"}
    brain.always["text"] = ""
    r = soothe("-p", "look around", "--max-iterations", "1")
    assert r.code == 1 and r.out == ""
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "failed"
    assert json.dumps(goal.error)  # a reason is recorded
