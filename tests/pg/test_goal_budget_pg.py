"""Per-goal budgets on PostgreSQL (issue 33 item 2): ``soothe worker`` (in-process, the
real Session on PgStore, the fake Ollama) respects a goal's caps as a run does: the goal
is suspended at its cap with the cap named, its spend stored in the shared store is the
server's count, the worker goes on; raised from another process and resumed, the next
worker completes it."""

from __future__ import annotations

import asyncio
import io
from typing import Any

from soothe.engine.config import load_settings
from soothe.engine.context import ContextEngine
from soothe.engine.context.store_pg import PgStore
from soothe.engine.goal_contract import GoalBudget
from soothe.frontends.worker import work
from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, brain, env, fake  # noqa: F401
from tests.fakes.ollama_server import FakeOllamaServer
from tests.faults.harness import ONE_STEP, quick_retries  # noqa: F401

LOOPING = FakeReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}], usage=(3000, 20))


def _settings(where: Env, dsn: str) -> Any:
    return load_settings(
        overrides={
            "model": {"provider": "ollama", "base_url": where.url, "name": "llama3.2"},
            "storage": {
                "backend": "postgresql",
                "dsn": dsn,
                "data_dir": str(where.data_dir),
            },
            "tools": {"workspace": str(where.workspace), "clarify": "auto"},
        }
    )


async def _engine(dsn: str) -> ContextEngine:
    return await ContextEngine.open(await PgStore.open(dsn))


async def test_a_worker_suspends_a_goal_at_its_cap_and_a_raised_cap_completes_it(
    brain: Brain,  # noqa: F811
    fake: FakeOllamaServer,  # noqa: F811
    env: Env,  # noqa: F811
    pg_dsn: str,
) -> None:
    (env.workspace / "a.txt").write_text("alpha\n", encoding="utf-8")
    setup = await _engine(pg_dsn)
    try:
        goal = await setup.create_goal("list the files", budget=GoalBudget(calls=3))
    finally:
        await setup.close()
    brain.add("PlanGeneration", ONE_STEP)
    brain.always["step:S-01"] = LOOPING
    settings = _settings(env, pg_dsn)
    out = io.StringIO()
    first = await work(settings, idle_exit=0.5, max_goals=1, out=out)
    assert first["goals"] == [goal.id]
    assert f"{goal.id} suspended ({goal.id} suspended at its budget: calls 3" in out.getvalue()
    assert len(fake.counted) == 3  # the plan and two step calls; the fourth never sent

    other = await _engine(pg_dsn)  # another process: the shared store
    try:
        stored = other.get_goal(goal.id)
        assert stored.status == "suspended" and stored.spent.calls == 3
        assert stored.spent.tokens == sum(p + o for p, o in fake.counted)
        assert other.over_budget(goal.id) == "budget: calls 3"
        await other.set_budget(goal.id, GoalBudget(calls=10))
        await other.resume_goal(goal.id)
    finally:
        await other.close()

    brain.always.pop("step:S-01")
    brain.always["step"] = "a.txt"
    brain.always["StatusAssessment"] = {"status": "done", "goal_progress": "complete"}
    brain.always["complete"] = "The folder holds a.txt."
    out = io.StringIO()
    await work(settings, idle_exit=0.5, max_goals=1, out=out)
    assert f"{goal.id} completed" in out.getvalue(), out.getvalue()
    check = await _engine(pg_dsn)
    try:
        done = check.get_goal(goal.id)
        assert done.status == "completed" and done.budget == GoalBudget(calls=10)
        assert done.spent.calls == len(fake.counted) <= 10
        assert done.spent.tokens == sum(p + o for p, o in fake.counted)
    finally:
        await check.close()
    await asyncio.sleep(0)
