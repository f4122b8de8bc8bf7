"""Ctrl+C in the middle of a run (a real SIGINT to a `soothe -p` process), then resume."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from typing import Any

from tests.fakes._base import FakeReply
from tests.runner.conftest import Brain, Env, prompt_text, step_of

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": False}


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
    second_step_reached = threading.Event()

    def hang_on_second_step(body: dict[str, Any]) -> Any:
        if step_of(body) == "S-02" and not second_step_reached.is_set():
            second_step_reached.set()
            return FakeReply(hang=True)  # the model "thinks" until the process is stopped
        return brain(body)

    fake.responder = hang_on_second_step
    proc = subprocess.Popen(
        [sys.executable, "-m", "soothe", "-p", "Summarise the facts", *env.base_args()],
        env=env.environ(),
        cwd=env.workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert second_step_reached.wait(timeout=20), "the run never reached step S-02"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    assert proc.returncode == 130
    assert out == ""
    thread = stored().threads[0].id
    assert err == f"error: interrupted; resume with: soothe --thread {thread} -p ''\n"
    db = stored()
    (goal,) = db.goals
    assert goal.status == "suspended"
    assert goal.loop_id
    assert db.step_status(goal.id)["S-01"] == "completed"
    assert ("system", "run interrupted") in db.messages[thread]

    # Resume: only the unfinished work is asked of the model.
    fake.responder = brain

    def assess(body: dict[str, Any]) -> dict[str, Any]:
        summary_done = re.search(r"\[completed\] Write the summary", prompt_text(body))
        return DONE if summary_done else {"status": "replan", "goal_progress": "medium"}

    brain.add("StatusAssessment", assess, assess, assess)
    brain.add(
        "PlanGeneration",
        {"steps": [{"id": "S-03", "description": "Write the summary"}]},
    )
    brain.add("step", "Summary: three facts.")
    calls_before = len(brain.calls)

    result = soothe("-p", "", "--thread", thread)

    assert (result.code, result.out, result.err) == (0, "Summary: three facts.\n", "")
    resumed = brain.calls[calls_before:]
    assert "Classification" not in [kind for kind, _ in resumed]
    assert [step_of(b) for kind, b in resumed if kind == "step"] != []
    assert "S-01" not in [step_of(b) for kind, b in resumed if kind == "step"]
    assert len([1 for kind, b in brain.calls if kind == "step" and step_of(b) == "S-01"]) == 1
    db = stored()
    (goal,) = db.goals
    assert goal.status == "completed" and goal.findings == "Summary: three facts."
    assert db.step_status(goal.id)["S-01"] == "completed"
