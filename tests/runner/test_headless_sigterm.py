"""SIGTERM to ``soothe -p`` in the middle of a step does what Ctrl+C does: the step is
suspended (``‖ S-02 paused`` at a terminal, ``step.suspended`` with --json), the goal
can be resumed, and the exit code is 143 (128 + SIGTERM). Before, the default SIGTERM
action killed the process: no line, the goal left ``active``.

A real process, a real SIGTERM while the model is asked for the step (that call hangs)."""

from __future__ import annotations

import json
import signal
from typing import Any

from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, Stored
from tests.runner.test_headless_interrupt import two_steps
from tests.runner.test_interrupt import replan_the_summary, signal_at


def terminate_at(
    fake: Any, brain: Brain, env: Env, step: str, *args: str, tty: bool = False
) -> tuple[int, str, str]:
    """Run ``soothe ARGS`` (stderr a pty when ``tty``); SIGTERM once the model is asked
    for ``step``. Returns (exit code, stdout, stderr with CRLF made LF)."""
    return signal_at(fake, brain, env, step, signal.SIGTERM, *args, tty=tty, reach_s=60)


def test_sigterm_mid_step_suspends_it_exits_143_and_resumes(
    soothe: Any, brain: Brain, fake: Any, env: Env, stored: Any
) -> None:
    two_steps(brain)

    code, out, err = terminate_at(fake, brain, env, "S-02", "-p", "Summarise the facts", tty=True)

    assert code == 143, err
    assert out == ""
    lines = err.splitlines()
    paused = [i for i, line in enumerate(lines) if line.startswith("‖ S-02 paused")]
    assert len(paused) == 1, err
    db: Stored = stored()
    thread = db.threads[0].id
    assert lines[-1] == f"error: terminated; resume with: soothe --thread {thread} -p ''", err
    assert paused[0] < len(lines) - 1
    assert "Traceback" not in err
    (goal,) = db.goals
    assert goal.status == "suspended"
    assert db.step_status(goal.id) == {"S-01": "completed", "S-02": "pending"}

    # Resumed: S-01 is not asked again, the summary is written, the goal completes.
    replan_the_summary(brain)
    brain.add("step", "Summary: three facts.")

    result = soothe("-p", "", "--thread", thread)

    assert (result.code, result.out) == (0, "Summary: three facts.\n"), result.err
    assert brain.count("step:S-01") == 1
    (goal,) = stored().goals
    assert goal.status == "completed"


def test_sigterm_with_json_streams_the_suspension_and_ends_with_run_failed(
    brain: Brain, fake: Any, env: Env
) -> None:
    two_steps(brain)

    code, out, err = terminate_at(fake, brain, env, "S-02", "-p", "Summarise the facts", "--json")

    assert code == 143, err
    events = [json.loads(line) for line in out.splitlines()]
    suspended = [e for e in events if e["type"] == "step.suspended"]
    assert [e["step_id"] for e in suspended] == ["S-02"], out
    assert events[-1]["type"] == "run.failed" and events[-1]["kind"] == "interrupted", out
    assert events[-1]["error"].startswith("terminated; resume with: soothe --thread "), out
    assert [e["type"] for e in events].count("run.failed") == 1, out
