"""Undo of the agent's file changes, from the journal (journal.py).

``plan_undo`` picks the entries to undo (the thread's last run: the entries of its most
recent goal loop; every entry with ``all_runs``; one step with ``step="G1/S-02"``),
newest first. ``apply_undo`` restores each file's previous bytes and mode (or removes a
file the agent created), but refuses a file whose current content is not what the agent
wrote (someone changed it since) unless ``force``; an older change of a refused file is
refused too, so a file is never put back past someone else's edit. run_shell entries are
reported as commands that cannot be undone. Paths in reports are shown escaped
(``bytesafe``); a restore is an atomic replace (``journal.restore``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from soothe.engine.agent.journal import Entry, Journal, file_state, restore, sha
from soothe.engine.bytesafe import escape

FILE_TOOLS = frozenset({"write_file", "edit_file"})


@dataclass
class UndoReport:
    restored: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)


def in_folder(entry: Entry, folder: Path) -> bool:
    """Whether the entry changed a file inside ``folder`` (a resolved path)."""
    return entry.path is not None and Path(entry.path).is_relative_to(folder)


def plan_undo(
    journal: Journal,
    thread_id: str,
    *,
    all_runs: bool = False,
    step: str | None = None,
    within: Path | None = None,
) -> list[Entry]:
    """The entries to undo, newest first (file changes and run_shell commands); with
    ``within`` (a resolved folder) only the file changes inside it, the last run being
    the last that changed a file there."""
    entries = [e for e in journal.entries(thread_id) if not e.undone and e.state != "failed"]
    if within is not None:
        entries = [e for e in entries if in_folder(e, within)]
    if step is not None:
        goal_id, _, step_id = step.partition("/")
        entries = [e for e in entries if e.goal_id == goal_id and e.step_id == step_id]
    elif not all_runs and entries:
        last_loop = entries[-1].loop_id
        entries = [e for e in entries if e.loop_id == last_loop]
    return list(reversed(entries))


def apply_undo(journal: Journal, entries: list[Entry], *, force: bool = False) -> UndoReport:
    report = UndoReport()
    blocked: set[str] = set()
    for entry in entries:
        if entry.tool not in FILE_TOOLS:
            if entry.command:
                report.commands.append(entry.command)
            continue
        assert entry.path is not None
        path = Path(entry.path)
        shown = escape(entry.path)
        if entry.path in blocked:
            report.refused.append((shown, "a newer change to it was not undone"))
            continue
        why = None if force else changed_since(entry, path)
        if why is not None:
            blocked.add(entry.path)
            report.refused.append((shown, why))
            continue
        restore(path, entry)
        journal.mark_undone(entry.id)
        report.restored.append(shown)
    return report


def changed_since(entry: Entry, path: Path) -> str | None:
    """Why the file is not as the agent left it, or None when it is."""
    if entry.state == "started":
        return "the agent's write was interrupted by a crash; its state is unknown"
    data, mode = file_state(path)
    now = sha(data) if data is not None else None
    if now != entry.new_sha:
        return "changed by someone else since the agent wrote it"
    if mode != entry.new_mode:
        return "its mode changed since the agent wrote it"
    return None


def describe(entry: Entry, root: Path | None = None) -> str:
    """One line per change; with ``root`` (the workspace), a path inside it is named
    relative to it, as the app names files everywhere else."""
    where = f"{entry.goal_id}/{entry.step_id}" if entry.goal_id else entry.step_id or ""
    if entry.tool in FILE_TOOLS:
        what = "created" if not entry.existed else "changed"
        extra = " (interrupted)" if entry.state == "started" else ""
        path = entry.path or ""
        if root is not None and path and Path(path).is_relative_to(root):
            path = str(Path(path).relative_to(root))
        return f"{where:12} {entry.tool:10} {what} {escape(path)}{extra}"
    return f"{where:12} {entry.tool:10} {entry.command!r} (a command: cannot be undone)"
