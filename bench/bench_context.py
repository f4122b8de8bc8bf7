"""ContextEngine at scale: 10,000 goals with 20,000 dependency edges.

Prints figures (no assertions). Targets on the 2-core dev machine: projection < 5 ms at
10,000 goals, ready set < 50 ms, reopen < 1 s. Run: ``.venv/bin/python bench/bench_context.py``.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from soothe.engine.context import ContextEngine, GoalSpec, StepSpec

GOALS = 10_000
EDGES = 20_000
PER_CALL_GOALS = 500
COMPLETED = 3_000


def _median_ms(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _specs(rng: random.Random) -> list[GoalSpec]:
    per_goal = [min(i, 2) for i in range(GOALS)]
    extra = EDGES - sum(per_goal)
    for i in range(GOALS - 1, GOALS - 1 - extra, -1):
        per_goal[i] += 1
    specs = []
    for i in range(GOALS):
        deps = rng.sample(range(i), per_goal[i]) if per_goal[i] else []
        specs.append(
            GoalSpec(
                description=f"goal number {i}: investigate part {i % 97} of the system",
                priority=rng.randint(0, 100),
                depends_on=[f"g{d}" for d in deps],
                ref=f"g{i}",
            )
        )
    return specs


async def _run(tmp: Path) -> dict[str, float]:
    rng = random.Random(7)
    figures: dict[str, float] = {}

    per_call = await ContextEngine.open(tmp / "per_call.db")
    start = time.perf_counter()
    previous: list[str] = []
    for i in range(PER_CALL_GOALS):
        goal = await per_call.create_goal(f"goal {i}", depends_on=previous[-2:])
        previous.append(goal.id)
    figures["create_per_call_goals_per_s"] = PER_CALL_GOALS / (time.perf_counter() - start)
    await per_call.close()

    path = tmp / "bench.db"
    engine = await ContextEngine.open(path)
    specs = _specs(rng)
    start = time.perf_counter()
    created = await engine.create_goals(specs)
    elapsed = time.perf_counter() - start
    figures["create_batch_s"] = elapsed
    figures["create_batch_goals_per_s"] = len(created) / elapsed
    figures["edges"] = float(sum(len(g.depends_on) for g in created))

    start = time.perf_counter()
    for goal in created[:COMPLETED]:
        await engine.activate_goal(goal.id, loop_id="bench")
        await engine.complete_goal(goal.id, findings=f"findings of {goal.id}")
    figures["transitions_per_s"] = 2 * COMPLETED / (time.perf_counter() - start)

    focus = created[COMPLETED + 5].id
    for src in created[:10]:
        await engine.add_informs(src.id, focus)
    steps = [
        StepSpec(id=f"S-{n:02d}", description=f"step {n}", dependencies=[f"S-{n - 1:02d}"])
        if n
        else StepSpec(id="S-00", description="step 0")
        for n in range(20)
    ]
    await engine.set_plan(focus, steps, 1)
    for n in range(60):
        await engine.append_ledger(focus, "assistant", f"thought {n} " * 20, "execute")

    ready = engine.ready_goals()
    figures["ready_goals"] = float(len(ready))
    figures["ready_set_ms"] = _median_ms(engine.ready_goals, 20)
    figures["next_goals_ms"] = _median_ms(engine.planning.scheduler.next_goals, 20)
    figures["projection_ms"] = _median_ms(lambda: engine.project(focus), 200)
    figures["projection_render_ms"] = _median_ms(lambda: engine.project(focus).render(), 200)
    figures["projection_chars"] = float(len(engine.project(focus).render()))
    await engine.close()

    start = time.perf_counter()
    reopened = await ContextEngine.open(path)
    figures["reopen_s"] = time.perf_counter() - start
    figures["reopened_goals"] = float(len(reopened.list_goals()))
    await reopened.close()
    figures["db_mb"] = path.stat().st_size / 1e6
    return figures


def run() -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="soothe-bench-") as tmp:
        return asyncio.run(_run(Path(tmp)))


def main() -> int:
    figures = run()
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key:<{width}}  {value:,.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
