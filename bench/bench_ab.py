"""Before/after figures in ONE run: alternate A (a base tree) and B (this tree).

Machines are noisy (two cores shared by everyone): a figure measured an hour ago is not
comparable with one measured now. This runs each bench as A B A B ... in fresh
processes, each importing its own tree's ``src`` (``PYTHONPATH``), and prints the median
of each figure per side and the ratio B/A.

    git worktree add /tmp/base12 022e40d
    .venv/bin/python bench/bench_ab.py [--base /tmp/base12] [--rounds 3] [loop requests]

Not a bench module for ``run_all.py`` (it has no ``run()``): it runs the others.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
MARK = "FIGURES-JSON "
_CHILD = f"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("bench_x", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
sys.modules["bench_x"] = mod
spec.loader.exec_module(mod)
figures = mod.run()
print({MARK!r} + json.dumps(figures))
"""


def run_side(tree: Path, bench: str) -> tuple[dict[str, float], str]:
    """One bench in a fresh process on ``tree``; its figures and its printed text."""
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    env.pop("NO_COLOR", None)
    script = tree / "bench" / f"bench_{bench}.py"
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(script)],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=900,
    )
    figures: dict[str, float] = {}
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            figures = {k: float(v) for k, v in json.loads(line[len(MARK) :]).items()}
    if proc.returncode != 0 or not figures:
        tail = (proc.stderr or proc.stdout)[-1500:]
        raise RuntimeError(f"bench_{bench} on {tree} failed (exit {proc.returncode}):\n{tail}")
    text = "\n".join(x for x in proc.stdout.splitlines() if not x.startswith(MARK))
    return figures, text


def load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=Path("/tmp/base12"))
    parser.add_argument("--tree", type=Path, default=HERE)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--show", action="store_true", help="print each run's own output")
    parser.add_argument("benches", nargs="*", default=["loop", "requests"])
    args = parser.parse_args(argv)
    sides = {"A": args.base.resolve(), "B": args.tree.resolve()}
    print(f"A = {sides['A']}   B = {sides['B']}   rounds = {args.rounds}")
    for bench in args.benches:
        runs: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
        for i in range(args.rounds):
            for side in ("A", "B"):
                t0 = time.perf_counter()
                figures, text = run_side(sides[side], bench)
                runs[side].append(figures)
                took = time.perf_counter() - t0
                print(f"  bench_{bench} round {i + 1} {side}: {took:5.1f} s, load {load()}")
                if args.show:
                    print(text)
        names = [n for n in runs["B"][0] if n in runs["A"][0]]
        only = sorted(set(runs["A"][0]) ^ set(runs["B"][0]))
        print(f"\nbench_{bench}: median of {args.rounds} runs per side, alternating A B")
        print(f"  {'figure':38} {'A (base)':>10} {'B (now)':>10} {'B/A':>7}")
        for name in names:
            a = statistics.median(r[name] for r in runs["A"])
            b = statistics.median(r[name] for r in runs["B"])
            ratio = f"{b / a:7.2f}" if a else "      -"
            print(f"  {name:38} {a:10.1f} {b:10.1f} {ratio}")
        if only:
            print("  (figures on one side only: " + ", ".join(only) + ")")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
