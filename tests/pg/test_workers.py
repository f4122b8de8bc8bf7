"""Many workers on one PostgreSQL store: atomic claims, leases, a SIGKILLed worker."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from soothe.engine.context import ContextEngine
from soothe.engine.context.queue import GoalQueue
from soothe.engine.context.store_pg import PgStore

ROOT = Path(__file__).resolve().parents[2]


async def _engine(dsn: str) -> ContextEngine:
    return await ContextEngine.open(await PgStore.open(dsn))


async def test_claim_race_runs_each_goal_once_in_dependency_order(pg_dsn: str) -> None:
    setup = await _engine(pg_dsn)
    chain = [await setup.create_goal("c0")]
    for i in range(1, 5):
        chain.append(await setup.create_goal(f"c{i}", depends_on=[chain[-1].id]))
    fan = [await setup.create_goal(f"f{i}", depends_on=[chain[0].id]) for i in range(8)]
    join = await setup.create_goal("join", depends_on=[g.id for g in fan])
    await setup.close()
    ran: list[tuple[str, str]] = []

    async def worker(name: str) -> None:
        engine = await _engine(pg_dsn)
        queue = GoalQueue(engine, name, lease_s=30)
        idle = 0
        try:
            while idle < 20:
                claim = await queue.claim()
                if claim is None:
                    idle += 1
                    await asyncio.sleep(0.05)
                    continue
                idle = 0
                await engine.activate_goal(claim.goal_id)
                ran.append((claim.goal_id, name))
                await asyncio.sleep(0.01)
                await engine.complete_goal(claim.goal_id, findings=name)
                await queue.release(claim.goal_id)
        finally:
            await engine.close()

    await asyncio.gather(*(worker(f"w{i}") for i in range(4)))
    ids = [g for g, _ in ran]
    assert sorted(ids) == sorted(g.id for g in [*chain, *fan, join]), "each goal exactly once"
    check = await _engine(pg_dsn)
    try:
        for goal in check.list_goals():
            assert goal.status == "completed"
            for dep in goal.depends_on:
                assert check.get_goal(dep).finished_at <= goal.started_at  # type: ignore[operator]
        assert len({w for _, w in ran}) > 1, "the work was shared"
    finally:
        await check.close()


async def test_conflicting_goals_never_run_together_across_workers(pg_dsn: str) -> None:
    a, b = await _engine(pg_dsn), await _engine(pg_dsn)
    try:
        g1 = await a.create_goal("one", priority=90)
        await a.create_goal("two", conflicts_with=[g1.id])
        qa, qb = GoalQueue(a, "A"), GoalQueue(b, "B")
        first = await qa.claim()
        assert first is not None and first.goal_id == g1.id
        assert await qb.claim() is None, "the other goal conflicts with a leased one"
        await a.activate_goal(g1.id)
        await a.complete_goal(g1.id)
        await qa.release(g1.id)
        second = await qb.claim()
        assert second is not None and second.goal_id == "G2"
    finally:
        await a.close()
        await b.close()


async def test_suspending_a_leased_goal_releases_its_lease(pg_dsn: str) -> None:
    """Suspended, a goal lets go of its worker's lease in the same transaction: once
    resumed another worker claims it at once (not after the lease runs out)."""
    a, b = await _engine(pg_dsn), await _engine(pg_dsn)
    try:
        goal = await a.create_goal("long one")
        qa, qb = GoalQueue(a, "A", lease_s=300), GoalQueue(b, "B", lease_s=300)
        assert (await qa.claim()) is not None
        await a.activate_goal(goal.id, loop_id="A-loop")
        assert (await qa.lease_of(goal.id))[0] == "A"
        await a.set_priority(goal.id, 70)  # a write that is not a move keeps the lease
        assert (await qa.lease_of(goal.id))[0] == "A"
        paused = await a.suspend_goal(goal.id, "suspended by the user")
        assert paused.loop_id is None
        assert await qa.lease_of(goal.id) == (None, None)
        assert await qa.renew(goal.id), "released by the move, not taken: not lost"
        await b.refresh()
        await b.resume_goal(goal.id)
        claim = await qb.claim()
        assert claim is not None and claim.goal_id == goal.id
        assert (await qb.lease_of(goal.id))[0] == "B"
        assert not await qa.renew(goal.id), "now another worker's"
    finally:
        await a.close()
        await b.close()


DYING_WORKER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from soothe.engine.context import ContextEngine
    from soothe.engine.context.queue import GoalQueue
    from soothe.engine.context.store_pg import PgStore

    async def main():
        engine = await ContextEngine.open(await PgStore.open(sys.argv[1]))
        queue = GoalQueue(engine, "doomed", lease_s=1.0)
        claim = await queue.claim()
        await engine.activate_goal(claim.goal_id, loop_id=claim.goal_id + "-L1")
        await engine.set_plan(claim.goal_id, [{"id": "S1", "description": "x"}], 1)
        await engine.start_step(claim.goal_id, "S1")
        print(claim.goal_id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
    """
)


async def test_lease_expires_after_sigkill_and_another_worker_resumes(pg_dsn: str) -> None:
    engine = await _engine(pg_dsn)
    try:
        goal = await engine.create_goal("long")
        child = subprocess.run(
            [sys.executable, "-c", DYING_WORKER, pg_dsn],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        assert child.returncode == -9, child.stderr
        assert child.stdout.strip() == goal.id
        queue = GoalQueue(engine, "survivor", lease_s=30)
        lease_seen = await queue.lease_of(goal.id)
        assert lease_seen[0] == "doomed"
        if await queue.claim() is not None:  # the lease (1 s) may have run out already
            raise AssertionError("claimed a goal under a live lease")
        time.sleep(1.2)
        claim = await queue.claim()
        assert claim is not None and (claim.goal_id, claim.resumed) == (goal.id, True)
        resumed = engine.get_goal(goal.id)
        assert (resumed.status, resumed.loop_id) == ("active", f"{goal.id}-L1")
        assert engine.step_dag(goal.id).steps["S1"].status == "active"
        assert (await queue.lease_of(goal.id))[0] == "survivor"
    finally:
        await engine.close()


def test_soothe_workers_drain_the_queue(pg_dsn: str, tmp_path: Path) -> None:
    """``soothe goals add`` then three ``soothe worker`` processes (demo model) on one
    store: every goal completed, each by exactly one worker, dependencies first."""
    env = {
        **os.environ,
        "SOOTHE_STORAGE__BACKEND": "postgresql",
        "SOOTHE_STORAGE__DSN": pg_dsn,
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "SOOTHE_DATA_DIR": str(tmp_path / "data"),
    }
    soothe = [str(Path(sys.executable).parent / "soothe")]

    def run(*args: str) -> str:
        done = subprocess.run(
            [*soothe, *args], capture_output=True, text=True, timeout=120, env=env
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    root = run("goals", "add", "list the files").split()[-1]
    ids = [root]
    for i in range(3):
        ids.append(run("goals", "add", f"part {i}", "--after", root).split()[-1])
    ids.append(run("goals", "add", "sum up", "--after", ",".join(ids[1:])).split()[-1])
    workers = [
        subprocess.Popen(
            [*soothe, "worker", "--provider", "demo", "--idle-exit", "3"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, "SOOTHE_DATA_DIR": str(tmp_path / f"data{i}")},
        )
        for i in range(3)
    ]
    outputs = [w.communicate(timeout=180) for w in workers]
    assert all(w.returncode == 0 for w in workers), [e for _, e in outputs]
    lines = [line for out, _ in outputs for line in out.splitlines() if line.startswith("G")]
    assert sorted(line.split()[0] for line in lines) == sorted(ids)
    import json

    rows = [json.loads(line) for line in run("goals", "list", "--json").splitlines()]
    assert {r["id"]: r["status"] for r in rows} == dict.fromkeys(ids, "completed")
    plain = run("goals", "list").splitlines()
    assert [line.split()[:2] for line in plain] == [[i, "completed"] for i in ids]
    assert plain[-1].endswith(f"sum up after {','.join(ids[1:-1])}")
