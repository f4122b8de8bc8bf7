"""Every process run_shell starts ends with its command: one that ``setsid``s or
double-forks is gone when the command ends, when the step is cancelled (Ctrl+C, SIGTERM)
and when soothe itself is killed (kill -9). Under bwrap (a PID namespace that dies with
its first process) and under Landlock (a subreaper supervisor with a parent-death
signal); both are driven through ``soothe -p`` against the fake Ollama.

Each test sleeps for a duration nobody else uses (``sleep 321.48213``), and looks for
that exact command line in /proc, so tests running side by side do not see each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from soothe.engine.agent.sandbox import Confinement, detect, landlock_abi
from soothe.engine.agent.shell import run_command
from tests.agent.helpers import running, unique_sleep
from tests.fakes._base import FakeReply
from tests.fakes.cli_harness import spawn
from tests.fakes.ollama_server import FakeOllamaServer
from tests.faults.harness import ONE_STEP, SIMPLE, Brain, Env, brain, env, fake, wait_for

__all__ = ["brain", "env", "fake"]  # fixtures used here

MODES = [
    pytest.param(
        "bwrap",
        id="bwrap",
        marks=pytest.mark.skipif(detect().kind != "bwrap", reason="bwrap is not usable here"),
    ),
    pytest.param(
        "landlock",
        id="landlock",
        marks=pytest.mark.skipif(landlock_abi() < 1, reason="no Landlock in this kernel"),
    ),
]


def wait_until(check: object, timeout: float) -> float | None:
    """Poll ``check()`` until true; the seconds it took, or None when it never was."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():  # type: ignore[operator]
            return time.monotonic() - start
        time.sleep(0.02)
    return None


def start_soothe(env: Env, mode: str, *args: str) -> subprocess.Popen[str]:
    """``soothe ARGS`` as a process in the isolated env, with run_shell's sandbox
    ``mode`` (``SOOTHE_SANDBOX=landlock`` hides bwrap from it)."""
    extra = {"SOOTHE_SANDBOX": "landlock"} if mode == "landlock" else {}
    return spawn(env, *args, **extra)


def script_shell(brain: Brain, command: str) -> None:
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "run_shell", "args": {"command": command}}]),
        "done",
    )


def kill_leftovers(argv: list[str]) -> None:
    """So a failing test does not leave its sleep behind."""
    for pid in running(argv):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


# --- the command ends -------------------------------------------------------------------


def daemonise(argv: list[str]) -> str:
    """The classic daemon(3) double fork (fork, setsid, fork) in a one-line python3."""
    return (
        'python3 -c "import os; os.fork() and os._exit(0); os.setsid(); '
        f"os.fork() and os._exit(0); os.execvp('sleep', {argv!r})\""
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", ["setsid", "double-fork"])
def test_what_a_command_leaves_running_is_gone_when_soothe_exits(
    fake: FakeOllamaServer, brain: Brain, env: Env, mode: str, shape: str
) -> None:
    sleep = unique_sleep(321)
    spawn = f"(setsid {' '.join(sleep)} &)" if shape == "setsid" else daemonise(sleep)
    script_shell(brain, f"{spawn}; echo started")
    proc = start_soothe(env, mode, "-p", "start it", "--yes", "--json")
    try:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert running(sleep) == [], f"{' '.join(sleep)} outlived soothe"
        # At once: the escaped process held the output pipe, so the call used to wait out
        # its 30 s timeout ("command timed out after 30s and was killed").
        assert '"output":"exit code 0\\nstarted\\n"' in out.replace(": ", ":"), out
    finally:
        kill_leftovers(sleep)


# --- soothe is stopped while the command runs ---------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "how", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["kill-9", "sigterm", "ctrl-c"]
)
def test_stopping_soothe_mid_command_takes_the_command_down(
    fake: FakeOllamaServer, brain: Brain, env: Env, mode: str, how: signal.Signals
) -> None:
    """kill -9 of soothe (nothing of soothe's runs after it), SIGTERM and Ctrl+C (the step
    is cancelled) while run_shell waits on ``sleep``, with a ``setsid`` one beside it."""
    sleep, escaped = unique_sleep(322), unique_sleep(323)
    script_shell(brain, f"(setsid {' '.join(escaped)} &); {' '.join(sleep)}")
    proc = start_soothe(env, mode, "-p", "wait a while", "--yes")
    try:
        # Bounds generous for a loaded machine (make test runs 4 workers).
        wait_for(brain.seen("step:S-01"), proc, timeout=90)
        assert wait_until(lambda: running(sleep) and running(escaped), 60), "never started"
        proc.send_signal(how)
        proc.communicate(timeout=60)
        took = wait_until(lambda: not running(sleep) and not running(escaped), 10)
        assert took is not None, f"still running after soothe got {how.name}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        kill_leftovers(sleep)
        kill_leftovers(escaped)


# --- the same, in-process: every sandbox kind, and $$ ----------------------------------------

KINDS = [
    *(
        pytest.param(Confinement(str(p.values[0]), "test"), id=str(p.id), marks=p.marks)  # type: ignore[arg-type]
        for p in MODES
    ),
    pytest.param(Confinement("none", "test"), id="none"),
]


@pytest.mark.parametrize("conf", KINDS)
async def test_a_cancelled_command_leaves_nothing(tmp_path: Path, conf: Confinement) -> None:
    sleep, escaped = unique_sleep(324), unique_sleep(325)
    task = asyncio.create_task(
        run_command(
            f"(setsid {' '.join(escaped)} &); {' '.join(sleep)}",
            tmp_path,
            60,
            1000,
            confinement=conf,
        )
    )
    try:
        for _ in range(3000):  # bounded (60 s), generous for a loaded machine
            if running(sleep) and running(escaped):
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the command never started")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 30)
        assert running(sleep) == [] and running(escaped) == []
    finally:
        kill_leftovers(sleep)
        kill_leftovers(escaped)


@pytest.mark.parametrize("conf", KINDS)
async def test_a_timed_out_command_leaves_nothing(tmp_path: Path, conf: Confinement) -> None:
    escaped = unique_sleep(326)
    try:
        result = await run_command(
            f"(setsid {' '.join(escaped)} &); echo up; sleep 30",
            tmp_path,
            3.0,  # time enough to get to "up" on a loaded machine
            1000,
            confinement=conf,
        )
        assert result.timed_out and result.output == "up\n"
        assert running(escaped) == []
    finally:
        kill_leftovers(escaped)


@pytest.mark.parametrize("conf", KINDS)
async def test_dollar_dollar_names_the_shell(tmp_path: Path, conf: Confinement) -> None:
    """``$$`` is the command's own shell: it can signal itself, its children see it as
    their parent, and it makes a unique temp name."""
    result = await run_command(
        "echo $$ > pid; kill -0 $(cat pid) && echo alive; "
        'test "$(sh -c \'echo $PPID\')" = "$$" && echo parent; '
        'f=$(mktemp "${TMPDIR:-/tmp}/x.$$.XXXX") && test -f "$f" && echo temp; '
        "exit 3",
        tmp_path,
        10,
        1000,
        confinement=conf,
    )
    assert (result.exit_code, result.output) == (3, "alive\nparent\ntemp\n")


@pytest.mark.parametrize("conf", KINDS)
async def test_a_command_killed_by_a_signal_says_so(tmp_path: Path, conf: Confinement) -> None:
    """The supervisor leaves as its shell did (killed by the same signal); bwrap reports
    a signal as a shell does, 128 + its number."""
    result = await run_command("echo bye; kill -TERM $$", tmp_path, 10, 1000, confinement=conf)
    code = 128 + signal.SIGTERM if conf.kind == "bwrap" else -signal.SIGTERM
    assert (result.exit_code, result.output) == (code, "bye\n")
