"""A ``soothe worker`` SIGKILLed in the middle of a goal's second step, on PostgreSQL: once
its lease expires another worker resumes the goal from AsyncPostgresSaver's checkpoints
(the loop's and the step's), not from scratch: no second plan, the completed step is not
run again, and the interrupted step continues with its earlier tool result."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

import psycopg

from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, brain, env, fake  # noqa: F401
from tests.faults.harness import SIMPLE, quick_retries, wait_for  # noqa: F401

TWO_STEPS = {
    "steps": [
        {"id": "S-01", "description": "read a.txt"},
        {"id": "S-02", "description": "read b.txt", "dependencies": ["S-01"]},
    ]
}


def _worker(where: Env, dsn: str, *args: str) -> subprocess.Popen[str]:
    model = ["--provider", "ollama", "--base-url", where.url, "--model", "llama3.2"]
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "soothe",
            "worker",
            *args,
            *model,
            "--data-dir",
            str(where.data_dir),
        ],
        cwd=where.workspace,
        env=where.environ(
            SOOTHE_STORAGE__BACKEND="postgresql",
            SOOTHE_STORAGE__DSN=dsn,
            SOOTHE_TOOLS__WORKSPACE=str(where.workspace),
        ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigkilled_worker_resumed_from_postgres_checkpoints(
    brain: Brain,  # noqa: F811
    env: Env,  # noqa: F811
    pg_dsn: str,
) -> None:
    (env.workspace / "a.txt").write_text("alpha\n")
    (env.workspace / "b.txt").write_text("beta\n")
    added = subprocess.run(
        [sys.executable, "-m", "soothe", "goals", "add", "read a.txt then b.txt"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env.environ(SOOTHE_STORAGE__BACKEND="postgresql", SOOTHE_STORAGE__DSN=pg_dsn),
    )
    assert added.returncode == 0, added.stderr
    goal_id = added.stdout.split()[-1]
    brain.add("Classification", SIMPLE)
    brain.add("PlanGeneration", TWO_STEPS)
    brain.step("S-01", "a.txt says alpha.")
    brain.step(
        "S-02",
        FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "b.txt"}}]),
        FakeReply(hang=True),  # the 2nd request of S-02: the worker dies waiting
    )
    second = threading.Event()
    count = [0]

    def on_s02() -> None:
        count[0] += 1
        if count[0] == 2:
            second.set()

    brain.on("step:S-02", on_s02)
    doomed = _worker(env, pg_dsn, "--lease", "2", "--idle-exit", "30")
    wait_for(second, doomed, timeout=60)
    doomed.send_signal(signal.SIGKILL)
    assert doomed.wait(10) == -signal.SIGKILL
    doomed.communicate(timeout=10)
    before = len(brain.calls)
    assert brain.kinds().count("PlanGeneration") == 1

    brain.step("S-02", "b.txt says beta.")
    brain.add(
        "StatusAssessment",
        {"status": "done", "goal_progress": "complete", "require_goal_completion": True},
    )
    brain.always["complete"] = "a.txt says alpha; b.txt says beta."
    survivor = _worker(env, pg_dsn, "--lease", "2", "--idle-exit", "5")
    out, err = survivor.communicate(timeout=120)
    assert survivor.returncode == 0, err
    assert f"{goal_id} completed" in out, (out, err, brain.kinds()[before:], brain.unscripted)
    after = brain.kinds()[before:]
    assert "PlanGeneration" not in after, after  # the loop resumed from its checkpoint
    assert "step:S-01" not in after, after  # the completed step is not run again
    assert after[0] == "step:S-02", after
    sent = brain.calls[before].body["messages"]
    results = [m["content"] for m in sent if m["role"] == "tool"]
    assert len(results) == 1 and "beta" in results[0], sent  # continued, not restarted

    # Deleting the thread on PostgreSQL prunes its step checkpoints (as on SQLite).
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        (thread,) = conn.execute("SELECT thread_id FROM goals WHERE id = %s", (goal_id,)).fetchone()
        steps_sql = "SELECT count(*) FROM checkpoints WHERE left(thread_id, %s) = %s"
        prefix = (len(thread) + 1, thread + "/")
        assert conn.execute(steps_sql, prefix).fetchone()[0] > 0
    deleted = subprocess.run(
        [sys.executable, "-m", "soothe", "threads", "delete", thread],
        capture_output=True,
        text=True,
        timeout=60,
        env=env.environ(SOOTHE_STORAGE__BACKEND="postgresql", SOOTHE_STORAGE__DSN=pg_dsn),
    )
    assert deleted.returncode == 0, deleted.stderr
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert conn.execute(steps_sql, prefix).fetchone()[0] == 0
        for table in ("checkpoint_writes", "checkpoint_blobs"):
            sql = f"SELECT count(*) FROM {table} WHERE left(thread_id, %s) = %s"
            assert conn.execute(sql, prefix).fetchone()[0] == 0, table


async def test_prune_checkpoints_takes_only_that_threads_steps(pg_dsn: str) -> None:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    from soothe.engine.context.store_pg import open_pool, prune_checkpoints

    pool = await open_pool(pg_dsn)
    try:
        assert await prune_checkpoints(pool, "t1") == 0  # no checkpointer tables yet
        saver = AsyncPostgresSaver(pool)
        await saver.setup()
        for thread in ("t1/G1-L1/S-01/1", "t1/G1-L1/S-02/1", "t10/G2-L1/S-01/1", "G1-L1"):
            config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
            done = await saver.aput(config, empty_checkpoint(), {}, {})
            await saver.aput_writes(done, [("messages", "x")], "task-1")
        assert await prune_checkpoints(pool, "t1") >= 4
        async with pool.connection() as conn:
            left = await (await conn.execute("SELECT thread_id FROM checkpoints")).fetchall()
        assert sorted(r["thread_id"] for r in left) == ["G1-L1", "t10/G2-L1/S-01/1"]
    finally:
        await pool.close()
