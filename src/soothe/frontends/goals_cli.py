"""``soothe goals add|list``: the headless goal queue that ``soothe worker`` drains.

Works on both backends. On SQLite the data-dir lock allows one process at a time, so
``goals add`` waits for a running worker's lock; on PostgreSQL any number of processes
add, list and work at once.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from soothe.engine.config import Settings
from soothe.engine.sanitize import one_line

QUEUE_THREAD = "goal queue"
"""The thread goals added without ``--thread`` go to."""


async def _queue_thread(session: Any) -> str:
    for thread in session.context.list_threads():
        if thread.title == QUEUE_THREAD:
            return str(thread.id)
    return str((await session.context.create_thread(QUEUE_THREAD)).id)


async def _goals(settings: Settings, args: Any) -> int:
    from soothe.engine.session import Session

    session = Session(settings)
    await session.open_storage()
    try:
        context = session.context
        if args.action == "add":
            if not args.text:
                print("error: `soothe goals add` needs the goal's text", file=sys.stderr)
                return 2
            after = [a for a in (args.after or "").replace(" ", "").split(",") if a]
            missing = [a for a in after if not context.has_goal(a)]
            if missing:
                print(
                    f"error: no goal {', '.join(missing)} (see `soothe goals list`)",
                    file=sys.stderr,
                )
                return 1
            with session._exclusive():
                thread_id = args.thread or await _queue_thread(session)
                if context.get_thread(thread_id) is None:
                    print(f"error: no thread '{thread_id}' (see `soothe threads`)", file=sys.stderr)
                    return 1
                goal = await context.create_goal(
                    args.text,
                    priority=max(0, min(100, args.priority)),
                    depends_on=after,
                    thread_id=thread_id,
                    source="user",
                )
            print(f"added {goal.id}")
            return 0
        for goal in context.list_goals():
            row = {
                "id": goal.id,
                "status": goal.status,
                "description": goal.description,
                "depends_on": list(goal.depends_on),
                "priority": goal.priority,
                "thread_id": goal.thread_id,
                "loop_id": goal.loop_id,
            }
            if args.json:
                print(json.dumps(row))
            else:
                waits = f" after {','.join(goal.depends_on)}" if goal.depends_on else ""
                text = one_line(goal.description)  # a model's or a user's words
                print(f"{goal.id:6} {goal.status:10} p{goal.priority:<3} {text}{waits}")
        return 0
    finally:
        await session.close()


def run_goals(settings: Settings, args: Any) -> int:
    return asyncio.run(_goals(settings, args))
