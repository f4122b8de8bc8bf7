"""Start-up cost of the CLI: wall time of fresh processes, median of N runs.

python bench/bench_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = 15


def soothe_command() -> list[str]:
    script = Path(sys.executable).parent / "soothe"
    if script.exists():
        return [str(script)]
    found = shutil.which("soothe")
    return [found] if found else [sys.executable, "-m", "soothe"]


def commands() -> dict[str, list[str]]:
    soothe = soothe_command()
    return {
        "soothe --help": [*soothe, "--help"],
        "soothe --version": [*soothe, "--version"],
        "python -c 'import soothe.cli'": [sys.executable, "-c", "import soothe.cli"],
        "python -c 'pass' (interpreter floor)": [sys.executable, "-c", "pass"],
    }


def median_wall_ms(argv: list[str], runs: int) -> float:
    subprocess.run(argv, capture_output=True, check=True)  # warm the file cache
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run(runs: int = RUNS) -> dict[str, float]:
    figures = {f"{name} (ms)": median_wall_ms(argv, runs) for name, argv in commands().items()}
    width = max(len(name) for name in figures)
    print(
        f"start-up, median of {runs} runs, PYTHONDONTWRITEBYTECODE="
        f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}"
    )
    for name, value in figures.items():
        print(f"  {name:<{width}}  {value:8.1f}")
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    run(parser.parse_args().runs)
