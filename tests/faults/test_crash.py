"""A real process killed mid-step, then restarted; two processes on one data dir."""

from __future__ import annotations

import signal
from collections.abc import Callable

from tests.fakes._base import FakeReply
from tests.fakes.ollama_server import FakeOllamaServer
from tests.faults.harness import (
    Brain,
    Env,
    Result,
    check_persisted,
    spawn,
    wait_for,
)

Soothe = Callable[..., Result]
TWO_STEPS = {
    "execution_mode": "dependency",
    "steps": [
        {"id": "S-01", "description": "list the files"},
        {"id": "S-02", "description": "summarise them", "dependencies": ["S-01"]},
    ],
}


def test_sigkill_during_a_step_then_resume(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    (env.workspace / "notes.txt").write_text("hello\n")
    brain.add("Classification", {"label": "complex", "answer": "", "reason": "two parts"})
    brain.add("PlanGeneration", TWO_STEPS)
    brain.step("S-01", FakeReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}]))
    brain.step("S-01", "notes.txt")
    brain.step("S-02", FakeReply(hang=True))
    proc = spawn(env, "-p", "summarise the files")
    wait_for(brain.seen("step:S-02"), proc)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(10) == -signal.SIGKILL
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]

    # What the next process finds on disk: whole, with the goal still marked active.
    crashed = check_persisted(env.data_dir, idle=False)
    (thread,) = crashed.threads
    (goal,) = crashed.goals.values()
    assert goal.status == "active" and goal.attempts_after_crash == 0
    assert crashed.steps[goal.id] == {"S-01": "completed", "S-02": "active"}
    first_run = len(brain.calls)

    brain.step("S-02", "notes.txt says hello")
    brain.add("StatusAssessment", {"status": "done", "goal_progress": "complete"})
    brain.add("text", "The folder has notes.txt, which says hello.")
    r = soothe("-p", "", "--thread", thread)
    assert (r.code, r.err) == (0, "")
    assert r.out == "The folder has notes.txt, which says hello.\n"
    # Resumed from the checkpoint: no new classification or plan, S-01 not run again.
    assert brain.kinds()[first_run:] == ["step:S-02", "StatusAssessment", "complete"]
    resumed = check_persisted(env.data_dir)
    goal = resumed.goals[goal.id]
    assert goal.status == "completed" and goal.attempts_after_crash == 1
    assert resumed.steps[goal.id] == {"S-01": "completed", "S-02": "completed"}
    assert resumed.messages[thread] == [
        ("user", "summarise the files"),
        ("assistant", "The folder has notes.txt, which says hello."),
    ]
    assert resumed.evidence[goal.id] >= crashed.evidence[goal.id] + 1


def test_a_second_process_on_the_same_data_dir_is_refused(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    brain.add("Classification", {"label": "quiz", "answer": "4", "reason": "math"})
    release = brain.hold("Classification")
    proc = spawn(env, "-p", "what is 2+2?")
    try:
        wait_for(brain.seen("Classification"), proc)  # the first process is mid-run
        r = soothe("-p", "what is 3+3?")
        assert r.code == 1 and r.out == ""
        line = r.one_error()
        assert f"the data dir {env.data_dir} is in use by soothe (pid {proc.pid})" in line
        assert "--data-dir" in line
        r = soothe("-p", "", "--thread", "abc")
        assert r.code == 1 and "in use by soothe" in r.one_error()
    finally:
        release.set()
    out, err = proc.communicate(timeout=20)
    assert (proc.returncode, out, err) == (0, "4\n", "")
    assert brain.kinds() == ["Classification"]  # the refused runs asked nothing
    saved = check_persisted(env.data_dir)
    assert list(saved.messages.values()) == [[("user", "what is 2+2?"), ("assistant", "4")]]
