"""``soothe`` as a subprocess in the CLI harness's isolation (tests/fakes/cli_harness.py),
with options in the arguments winning over the harness's defaults."""

from __future__ import annotations

import subprocess
import sys

from tests.fakes.cli_harness import Env, Result


def run(env: Env, *args: str, command: bool = False, timeout: float = 60) -> Result:
    """``soothe ARGS``; ``command=True`` for a subcommand (``undo``...), which gets only
    ``--data-dir``."""
    extra = ["--data-dir", str(env.data_dir)] if command else env.base_args(args)
    proc = subprocess.Popen(
        [sys.executable, "-m", "soothe", *args, *extra],
        cwd=env.workspace,
        env=env.environ(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"soothe did not exit:\n{out}\n{err}") from None
    return Result(proc.returncode, out, err)
