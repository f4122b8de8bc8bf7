"""``soothe worker``: claim ready goals and run each through the normal loop.

Each goal goes through the Session and the runner as a goal of the TUI does (observe ->
StrangeLoop -> verify, checkpointed under its loop id). On PostgreSQL any number of
workers drain one store: claims are atomic and leased (``engine/context/queue.py``), the
lease is renewed while the goal runs, and a goal whose worker died is resumed by another
from its checkpoints once the lease expires. On SQLite the data-dir lock means one worker
(and no TUI) per data dir.

Prints one line per goal (``G3 completed``) and a summary line at the end; exits when no
goal was ready for ``--idle-exit`` seconds or after ``--max-goals`` goals.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import time
import uuid
from typing import Any

from soothe.engine.config import Settings


async def run_claimed(session: Any, claim: Any) -> str:
    """Run one claimed goal to the end of its loop; returns its status after."""
    context, runner = session.context, session.runner
    goal = context.get_goal(claim.goal_id)
    thread_id = goal.thread_id or await session.ensure_thread(goal.description)
    session.thread_id = thread_id
    from soothe.engine.llm.errors import LLMError, ModelErrorKind

    try:
        if claim.resumed and goal.status == "active":
            # Its worker died: steps it left running run again; completed ones and finished
            # tool calls come back from the checkpoints (the loop's and each step's).
            for step in list(context.step_dag(goal.id).steps.values()):
                if step.status == "active":
                    await context.reset_step(goal.id, step.id, "its worker stopped")
            await runner.continue_goal(goal.id, thread_id, goal.loop_id or "")
        else:
            await runner._agentic(goal.id, thread_id, "complex", await runner._history(thread_id))
    except LLMError as exc:
        if exc.kind != ModelErrorKind.goal_budget:
            raise
        # Suspended at one of its caps (the runner moved it): the worker goes on.
        return f"suspended ({exc.message})"
    return str(context.get_goal(goal.id).status)


async def _hold(queue: Any, goal_id: str, work: asyncio.Task[str]) -> None:
    """Renew the lease every third of it; a lease lost (taken after it expired) stops
    the work, so no goal runs in two workers at once."""
    while True:
        await asyncio.sleep(queue.lease_s / 3)
        if not await queue.renew(goal_id):
            work.cancel()
            return


async def work(
    settings: Settings,
    *,
    idle_exit: float = 5.0,
    max_goals: int | None = None,
    lease_s: float = 30.0,
    poll_s: float = 0.25,
    out: Any = None,
) -> dict[str, Any]:
    from soothe.engine.context.queue import GoalQueue
    from soothe.engine.session import Session

    out = out or sys.stdout
    session = Session(settings)
    await session.start()
    owner = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    queue = GoalQueue(session.context, owner, lease_s)
    ran: list[str] = []
    idle_since = time.monotonic()
    try:
        while max_goals is None or len(ran) < max_goals:
            claim = await queue.claim()
            if claim is None:
                if time.monotonic() - idle_since >= idle_exit:
                    break
                await asyncio.sleep(poll_s)
                continue
            task = asyncio.ensure_future(run_claimed(session, claim))
            holder = asyncio.ensure_future(_hold(queue, claim.goal_id, task))
            try:
                status = await task
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise
                status = "lease lost"
            finally:
                holder.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await holder
                await queue.release(claim.goal_id)
            ran.append(claim.goal_id)
            print(f"{claim.goal_id} {status}", file=out, flush=True)
            idle_since = time.monotonic()
        calls = session.hub.usage.calls
    finally:
        await session.close()
    print(f"worker {owner}: {len(ran)} goals, {calls} model calls", file=out, flush=True)
    return {"owner": owner, "goals": ran, "calls": calls}


def run_worker(settings: Settings, idle_exit: float, max_goals: int | None, lease_s: float) -> int:
    asyncio.run(work(settings, idle_exit=idle_exit, max_goals=max_goals, lease_s=lease_s))
    return 0
