"""Many workers on one PostgreSQL goal store (issue 16). Prints figures, asserts nothing.

1. 1, 2 and 4 ``soothe worker`` processes drain a 40-goal DAG (chains and fan-outs)
   against the fake Ollama server answering every call after 150 ms: wall time (first
   claim to last finish, from the goals' own timestamps, and the processes' wall) and the
   model calls (the workers' own counts and the server's), which must stay equal.
2. Claim latency and throughput of the goal store (``GoalQueue.claim`` -> activate ->
   complete -> release) under 8 concurrent in-process workers on 400 independent goals.
3. ContextEngine figures on PostgreSQL beside SQLite (a smaller graph than
   bench_context.py: 2,000 goals, 4,000 edges).

Needs the PostgreSQL 15 binaries (a throwaway cluster, tests/pg/cluster.py).
Run: ``.venv/bin/python bench/bench_workers.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.brain import Brain  # noqa: E402
from tests.fakes.ollama_server import FakeOllamaServer  # noqa: E402
from tests.pg import cluster as pg_cluster  # noqa: E402

from soothe.engine.context import ContextEngine, GoalSpec  # noqa: E402
from soothe.engine.context.queue import GoalQueue  # noqa: E402
from soothe.engine.context.store_pg import PgStore  # noqa: E402

CALL_S = 0.15
ONE_STEP = {"steps": [{"id": "S-01", "description": "do the part"}]}
DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": True}


def dag_specs() -> list[GoalSpec]:
    """40 goals: 4 chains of 4, 2 fan-outs (a root, 8 branches, a join), 4 loose goals."""
    specs: list[GoalSpec] = []
    for c in range(4):
        for i in range(4):
            deps = [f"c{c}.{i - 1}"] if i else []
            specs.append(
                GoalSpec(description=f"chain {c} part {i}", ref=f"c{c}.{i}", depends_on=deps)
            )
    for f in range(2):
        specs.append(GoalSpec(description=f"fan {f} root", ref=f"f{f}"))
        for b in range(8):
            specs.append(
                GoalSpec(description=f"fan {f} branch {b}", ref=f"f{f}.{b}", depends_on=[f"f{f}"])
            )
        specs.append(
            GoalSpec(
                description=f"fan {f} join",
                ref=f"f{f}.j",
                depends_on=[f"f{f}.{b}" for b in range(8)],
            )
        )
    specs.extend(GoalSpec(description=f"loose {n}") for n in range(4))
    assert len(specs) == 40
    return specs


class SlowBrain(Brain):
    """Every call answered after CALL_S (the server is threaded: calls overlap)."""

    def reply(self, body: dict[str, Any]) -> Any:
        time.sleep(CALL_S)
        return super().reply(body)


def _brain() -> SlowBrain:
    brain = SlowBrain()
    brain.always.update(
        {
            "Classification": {"label": "complex", "answer": "", "reason": "work"},
            "PlanGeneration": ONE_STEP,
            "step:S-01": "The part is done.",
            "StatusAssessment": DONE,
            "complete": "Done.",
            "text": "Done.",
        }
    )
    return brain


def _env(home: Path, dsn: str, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOOTHE_", "XDG_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "cfg"),
        XDG_DATA_HOME=str(home / "data"),
        SOOTHE_STORAGE__BACKEND="postgresql",
        SOOTHE_STORAGE__DSN=dsn,
        SOOTHE_TOOLS__WORKSPACE=str(home),
        PYTHONPATH=str(ROOT / "src"),
    )
    return env


async def _seed(dsn: str) -> None:
    engine = await ContextEngine.open(await PgStore.open(dsn))
    try:
        thread = await engine.create_thread("bench")
        specs = [s.model_copy(update={"thread_id": thread.id}) for s in dag_specs()]
        await engine.create_goals(specs)
    finally:
        await engine.close()


async def _goal_times(dsn: str) -> tuple[int, float]:
    engine = await ContextEngine.open(await PgStore.open(dsn))
    try:
        goals = engine.list_goals()
        done = [g for g in goals if g.status == "completed"]
        starts = [g.started_at for g in done if g.started_at]
        ends = [g.finished_at for g in done if g.finished_at]
        return len(done), (max(ends) - min(starts)) if starts and ends else 0.0
    finally:
        await engine.close()


def drain(cluster: pg_cluster.Cluster, workers: int, tmp: Path) -> dict[str, float]:
    dsn = cluster.create_database(f"drain_{workers}")
    asyncio.run(_seed(dsn))
    brain = _brain()
    with FakeOllamaServer(responder=brain, hang_limit=5.0) as server:
        start = time.perf_counter()
        procs = []
        for w in range(workers):
            home = tmp / f"w{workers}-{w}"
            home.mkdir(parents=True)
            cmd = [sys.executable, "-m", "soothe", "worker", "--idle-exit", "2"]
            cmd += ["--provider", "ollama", "--base-url", server.url, "--model", "llama3.2"]
            cmd += ["--data-dir", str(home / "soothe")]
            procs.append(
                subprocess.Popen(
                    cmd,
                    cwd=home,
                    env=_env(home, dsn, server.url),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        outs = [p.communicate(timeout=600) for p in procs]
        process_wall = time.perf_counter() - start
    calls = 0
    for (out, err), proc in zip(outs, procs, strict=True):
        if proc.returncode != 0:
            raise SystemExit(f"worker failed ({proc.returncode}):\n{err}")
        last = out.strip().splitlines()[-1]  # "worker OWNER: N goals, M model calls"
        calls += int(last.split(",")[-1].split()[0])
    completed, wall = asyncio.run(_goal_times(dsn))
    kinds: dict[str, int] = {}
    for kind in brain.kinds():
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "workers": workers,
        "completed": completed,
        "wall_s": wall,
        "process_wall_s": process_wall,
        "model_calls": calls,
        "server_calls": len(brain.calls),
        "kinds": json.dumps(kinds, sort_keys=True),  # type: ignore[dict-item]
    }


async def claims(dsn: str, workers: int = 8, goals: int = 400) -> dict[str, float]:
    setup = await ContextEngine.open(await PgStore.open(dsn))
    await setup.create_goals([GoalSpec(description=f"g{i}") for i in range(goals)])
    await setup.close()
    latencies: list[float] = []
    done = [0]

    async def worker(name: str) -> None:
        engine = await ContextEngine.open(await PgStore.open(dsn))
        queue = GoalQueue(engine, name, lease_s=30)
        try:
            while True:
                t0 = time.perf_counter()
                claim = await queue.claim()
                latencies.append(time.perf_counter() - t0)
                if claim is None:
                    return
                await engine.activate_goal(claim.goal_id)
                await engine.complete_goal(claim.goal_id)
                await queue.release(claim.goal_id)
                done[0] += 1
        finally:
            await engine.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker(f"w{i}") for i in range(workers)))
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "claim_workers": workers,
        "claimed_goals": done[0],
        "claim_p50_ms": statistics.median(latencies) * 1000,
        "claim_p95_ms": latencies[int(len(latencies) * 0.95)] * 1000,
        "goals_per_s": done[0] / elapsed,
    }


async def engine_figures(open_engine: Any) -> dict[str, float]:
    """The bench_context.py measures, smaller: per-call creates, a batch, transitions,
    ready set, projection, reopen."""
    rng = random.Random(7)
    out: dict[str, float] = {}
    engine = await open_engine("per_call")
    start = time.perf_counter()
    previous: list[str] = []
    for i in range(200):
        goal = await engine.create_goal(f"goal {i}", depends_on=previous[-2:])
        previous.append(goal.id)
    out["create_per_call_goals_per_s"] = 200 / (time.perf_counter() - start)
    await engine.close()
    engine = await open_engine("batch")
    specs = [
        GoalSpec(
            description=f"goal number {i}: part {i % 97}",
            priority=rng.randint(0, 100),
            depends_on=[f"g{d}" for d in rng.sample(range(i), min(i, 2))],
            ref=f"g{i}",
        )
        for i in range(2000)
    ]
    start = time.perf_counter()
    created = await engine.create_goals(specs)
    out["create_batch_goals_per_s"] = len(created) / (time.perf_counter() - start)
    start = time.perf_counter()
    for goal in created[:300]:
        await engine.activate_goal(goal.id, loop_id="bench")
        await engine.complete_goal(goal.id, findings=f"findings of {goal.id}")
    out["transitions_per_s"] = 600 / (time.perf_counter() - start)
    focus = created[305].id
    t0 = time.perf_counter()
    for _ in range(20):
        engine.ready_goals()
    out["ready_set_ms"] = (time.perf_counter() - t0) / 20 * 1000
    t0 = time.perf_counter()
    for _ in range(100):
        engine.project(focus)
    out["projection_ms"] = (time.perf_counter() - t0) / 100 * 1000
    if engine.shared:
        t0 = time.perf_counter()
        await engine.refresh()
        out["refresh_s"] = time.perf_counter() - t0
    await engine.close()
    start = time.perf_counter()
    reopened = await open_engine("batch")
    out["reopen_s"] = time.perf_counter() - start
    await reopened.close()
    return out


def main() -> int:
    why = pg_cluster.missing()
    if why:
        print(f"skipped: {why}")
        return 0
    cluster = pg_cluster.start()
    try:
        with tempfile.TemporaryDirectory(prefix="soothe-bench-workers-") as tmp:
            print(f"40-goal DAG, fake model {CALL_S * 1000:.0f} ms per call")
            print(f"{'workers':>7} {'wall s':>8} {'procs s':>8} {'calls':>6} {'server':>6}  kinds")
            for n in (1, 2, 4):
                row = drain(cluster, n, Path(tmp))
                print(
                    f"{row['workers']:>7} {row['wall_s']:>8.2f} {row['process_wall_s']:>8.2f} "
                    f"{row['model_calls']:>6} {row['server_calls']:>6}  {row['kinds']}"
                    + ("" if row["completed"] == 40 else f"  ONLY {row['completed']} completed")
                )
            print()
            figures = asyncio.run(claims(cluster.create_database("claims")))
            for key, value in figures.items():
                print(f"{key:<16} {value:,.2f}")
            print()
            pg_dsn = cluster.create_database("engine")

            async def on_pg(name: str) -> ContextEngine:
                import psycopg

                with psycopg.connect(pg_dsn, autocommit=True) as conn:
                    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {name}")
                return await ContextEngine.open(await PgStore.open(pg_dsn, schema=name))

            async def on_sqlite(name: str) -> ContextEngine:
                return await ContextEngine.open(Path(tmp) / f"{name}.db")

            sqlite = asyncio.run(engine_figures(on_sqlite))
            pg = asyncio.run(engine_figures(on_pg))
            print(f"{'ContextEngine (2,000 goals)':<28} {'SQLite':>10} {'PostgreSQL':>11}")
            for key in pg:
                left = f"{sqlite[key]:>10,.2f}" if key in sqlite else f"{'-':>10}"
                print(f"{key:<28} {left} {pg[key]:>11,.2f}")
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
