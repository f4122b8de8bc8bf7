"""Ctrl+C while a step runs in ``soothe -p`` at a terminal: the progress line says the
step paused (``‖ S-01 paused: interrupted by the user``) before the ``error:`` line.

A real process, its stderr a pty (so progress lines show), a real SIGINT while the
model is asked for the step (that call hangs)."""

from __future__ import annotations

import json
import signal
from typing import Any

from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env
from tests.runner.test_interrupt import interrupt_at, signal_at


def interrupt_at_terminal(
    fake: Any, brain: Brain, env: Env, step: str, *args: str
) -> tuple[int, str]:
    """Run ``soothe ARGS`` with stderr a terminal; SIGINT once the model is asked for
    ``step``. Returns (exit code, stderr with CRLF made LF)."""
    code, _out, err = signal_at(fake, brain, env, step, signal.SIGINT, *args, tty=True)
    return code, err


def two_steps(brain: Brain) -> None:
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


def test_ctrl_c_mid_step_shows_the_pause_before_the_error(
    brain: Brain, fake: Any, env: Env
) -> None:
    two_steps(brain)

    code, err = interrupt_at_terminal(fake, brain, env, "S-02", "-p", "Summarise the facts")

    assert code == 130, err
    lines = err.splitlines()
    assert "▸ S-02 Write the summary" in lines, err
    paused = [i for i, line in enumerate(lines) if line.startswith("‖ S-02 paused")]
    errors = [i for i, line in enumerate(lines) if line.startswith("error: interrupted")]
    assert len(paused) == 1 and len(errors) == 1, err
    assert "interrupted by the user" in lines[paused[0]], err
    assert paused[0] < errors[0], err
    assert errors[0] == len(lines) - 1, err  # the error line is the last
    assert "Traceback" not in err


def test_ctrl_c_mid_step_with_json_streams_the_suspension(
    brain: Brain, fake: Any, env: Env
) -> None:
    """--json: ``step.suspended`` is in the stream, before the final ``run.failed``."""
    two_steps(brain)

    code, out, err = interrupt_at(fake, brain, env, "S-02", "-p", "Summarise the facts", "--json")

    assert code == 130, err
    events = [json.loads(line) for line in out.splitlines()]
    suspended = [e for e in events if e["type"] == "step.suspended"]
    assert [(e["step_id"], e["reason"]) for e in suspended] == [
        ("S-02", "interrupted by the user")
    ], out
    assert events[-1]["type"] == "run.failed" and events[-1]["kind"] == "interrupted", out
    assert [e["type"] for e in events].count("run.failed") == 1, out
