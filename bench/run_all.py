"""Run every ``bench/bench_*.py`` and print one table of their figures.

Each bench module exposes ``run() -> dict[str, float]`` (figure name -> value) and may
print details of its own. A module that fails to import or whose ``run()`` raises is
reported as an error row; the others still run. Exit status 1 if any module failed.

    python bench/run_all.py [NAME ...]     (NAME: e.g. startup for bench_startup.py)
"""

from __future__ import annotations

import importlib.util
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType

BENCH_DIR = Path(__file__).resolve().parent


def discover(names: list[str]) -> list[Path]:
    paths = sorted(BENCH_DIR.glob("bench_*.py"))
    if names:
        wanted = {n.removeprefix("bench_").removesuffix(".py") for n in names}
        paths = [p for p in paths if p.stem.removeprefix("bench_") in wanted]
    return paths


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench.{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_one(path: Path) -> tuple[list[tuple[str, str]], str | None]:
    """(rows of figure name and formatted value, error text or None)."""
    try:
        module = load(path)
        run = getattr(module, "run", None)
        if not callable(run):
            return [], "no run() function"
        figures = run()
        if not isinstance(figures, dict):
            return [], f"run() returned {type(figures).__name__}, not dict"
    except (Exception, SystemExit) as exc:
        traceback.print_exc(file=sys.stderr)
        return [], f"{type(exc).__name__}: {exc}".splitlines()[0]
    rows = []
    for name, value in figures.items():
        text = f"{value:.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)
        rows.append((str(name), text))
    return rows, None


def main(argv: list[str]) -> int:
    paths = discover(argv)
    if not paths:
        print("no bench modules found", file=sys.stderr)
        return 1
    table: list[tuple[str, str, str]] = []
    failed = 0
    for path in paths:
        print(f"== {path.stem}", flush=True)
        start = time.perf_counter()
        rows, error = run_one(path)
        elapsed = time.perf_counter() - start
        if error is not None:
            failed += 1
            table.append((path.stem, "ERROR", error))
        table.extend((path.stem, name, value) for name, value in rows)
        print(f"   ({elapsed:.1f} s)\n", flush=True)

    header = ("module", "figure", "value")
    widths = [max(len(row[i]) for row in [header, *table]) for i in range(3)]
    for row in [header, None, *table]:
        if row is None:
            print("-+-".join("-" * w for w in widths))
        else:
            print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
