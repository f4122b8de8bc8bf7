"""What a tool call waiting for approval would change, for the person deciding.

``preview_change(workspace, tool, args)`` reads the file on disk (it writes nothing) and
gives a unified diff for ``write_file`` and ``edit_file`` with one line saying what kind
of change it is ("new file, 12 lines", "overwrites 40 lines", "edits 3 of 40 lines"), or
the command ``run_shell`` would run. The checks are the tools' own (``fs_tools``), so a
call the tool would refuse says why here too.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_DIFF_LINES = 400
"""A longer diff is cut (with a line saying how much was left out)."""


@dataclass(frozen=True)
class ChangePreview:
    summary: str
    """One line: "new file, 3 lines", "overwrites 40 lines", "edits 2 of 40 lines"."""
    diff: str = ""
    """A unified diff (``--- a/PATH`` / ``+++ b/PATH``), empty for commands."""
    command: str = ""
    """run_shell's command line, as typed."""
    problem: str = ""
    """Why the tool would refuse this call as it stands (the file changed, say)."""


def _lines(text: str) -> int:
    return len(text.splitlines())


def _diff(old: str, new: str, rel: str, *, new_file: bool, max_lines: int) -> str:
    lines = list(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile="/dev/null" if new_file else f"a/{rel}",
            tofile=f"b/{rel}",
        )
    )
    lines = [line if line.endswith("\n") else line + "\n" for line in lines]
    if len(lines) > max_lines:
        left = len(lines) - max_lines
        lines = [*lines[:max_lines], f"... {left} more diff lines not shown\n"]
    return "".join(lines)


def _read_text(target: Path) -> str:
    data = target.read_bytes()
    if b"\0" in data[:8192]:
        raise ValueError("binary")
    return data.decode("utf-8")


def preview_change(
    workspace: Path, tool: str, args: Mapping[str, Any], *, max_lines: int = MAX_DIFF_LINES
) -> ChangePreview | None:
    """The change ``tool`` would make with ``args``; None for tools without a preview.
    A diff longer than ``max_lines`` is cut with a line saying how many were left out."""
    from soothe.engine.agent import fs_tools
    from soothe.engine.agent.workspace import ToolError, Workspace

    if tool == "run_shell":
        command = str(args.get("command", ""))
        lines = command.count("\n") + 1
        summary = "runs a command" if lines == 1 else f"runs a {lines}-line script"
        return ChangePreview(summary=summary, command=command)
    if tool not in ("write_file", "edit_file"):
        return None
    path = str(args.get("path", ""))
    try:
        ws = Workspace.at(workspace)
        if tool == "write_file":
            content = str(args.get("content", ""))
            target, existed = fs_tools.check_write(ws, path)
            rel = ws.rel(target)
            if not existed:
                count = _lines(content)
                return ChangePreview(
                    summary=f"new file, {count} line{'' if count == 1 else 's'}",
                    diff=_diff("", content, rel, new_file=True, max_lines=max_lines),
                )
            try:
                old = _read_text(target)
            except (ValueError, UnicodeDecodeError):
                return ChangePreview(summary="overwrites a binary file", diff="")
            if old == content:
                return ChangePreview(summary="overwrites the file with the same text")
            count = _lines(old)
            return ChangePreview(
                summary=f"overwrites {count} line{'' if count == 1 else 's'}",
                diff=_diff(old, content, rel, new_file=False, max_lines=max_lines),
            )
        target, new_text, _ = fs_tools.plan_edit(
            ws, path, str(args.get("old", "")), str(args.get("new", ""))
        )
        rel = ws.rel(target)
        old = _read_text(target)
        changed = _lines(str(args.get("old", "")))
        return ChangePreview(
            summary=f"edits {changed} of {_lines(old)} lines",
            diff=_diff(old, new_text, rel, new_file=False, max_lines=max_lines),
        )
    except ToolError as exc:
        return ChangePreview(summary="the tool would refuse this call", problem=str(exc))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return ChangePreview(summary="cannot read the file", problem=str(exc))


def preview_or_problem(
    workspace: Path, tool: str, args: Mapping[str, Any], *, max_lines: int = MAX_DIFF_LINES
) -> ChangePreview | None:
    """``preview_change`` that never raises: a preview must never keep the question
    from being asked (the app's dialog and ``soothe -p`` at a terminal both use it)."""
    try:
        return preview_change(workspace, tool, args, max_lines=max_lines)
    except Exception as exc:
        return ChangePreview(summary="no preview", problem=f"{type(exc).__name__}: {exc}")
