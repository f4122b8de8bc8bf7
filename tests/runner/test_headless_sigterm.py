"""SIGTERM to ``soothe -p`` in the middle of a step does what Ctrl+C does: the step is
suspended (``‖ S-02 paused`` at a terminal, ``step.suspended`` with --json), the goal
can be resumed, and the exit code is 143 (128 + SIGTERM). Before, the default SIGTERM
action killed the process: no line, the goal left ``active``.

A real process, a real SIGTERM while the model is asked for the step (that call hangs)."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
from typing import Any

from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain, prompt_text, step_of
from tests.fakes.cli_harness import Env, Stored
from tests.runner.test_headless_interrupt import _read_all, two_steps
from tests.runner.test_interrupt import DONE


def terminate_at(
    fake: Any, brain: Brain, env: Env, step: str, *args: str, tty: bool = False
) -> tuple[int, str, str]:
    """Run ``soothe ARGS`` (stderr a pty when ``tty``); SIGTERM once the model is asked
    for ``step``. Returns (exit code, stdout, stderr with CRLF made LF)."""
    reached = threading.Event()

    def hang_on_step(body: dict[str, Any]) -> Any:
        if step_of(body) == step and not reached.is_set():
            reached.set()
            return FakeReply(hang=True)
        return brain(body)

    fake.responder = hang_on_step
    chunks: list[bytes] = []
    master = slave = -1
    if tty:
        master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "soothe", *args, *env.base_args()],
        cwd=env.workspace,
        env=env.environ(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave if tty else subprocess.PIPE,
        text=True,
    )
    reader = threading.Thread(target=_read_all, args=(master, chunks), daemon=True)
    if tty:
        os.close(slave)
        reader.start()
    try:
        assert reached.wait(timeout=60), f"the run never reached step {step}"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        if tty:
            reader.join(timeout=10)
            err = b"".join(chunks).decode().replace("\r\n", "\n")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if tty:
            os.close(master)
        fake.responder = brain
    return proc.returncode, out, err


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
    def assess(body: dict[str, Any]) -> dict[str, Any]:
        summary_done = re.search(r"\[completed\] Write the summary", prompt_text(body))
        return DONE if summary_done else {"status": "replan", "goal_progress": "medium"}

    brain.add("StatusAssessment", assess, assess, assess)
    brain.add("PlanGeneration", {"steps": [{"id": "S-03", "description": "Write the summary"}]})
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
