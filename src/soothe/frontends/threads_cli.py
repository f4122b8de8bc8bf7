"""``soothe threads [list|show|export|delete]``, through the Session facade.

The session opens only its store (``Session.open_storage``): no models, no checkpoints,
so the command stays quick and can read beside a running TUI.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from soothe.engine.config import Settings
from soothe.engine.sanitize import one_line, plain


async def _threads(
    settings: Settings,
    action: str,
    thread_id: str | None,
    output: str | None,
    as_json: bool = False,
) -> int:
    from soothe.engine.session import Session

    if action != "list" and not thread_id:
        print(f"error: `soothe threads {action}` needs a thread id", file=sys.stderr)
        return 2
    session = Session(settings)
    await session.open_storage()
    try:
        threads = await session.list_threads()
        if action == "list" and as_json:  # one object per line; json.dumps escapes controls
            for t in threads:
                when = t.last_active.isoformat() if t.last_active else None
                row = {"id": t.id, "title": t.title, "last_active": when, "goals": t.goal_count}
                print(json.dumps(row))
            return 0
        if action == "list":
            if not threads:
                print("no threads yet")
                return 0
            if sys.stdout.isatty():  # scripts read the rows; a person gets a header
                print(f"{'id':12}  {'last active':16}  {'goals':>5}  title")
            for t in threads:
                when = t.last_active.strftime("%Y-%m-%d %H:%M") if t.last_active else ""
                # a stored title is the user's request or a model's words: plain, one line
                print(f"{one_line(t.id):12}  {when}  {t.goal_count:>5}  {one_line(t.title)}")
            return 0
        assert thread_id is not None
        matches = [t.id for t in threads if t.id.startswith(thread_id)]
        if len(matches) != 1:
            why = "no thread" if not matches else "more than one thread starts with"
            print(f"error: {why} '{one_line(thread_id)}' (see `soothe threads`)", file=sys.stderr)
            return 1
        thread_id = matches[0]  # a unique prefix is enough, as with git
        if action == "delete":
            await session.delete_thread(thread_id)
            print(json.dumps({"deleted": thread_id}) if as_json else f"deleted {thread_id}")
            return 0
        text = await session.export_thread(thread_id)
        if action == "export" and output:
            Path(output).write_text(text, encoding="utf-8")
            print(json.dumps({"wrote": output}) if as_json else f"wrote {output}")
        elif as_json:
            print(json.dumps({"id": thread_id, "markdown": text}))
        else:
            print(plain(text), end="")  # the export is plain already; the terminal's guard
        return 0
    finally:
        await session.close()


def run_threads(
    settings: Settings,
    action: str,
    thread_id: str | None,
    output: str | None,
    *,
    as_json: bool = False,
) -> int:
    return asyncio.run(_threads(settings, action, thread_id, output, as_json))
