"""``soothe undo [--thread ID] [--all | --step G1/S2] [--list] [--force] [--workspace DIR]``.

With ``--workspace DIR`` only the changes to files inside DIR count: the thread is the
last that changed a file there, and files elsewhere are left as they are.

Reads the journal in the data dir (``journal.db``) and puts back the files the agent
changed, newest first (engine/agent/undo.py). No models, no session: it works beside a
stopped app; run it when no run of that thread is going on. What it did is kept with the
thread (an ``undo.applied`` record in its transcript, as ``/undo`` in the app keeps it),
so the reopened thread shows it; when the data dir is busy, a note on stderr says the
thread keeps no record.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from soothe.engine.config import Settings
from soothe.engine.sanitize import one_line, visible

if TYPE_CHECKING:
    from soothe.engine.agent.undo import UndoReport


def run_undo(
    settings: Settings,
    *,
    thread: str | None,
    all_runs: bool,
    step: str | None,
    list_only: bool,
    force: bool,
    workspace: str | None = None,
) -> int:
    from soothe.engine.agent.journal import Journal
    from soothe.engine.agent.undo import apply_undo, describe, in_folder, plan_undo

    within = Path(workspace).expanduser().resolve() if workspace else None
    where = f" in {visible(str(within))}" if within is not None else ""

    path = Path(settings.storage.data_dir) / "journal.db"
    if not path.exists() and not path.is_symlink():  # a dangling link: Journal says why
        print("nothing to undo: the agent has not changed any file yet")
        return 0
    journal = Journal(path)
    try:
        threads = journal.threads()
        if within is not None:  # the threads that changed a file in that folder
            threads = [t for t in threads if any(in_folder(e, within) for e in journal.entries(t))]
        if thread:
            matches = [t for t in threads if t.startswith(thread)]
            if len(matches) != 1:
                why = "no changes recorded for" if not matches else "more than one thread matches"
                print(f"error: {why} '{thread}'{where}", file=sys.stderr)
                return 1
            thread_id = matches[0]
        elif threads:
            thread_id = threads[0]  # the thread that changed something last
        else:
            print(f"nothing to undo{where}")
            return 0
        entries = plan_undo(
            journal, thread_id, all_runs=all_runs or list_only, step=step, within=within
        )
        if list_only:
            if not entries:
                print(f"thread {thread_id}: nothing to undo{where}")
            for entry in entries:
                print(visible(describe(entry)))  # the workspace's file names, shown exactly
            return 0
        if not entries:
            print(f"thread {thread_id}: nothing to undo{where}")
            return 0
        report = apply_undo(journal, entries, force=force)
        for p in report.restored:
            print(f"restored {visible(str(p))}")
        for p, why in report.refused:
            print(
                f"refused {visible(str(p))}: {why} (use --force to restore it anyway)",
                file=sys.stderr,
            )
        for command in report.commands:
            print(f"cannot undo the command {command!r}: commands are not reversible")
        if report.restored or report.refused or report.commands:
            _keep_with_thread(settings, thread_id, report)
        return 1 if report.refused else 0
    finally:
        journal.close()


def _keep_with_thread(settings: Settings, thread_id: str, report: UndoReport) -> None:
    """The undo as a record of the thread's transcript (the event the app's ``/undo``
    publishes), so a reopened thread shows it where it happened."""
    try:
        asyncio.run(_append(settings, thread_id, report))
    except Exception as exc:  # the files are back either way: say only what is missing
        print(
            f"note: thread {thread_id} keeps no record of this undo: {one_line(str(exc), 200)}",
            file=sys.stderr,
        )


async def _append(settings: Settings, thread_id: str, report: UndoReport) -> None:
    from soothe.engine.events import UndoApplied
    from soothe.engine.session import Session

    where = settings.tools.resolved_workspace()

    def named(path: str) -> str:
        try:
            return str(Path(path).relative_to(where))
        except ValueError:
            return path

    event = UndoApplied(
        thread_id=thread_id,
        restored=[named(p) for p in report.restored],
        refused=[f"{named(p)}: {why}" for p, why in report.refused],
        commands=list(report.commands),
    )
    session = Session(settings)
    await session.open_storage()
    try:
        if session.context.get_thread(thread_id) is None:
            return  # changes of a thread since deleted: nothing to keep them with
        with session._exclusive():
            record = json.dumps({"event": event.model_dump(mode="json")})
            await session.context.append_transcript(thread_id, [record])
    finally:
        await session.close()
