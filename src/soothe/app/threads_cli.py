"""``soothe threads [list|show|export|delete]``."""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
from pathlib import Path

from soothe.engine.config import Settings


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


async def _threads(
    settings: Settings, action: str, thread_id: str | None, output: str | None
) -> int:
    from soothe.engine.context import ContextEngine
    from soothe.engine.export import thread_markdown

    if action != "list" and not thread_id:
        print(f"error: `soothe threads {action}` needs a thread id", file=sys.stderr)
        return 2
    context = await ContextEngine.open(settings.storage.db_path)
    try:
        if action == "list":
            threads = context.list_threads()
            if not threads:
                print("no threads yet")
                return 0
            if sys.stdout.isatty():  # scripts read the rows; a person gets a header
                print(f"{'id':12}  {'last active':16}  {'goals':>5}  title")
            for t in threads:
                goals = len(context.list_goals(thread_id=t.id))
                print(f"{t.id:12}  {_when(t.last_active)}  {goals:>5}  {t.title}")
            return 0
        assert thread_id is not None
        matches = [t.id for t in context.list_threads() if t.id.startswith(thread_id)]
        if len(matches) != 1:
            why = "no thread" if not matches else "more than one thread starts with"
            print(f"error: {why} '{thread_id}' (see `soothe threads`)", file=sys.stderr)
            return 1
        thread_id = matches[0]  # a unique prefix is enough, as with git
        if action == "delete":
            from soothe.engine.datalock import DataDirLock

            lock = DataDirLock(settings.storage.data_dir)
            lock.acquire()  # never delete under a running session
            try:
                await context.delete_thread(thread_id)
            finally:
                lock.release()
            from soothe.engine.memory import Memory

            await Memory(context.db).delete_thread(thread_id)
            print(f"deleted {thread_id}")
            return 0
        text = await thread_markdown(context, thread_id)
        if action == "export" and output:
            Path(output).write_text(text, encoding="utf-8")
            print(f"wrote {output}")
        else:
            print(text, end="")
        return 0
    finally:
        await context.close()


def run_threads(settings: Settings, action: str, thread_id: str | None, output: str | None) -> int:
    return asyncio.run(_threads(settings, action, thread_id, output))
