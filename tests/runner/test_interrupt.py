"""Ctrl+C in the middle of a run (a real SIGINT to a `soothe -p` process), then resume."""

from __future__ import annotations

import json
import re
import signal
import threading
from typing import Any

from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain, prompt_text, step_of
from tests.fakes.cli_harness import Env
from tests.fakes.pty_run import soothe_process

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": False}


def replan_the_summary(brain: Brain) -> None:
    """For a resumed two-step run whose S-02 was stopped: the plan is redone as S-03
    "Write the summary", and the goal is done once that step completed."""

    def assess(body: dict[str, Any]) -> dict[str, Any]:
        summary_done = re.search(r"\[completed\] Write the summary", prompt_text(body))
        return DONE if summary_done else {"status": "replan", "goal_progress": "medium"}

    brain.add("StatusAssessment", assess, assess, assess)
    brain.add("PlanGeneration", {"steps": [{"id": "S-03", "description": "Write the summary"}]})


def hang_at(fake: Any, brain: Brain, step: str) -> threading.Event:
    """The fake answers with ``brain``, except the first call for ``step``: it hangs (the
    model "thinks" until the process is stopped). The event is set once it is asked."""
    reached = threading.Event()

    def hang_on_step(body: dict[str, Any]) -> Any:
        if step_of(body) == step and not reached.is_set():
            reached.set()
            return FakeReply(hang=True)
        return brain(body)

    fake.responder = hang_on_step
    return reached


def signal_at(
    fake: Any,
    brain: Brain,
    env: Env,
    step: str,
    sig: signal.Signals,
    *args: str,
    tty: bool = False,
    reach_s: float = 20.0,
) -> tuple[int, str, str]:
    """Run ``soothe ARGS`` as a process (stderr a terminal when ``tty``); send ``sig``
    once the model is asked for ``step`` (that call hangs). Returns (exit code, stdout,
    stderr)."""
    reached = hang_at(fake, brain, step)
    try:
        with soothe_process(env, *args, tty=tty) as run:
            assert reached.wait(timeout=reach_s), f"the run never reached step {step}"
            run.proc.send_signal(sig)
            out, err = run.finish(timeout=20)
    finally:
        fake.responder = brain
    return run.proc.returncode, out, err


def interrupt_at(fake, brain: Brain, env: Env, step: str, *args: str) -> tuple[int, str, str]:
    """Run ``soothe ARGS`` as a process; send SIGINT once the model is asked for ``step``
    (that call hangs). Returns (exit code, stdout, stderr)."""
    return signal_at(fake, brain, env, step, signal.SIGINT, *args)


def test_sigint_suspends_the_goal_and_thread_resumes_it(
    soothe, brain: Brain, fake, env: Env, stored
) -> None:
    brain.add("Classification", {"label": "complex"})
    brain.add(
        "PlanGeneration",
        {
            "steps": [
                {"id": "S-01", "description": "Collect the facts"},
                {"id": "S-02", "description": "Write the summary", "dependencies": ["S-01"]},
            ]
        },
    )
    brain.step("S-01", "Three facts collected.")
    code, out, err = interrupt_at(fake, brain, env, "S-02", "-p", "Summarise the facts")

    assert code == 130
    assert out == ""
    thread = stored().threads[0].id
    assert err == f"error: interrupted; resume with: soothe --thread {thread} -p ''\n"
    db = stored()
    (goal,) = db.goals
    assert goal.status == "suspended"
    assert goal.loop_id is None  # suspended, it let go of its loop (the seed's rule)
    assert goal.started_at is not None  # resume finds the loop from its checkpoints
    assert db.step_status(goal.id)["S-01"] == "completed"
    assert ("system", "run interrupted") in db.messages[thread]

    # Resume: only the unfinished work is asked of the model.

    replan_the_summary(brain)
    brain.add("step", "Summary: three facts.")
    calls_before = len(brain.calls)

    result = soothe("-p", "", "--thread", thread)

    assert (result.code, result.out, result.err) == (0, "Summary: three facts.\n", "")
    resumed = brain.calls[calls_before:]
    assert "Classification" not in [kind for kind, _ in resumed]
    assert [step_of(c.body) for c in resumed if c.matches("step")] != []
    assert "S-01" not in [step_of(c.body) for c in resumed if c.matches("step")]
    assert brain.count("step:S-01") == 1
    db = stored()
    (goal,) = db.goals
    assert goal.status == "completed" and goal.findings == "Summary: three facts."
    assert db.step_status(goal.id)["S-01"] == "completed"


def test_interrupted_autonomous_run_resumes_every_sub_goal(
    soothe, brain: Brain, fake, env: Env, stored
) -> None:
    brain.add(
        "GoalDecomposition",
        {
            "subgoals": [
                {"key": "A", "description": "Find the version"},
                {"key": "B", "description": "Write the changelog line", "depends_on": ["A"]},
            ]
        },
    )
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Look it up"}]})

    code, out, err = interrupt_at(fake, brain, env, "S-01", "-p", "Release", "--autonomous")
    assert err.startswith("error: interrupted; resume with: soothe --thread ")

    assert (code, out) == (130, "")
    db = stored()
    status = {g.description: g.status for g in db.goals}
    assert status == {
        "Release": "blocked",
        "Find the version": "suspended",
        "Write the changelog line": "pending",
    }

    def assess(body: dict[str, Any]) -> dict[str, Any]:
        done = re.search(r"\[completed\]", prompt_text(body))
        return DONE if done else {"status": "replan", "goal_progress": "low"}

    brain.add("StatusAssessment", *[assess] * 4)
    brain.add(
        "PlanGeneration",
        {"steps": [{"id": "S-02", "description": "Look it up again"}]},
        {"steps": [{"id": "S-01", "description": "Write it"}]},
    )

    def step_answer(body: dict[str, Any]) -> str:
        finding = "Goal: Find the version" in prompt_text(body)
        return "The version is 3.1." if finding else "Changelog: 3.1"

    brain.add("step", step_answer, step_answer)

    result = soothe("-p", "", "--thread", db.threads[0].id, "--json")

    assert result.code == 0, result.err
    last = json.loads(result.out.splitlines()[-1])
    assert last["type"] == "answer.final" and last["text"].startswith("# Report")
    assert "report.final" in [json.loads(line)["type"] for line in result.out.splitlines()]
    db = stored()
    assert [g.status for g in db.goals] == ["completed"] * 3
    assert "3.1" in db.goals[0].findings
