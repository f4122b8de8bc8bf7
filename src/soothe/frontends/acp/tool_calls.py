"""A Soothe tool call as the Agent Client Protocol shows one: its kind, title, locations,
and for a file change the diff (old and new text of the file).

Everything here is read from the workspace, nothing is written. The arguments are the
model's: shown with every control character visible (``sanitize.visible``, tabs and
newlines kept), so what the user approves in the editor is exactly what runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from soothe.engine.sanitize import plain, visible

if TYPE_CHECKING:
    from acp.schema import FileEditToolCallContent, ToolCallLocation

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]

KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_dir": "read",
    "glob": "search",
    "grep": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "run_shell": "execute",
}
"""Our tools by the protocol's kind; an MCP tool is ``other``."""

TITLE_CHARS = 120


def shown(text: str) -> str:
    """``text`` for the person deciding: every control character visible, newlines and
    tabs kept (code stays readable)."""
    return "\t".join(visible(part, keep_newlines=True) for part in text.split("\t"))


def kind_of(tool: str) -> ToolKind:
    return KINDS.get(tool, "other")


def title_of(tool: str, args: Mapping[str, Any]) -> str:
    """``read_file README.md``, ``run_shell: pytest -q``, ``grep TODO in src``."""
    name = visible(tool)
    if tool == "run_shell":
        text = f"{name}: {visible(str(args.get('command', '')))}"
    elif tool in ("grep", "glob"):
        where = args.get("path")
        text = f"{name} {visible(str(args.get('pattern', '')))}"
        text += f" in {visible(str(where))}" if where else ""
    elif "path" in args:
        text = f"{name} {visible(str(args.get('path', '')))}"
    else:
        inner = ", ".join(f"{visible(str(k))}={visible(str(v))}" for k, v in args.items())
        text = f"{name}({inner})"
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def _resolve(workspace: Path, raw: str) -> Path | None:
    from soothe.engine.agent.workspace import ToolError, Workspace

    try:
        return Workspace.at(workspace).resolve(raw)
    except (ToolError, OSError, ValueError):
        return None


def locations_of(workspace: Path, tool: str, args: Mapping[str, Any]) -> list[ToolCallLocation]:
    """The file a call reads or changes, as an absolute path inside the workspace (the
    editor can follow it); none for a path the workspace refuses."""
    from acp.schema import ToolCallLocation

    raw = args.get("path")
    if tool == "run_shell" or not isinstance(raw, str):
        return []
    target = _resolve(workspace, raw)
    if target is None:
        return []
    line = args.get("offset") if tool == "read_file" else None
    return [ToolCallLocation(path=str(target), line=line + 1 if isinstance(line, int) else None)]


def _read_text(target: Path) -> str | None:
    try:
        data = target.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def diff_of(workspace: Path, tool: str, args: Mapping[str, Any]) -> FileEditToolCallContent | None:
    """The change ``write_file``/``edit_file`` would make, as the protocol's diff (the
    whole old and new text of the file); None for other tools, a call the tool would
    refuse, or a binary file. Computed by the tools' own checks (``fs_tools``)."""
    from acp.schema import FileEditToolCallContent

    from soothe.engine.agent import fs_tools
    from soothe.engine.agent.workspace import ToolError, Workspace

    if tool not in ("write_file", "edit_file"):
        return None
    try:
        ws = Workspace.at(workspace)
        if tool == "write_file":
            target, existed = fs_tools.check_write(ws, str(args.get("path", "")))
            old = _read_text(target) if existed else None
            if existed and old is None:
                return None
            new = str(args.get("content", ""))
        else:
            target, new, _ = fs_tools.plan_edit(
                ws, str(args.get("path", "")), str(args.get("old", "")), str(args.get("new", ""))
            )
            old = _read_text(target)
            if old is None:
                return None
    except (ToolError, OSError, ValueError):
        return None
    return FileEditToolCallContent(
        type="diff",
        path=str(target),
        old_text=None if old is None else shown(old),
        new_text=shown(new),
    )


def complete_args(args: Mapping[str, Any]) -> bool:
    """Whether event arguments are whole (an event's copy cuts long strings with a
    marker; a diff from a cut copy would show text that is not what is written)."""
    from soothe.engine.agent.capping import truncation_marker

    marker = truncation_marker(1).split("1")[0][:12]
    return not any(isinstance(v, str) and marker and marker in v for v in args.values())


OUTPUT_CHARS = 4000
"""A tool result is shown up to this many characters (the model saw its own cap)."""


def output_text(output: str) -> str:
    text = plain(output)
    if len(text) <= OUTPUT_CHARS:
        return text
    return text[:OUTPUT_CHARS] + f"\n… ({len(text) - OUTPUT_CHARS} more characters)"
