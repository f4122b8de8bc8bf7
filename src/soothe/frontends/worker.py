"""``soothe worker``: claim ready goals and run each through the normal loop.

Each goal goes through the Session and the runner as a goal of the TUI does (observe ->
StrangeLoop -> verify, checkpointed under its loop id). On PostgreSQL any number of
workers drain one store: claims are atomic and leased (``engine/context/queue.py``), the
lease is renewed while the goal runs, and a goal whose worker died is resumed by another
from its checkpoints once the lease expires. On SQLite the data-dir lock means one worker
(and no TUI) per data dir.

On PostgreSQL other processes may change the goal a worker runs (``soothe goals cancel``
or ``suspend`` on another machine): ``_follow`` reads its stored status every
``FOLLOW_S`` seconds, and a change made elsewhere is read in (``watch.poll``, which
publishes it on the session's bus: a cancel stops the loop through the runner's
``goal_cancelled`` callback, as a cancel in this process does); a goal no longer active
for any other reason (suspended) has its work stopped here, its running steps put back.

Prints one line per goal (``G3 completed``) and a summary line at the end (``--json``:
one object each); exits when no goal was ready for ``--idle-exit`` seconds or after
``--max-goals`` goals.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import time
import uuid
from typing import Any

from soothe.engine.config import Settings
from soothe.engine.context.errors import ContextError

FOLLOW_S = 1.0
"""How often a worker on a shared store reads the status of the goal it runs."""


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


async def _follow(session: Any, goal_id: str, work: asyncio.Task[str], every: float) -> bool:
    """On a shared store: read the running goal's status every ``every`` seconds; when
    another process changed it, read the store in (its events go on the bus: a cancel
    stops the loop) and stop the work if the goal is no longer running here. True when
    the goal was stopped from outside."""
    from soothe.engine.context.watch import poll

    context = session.context
    if not context.shared:
        return False
    while not work.done():
        await asyncio.sleep(every)
        rows = await context.store.execute("SELECT status FROM goals WHERE id = %s", (goal_id,))
        stored = str(rows[0][0]) if rows else None
        if context.has_goal(goal_id) and stored == context.get_goal(goal_id).status:
            continue
        await poll(context, session.bus)  # waits for a write of ours in flight
        now = context.get_goal(goal_id).status if context.has_goal(goal_id) else None
        if now in ("active", "validated"):
            continue
        if now == "cancelled":  # the runner's goal_cancelled callback stops the loop
            await asyncio.wait({work}, timeout=every)
        if not work.done():
            work.cancel()
        return True
    return False


def _changed_elsewhere(context: Any, goal_id: str) -> bool:
    """On a shared store: the goal, as last read, is no longer running here."""
    if not context.shared:
        return False
    return not context.has_goal(goal_id) or context.get_goal(goal_id).status not in (
        "active",
        "validated",
    )


async def _put_back_steps(context: Any, goal_id: str) -> None:
    """Steps of a goal stopped from outside that were running go back to pending (a
    resumed goal runs them again)."""
    if not context.has_goal(goal_id) or context.get_goal(goal_id).is_terminal:
        return
    for step in list(context.step_dag(goal_id).steps.values()):
        if step.status == "active":
            await context.reset_step(goal_id, step.id, "the goal was stopped by another process")


async def work(
    settings: Settings,
    *,
    idle_exit: float = 5.0,
    max_goals: int | None = None,
    lease_s: float = 30.0,
    poll_s: float = 0.25,
    out: Any = None,
    as_json: bool = False,
    follow_s: float = FOLLOW_S,
) -> dict[str, Any]:
    from soothe.engine.context.queue import GoalQueue
    from soothe.engine.session import Session

    out = out or sys.stdout
    session = Session(settings)
    await session.start()
    owner = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    workspace = str(settings.tools.resolved_workspace())
    queue = GoalQueue(session.context, owner, lease_s, workspace)
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
            follower = asyncio.ensure_future(_follow(session, claim.goal_id, task, follow_s))
            try:
                status = await task
            except (asyncio.CancelledError, ContextError) as exc:
                if isinstance(exc, asyncio.CancelledError) and not task.cancelled():
                    raise  # this worker is stopping
                stopped = follower.done() and not follower.cancelled() and follower.result()
                if not stopped and isinstance(exc, ContextError):
                    # a move refused because the follower has read in a change made
                    # elsewhere (e.g. validating a goal cancelled meanwhile)
                    stopped = _changed_elsewhere(session.context, claim.goal_id)
                if not stopped:  # not stopped from outside
                    if isinstance(exc, ContextError):
                        raise
                    status = "lease lost"
                else:  # the goal was changed by another process while it ran
                    context = session.context
                    gone = not context.has_goal(claim.goal_id)
                    status = "removed" if gone else str(context.get_goal(claim.goal_id).status)
                    await _put_back_steps(context, claim.goal_id)
            finally:
                for helper in (holder, follower):
                    helper.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await helper
                await queue.release(claim.goal_id)
            ran.append(claim.goal_id)
            line = json.dumps({"goal": claim.goal_id, "status": status}) if as_json else None
            print(line or f"{claim.goal_id} {status}", file=out, flush=True)
            idle_since = time.monotonic()
        calls = session.hub.usage.calls
    finally:
        await session.close()
    summary = {"owner": owner, "goals": ran, "calls": calls}
    if as_json:
        print(json.dumps({"worker": owner, "goals": len(ran), "calls": calls}), file=out)
    else:
        print(f"worker {owner}: {len(ran)} goals, {calls} model calls", file=out, flush=True)
    return summary


def run_worker(
    settings: Settings,
    idle_exit: float,
    max_goals: int | None,
    lease_s: float,
    *,
    as_json: bool = False,
) -> int:
    asyncio.run(
        work(settings, idle_exit=idle_exit, max_goals=max_goals, lease_s=lease_s, as_json=as_json)
    )
    return 0
