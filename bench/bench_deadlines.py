"""How long ``soothe -p`` takes to end against a model server that misbehaves (issue 30
item 6), and how many chat requests it sends: the fake Ollama of the tests, a
subprocess per scenario.

- ``endless``: the step's reply never ends (no ``done``, ``num_predict`` ignored).
- ``stall``: every step request stalls after the headers; ``model.timeout = 5``.
- ``trickle``: the step's reply comes a byte every 0.5 s; ``model.timeout = 2`` (never
  tripped), so only the call's wall-clock cap (default 5 x timeout = 10 s) ends it.

A run still going after ``--bound`` seconds (default 120) is killed and shown as such.
``--src DIR`` runs soothe from another source tree (e.g. ``git archive`` of an older
commit's ``src``) to measure the code before a change.

Run: ``.venv/bin/python bench/bench_deadlines.py [--src DIR] [--bound S] [NAME ...]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.fakes._base import FakeReply  # noqa: E402
from tests.fakes.brain import Brain  # noqa: E402
from tests.fakes.ollama_server import FakeOllamaServer  # noqa: E402

SIMPLE = {"label": "simple", "answer": "", "reason": "needs the files"}
ONE_STEP = {"steps": [{"id": "S-01", "description": "list the files"}]}


def _replan_forever(brain: Brain) -> None:
    brain.always["Classification"] = SIMPLE
    brain.always["PlanGeneration"] = ONE_STEP
    brain.always["StatusAssessment"] = {"status": "continue", "goal_progress": "low"}
    brain.always["Reflection"] = {"what_failed": "the step", "try_next": "again"}
    brain.always["complete"] = "done"
    brain.always["text"] = "done"


def _endless(brain: Brain) -> str:
    _replan_forever(brain)
    brain.always["step"] = FakeReply(endless=True)
    return ""


def _stall(brain: Brain) -> str:
    _replan_forever(brain)
    brain.always["step"] = FakeReply(stall=True)
    return "[model]\ntimeout = 5\n"


def _trickle(brain: Brain) -> str:
    _replan_forever(brain)
    brain.always["step"] = FakeReply(text="a.txt", trickle=0.5)
    return "[model]\ntimeout = 2\n"


SCENARIOS: dict[str, Callable[[Brain], str]] = {
    "endless": _endless,
    "stall": _stall,
    "trickle": _trickle,
}


def measure(name: str, src: Path | None, bound: float) -> dict[str, Any]:
    brain = Brain()
    config_text = SCENARIOS[name](brain)
    server = FakeOllamaServer(responder=brain, hang_limit=bound + 30)
    with server, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "ws").mkdir()
        config = home / "config.toml"
        config.write_text(config_text, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SOOTHE_", "XDG_"))}
        env.update(HOME=tmp, XDG_CONFIG_HOME=f"{tmp}/c", XDG_DATA_HOME=f"{tmp}/d")
        if src is not None:
            env["PYTHONPATH"] = str(src)
        args = ["-p", "list the files", "--config", str(config), "--provider", "ollama"]
        args += ["--base-url", server.url, "--model", "llama3.2"]
        args += ["--data-dir", f"{tmp}/data", "--workspace", f"{tmp}/ws"]
        started = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "soothe", *args],
            cwd=home / "ws",
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _, err = proc.communicate(timeout=bound)
            killed = False
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            killed = True
        wall = time.monotonic() - started
        requests = len(server.chat_requests())
    last = err.strip().splitlines()[-1] if err.strip() else ""
    return {
        "wall_s": wall,
        "requests": requests,
        "rc": proc.returncode,
        "killed": killed,
        "err": last,
    }


def run(
    names: list[str] | None = None, src: Path | None = None, bound: float = 120.0
) -> dict[str, float]:
    figures: dict[str, float] = {}
    for name in names or list(SCENARIOS):
        got = measure(name, src, bound)
        state = "killed at the bound" if got["killed"] else f"exit {got['rc']}"
        wall, requests = got["wall_s"], got["requests"]
        print(f"{name:8} {wall:6.1f} s  {requests:3} requests  {state}  {got['err'][:110]}")
        figures[f"{name}_wall_s"] = round(got["wall_s"], 1)
        figures[f"{name}_requests"] = got["requests"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=", ".join(SCENARIOS))
    parser.add_argument("--src", type=Path, default=None)
    parser.add_argument("--bound", type=float, default=120.0)
    ns = parser.parse_args()
    if unknown := set(ns.names) - set(SCENARIOS):
        parser.error(f"unknown scenario: {', '.join(sorted(unknown))}")
    run(ns.names or None, ns.src, ns.bound)


if __name__ == "__main__":
    main()
