"""The file tools: read, list, glob, grep, write, edit. Pure Python, confined by Workspace.

Each function returns the text the model sees or raises ToolError with a message for it.
Writes are split into a check (before approval is asked) and the write itself.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import threading
from pathlib import Path
from typing import BinaryIO

from soothe.engine.agent.workspace import ToolError, Workspace
from soothe.engine.atomic import write_atomic
from soothe.engine.bytesafe import escape

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_SNIFF_BYTES = 8192
_PIECE = 65536
_FOOTER_ROOM = 300
_GREP_LINE_CHARS = 300
_MATCH_LINE_CHARS = 4000


def _looks_binary(head: bytes) -> bool:
    return b"\x00" in head


def _stat_file(ws: Workspace, target: Path, raw: str) -> os.stat_result:
    try:
        st = target.stat()
    except FileNotFoundError:
        raise ToolError(f"{raw}: no such file in the workspace") from None
    except OSError as exc:
        raise ToolError(f"{raw}: cannot access ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{ws.rel(target)} is a directory; use list_dir to see its entries")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{ws.rel(target)} is not a regular file")
    return st


def _open_read(target: Path) -> BinaryIO:
    try:
        fd = os.open(target, os.O_RDONLY | _NOFOLLOW)
    except OSError as exc:
        raise ToolError(f"{escape(target.name)}: cannot open ({exc.strerror})") from None
    return os.fdopen(fd, "rb")


def read_file(
    ws: Workspace, path: str, offset: int, limit: int, *, max_bytes: int, max_chars: int
) -> str:
    """Lines ``offset`` .. ``offset + limit`` of a text file, bounded in size.

    The bound is the smaller of the read cap and the prompt cap, so whole lines are shown
    and the footer tells the model the offset to continue from.
    """
    target = ws.resolve(path)
    st = _stat_file(ws, target, path)
    rel = ws.rel(target)
    budget = max(200, min(max_bytes, max_chars - _FOOTER_ROOM))
    shown = bytearray()
    line_no = 0
    shown_lines = 0
    reason = ""
    partial = b""
    with _open_read(target) as f:
        if _looks_binary(f.read(_SNIFF_BYTES)):
            raise ToolError(
                f"{rel} looks like a binary file ({st.st_size} bytes); read_file shows text only"
            )
        f.seek(0)
        while True:
            piece = f.readline(_PIECE)
            if not piece:
                break
            if line_no < offset:
                if piece.endswith(b"\n"):
                    line_no += 1
                continue
            if shown_lines >= limit:
                reason = f"line limit {limit} reached"
                break
            partial += piece
            if not piece.endswith(b"\n") and len(partial) <= budget:
                continue
            if len(shown) + len(partial) > budget:
                if shown_lines == 0:
                    shown += partial[: budget - len(shown)]
                    shown += b"\n... [line cut: longer than the read limit]\n"
                    shown_lines, line_no = 1, line_no + 1
                reason = f"size limit {budget} bytes reached"
                partial = b""
                break
            shown += partial
            partial = b""
            shown_lines += 1
            line_no += 1
        if partial and not reason:  # last line without a newline
            if len(shown) + len(partial) > budget:
                reason = f"size limit {budget} bytes reached"
            else:
                shown += partial
                shown_lines += 1
                line_no += 1
    if offset and shown_lines == 0 and not reason:
        raise ToolError(f"offset {offset} is past the end of {rel} ({line_no} lines)")
    text = shown.decode("utf-8", errors="replace")
    if not text:
        return f"{rel} is empty"
    if reason or offset:
        first, last = offset + 1, offset + shown_lines
        note = f"[{rel}: lines {first}-{last} shown"
        if reason:
            note += f"; {reason}; call read_file with offset={last} to read on]"
        else:
            note += "; end of file]"
        text = text + ("" if text.endswith("\n") else "\n") + note
    return text


def list_dir(ws: Workspace, path: str, max_entries: int = 300) -> str:
    target = ws.resolve(path)
    if not target.exists():
        raise ToolError(f"{path}: no such directory in the workspace")
    if not target.is_dir():
        raise ToolError(f"{ws.rel(target)} is a file, not a directory; use read_file")
    try:
        entries = sorted(os.scandir(target), key=lambda e: e.name)
    except OSError as exc:
        raise ToolError(f"{ws.rel(target)}: cannot list ({exc.strerror})") from None
    lines = []
    for entry in entries[:max_entries]:
        name = escape(entry.name)
        if entry.is_symlink():
            lines.append(f"{name}@")
        elif entry.is_dir(follow_symlinks=False):
            lines.append(f"{name}/")
        else:
            try:
                size = entry.stat(follow_symlinks=False).st_size
            except OSError:
                size = 0
            lines.append(f"{name}  ({size} bytes)")
    if len(entries) > max_entries:
        lines.append(f"… and {len(entries) - max_entries} more entries")
    header = f"{ws.rel(target)}: {len(entries)} entries"
    return header + ("\n" + "\n".join(lines) if lines else "")


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob with ``**`` (any depth), ``*``, ``?`` and ``[...]`` to a regex."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            c = pattern[i]
            if c == "*":
                out.append("[^/]*")
            elif c == "?":
                out.append("[^/]")
            elif c == "[" and (end := pattern.find("]", i + 2)) != -1:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
            else:
                out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _check_pattern(pattern: str) -> str:
    pattern = pattern.strip()
    if not pattern:
        raise ToolError("empty glob pattern")
    if pattern.startswith(("/", "~")) or Path(pattern).is_absolute():
        raise ToolError(f"{pattern}: glob patterns are relative to the workspace root")
    if ".." in Path(pattern).parts:
        raise ToolError(f"{pattern}: '..' is not allowed in glob patterns")
    return pattern.removeprefix("./")


def glob_paths(
    ws: Workspace, pattern: str, max_results: int = 300, stop: threading.Event | None = None
) -> str:
    pattern = _check_pattern(pattern)
    regex = glob_to_regex(pattern)
    hits: list[str] = []
    total = 0
    for path, is_dir in ws.walk(ws.root, stop):
        rel = ws.rel(path)
        if regex.match(rel):
            total += 1
            if len(hits) < max_results:
                hits.append(rel + ("/" if is_dir else ""))
    if not hits:
        hint = ""
        if "/" not in pattern:
            hint = f"; this matches the top level only, use **/{pattern} for subdirectories"
        return f"no paths match {pattern}{hint}"
    text = "\n".join(hits)
    if total > len(hits):
        text += f"\n… and {total - len(hits)} more matches; narrow the pattern"
    return text


def grep(
    ws: Workspace,
    pattern: str,
    path: str,
    file_glob: str | None,
    *,
    max_matches: int,
    max_chars: int,
    max_file_bytes: int,
    stop: threading.Event | None = None,
) -> str:
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    target = ws.resolve(path)
    if not target.exists():
        raise ToolError(f"{path}: no such file or directory in the workspace")
    name_match = None
    if file_glob:
        file_glob = file_glob.strip()
        if "/" in file_glob:
            rx = glob_to_regex(_check_pattern(file_glob))
            name_match = lambda p: bool(rx.match(ws.rel(p)))  # noqa: E731
        else:
            name_match = lambda p: fnmatch.fnmatchcase(escape(p.name), file_glob)  # noqa: E731
    files = [target] if target.is_file() else (p for p, d in ws.walk(target, stop) if not d)
    out: list[str] = []
    used = 0
    matches = 0
    more = False
    for file in files:
        if stop is not None and stop.is_set():
            break
        if name_match is not None and not name_match(file):
            continue
        try:
            if file.stat().st_size > max_file_bytes or not file.is_file():
                continue
            with _open_read(file.resolve()) as f:
                data = f.read(max_file_bytes + 1)
        except (OSError, ToolError):
            continue
        if _looks_binary(data[:_SNIFF_BYTES]):
            continue
        rel = ws.rel(file)
        for no, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if not regex.search(line[:_MATCH_LINE_CHARS]):
                continue
            shown = line.strip()
            if len(shown) > _GREP_LINE_CHARS:
                shown = shown[:_GREP_LINE_CHARS] + " …"
            row = f"{rel}:{no}: {shown}"
            if matches >= max_matches or used + len(row) + 1 > max_chars:
                more = True
                break
            out.append(row)
            used += len(row) + 1
            matches += 1
        if more:
            break
    if not out:
        where = ws.rel(target)
        return f"no matches for {pattern!r} in {where}" + (f" ({file_glob})" if file_glob else "")
    if more:
        out.append(f"… more matches not shown ({matches} listed); narrow the pattern or path")
    return "\n".join(out)


def check_write(ws: Workspace, path: str) -> tuple[Path, bool]:
    """The resolved target and whether it exists; refuses directories and specials."""
    if not (path or "").strip():
        raise ToolError("write_file needs a file path")
    target = ws.resolve(path)
    if target == ws.root:
        raise ToolError("cannot write to the workspace root itself; name a file")
    if target.exists():
        if target.is_dir():
            raise ToolError(f"{ws.rel(target)} is a directory")
        if not target.is_file():
            raise ToolError(f"{ws.rel(target)} is not a regular file")
        return target, True
    return target, False


def other_links(target: Path) -> int:
    """How many other hard links the file at ``target`` has (0 when it has none or is
    absent). A write replaces the file, so those keep the old content."""
    try:
        return max(0, os.stat(target, follow_symlinks=False).st_nlink - 1)
    except OSError:
        return 0


def write_text(ws: Workspace, target: Path, content: str) -> int:
    """Replace the checked path with ``content`` (``atomic.write_atomic``: a temp file
    renamed over it, never written through a link); returns the bytes written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if not ws.contains(target.parent.resolve()):
        raise ToolError(f"{ws.rel(target)}: parent directory left the workspace; refused")
    data = escape(content).encode("utf-8")
    if os.path.lexists(target) and not os.access(target, os.W_OK):
        # A rename would get past the file's own mode; a read-only file stays so.
        raise ToolError(f"{ws.rel(target)}: cannot write (Permission denied)")
    try:
        write_atomic(target, data)
    except OSError as exc:
        raise ToolError(f"{ws.rel(target)}: cannot write ({exc.strerror or exc})") from None
    return len(data)


def plan_edit(ws: Workspace, path: str, old: str, new: str) -> tuple[Path, str, str]:
    """Check an edit and compute it: (target, new text, summary). Nothing is written."""
    if old == "":
        raise ToolError("edit_file needs a non-empty 'old' text to replace")
    if old == new:
        raise ToolError("'old' and 'new' are the same; nothing to change")
    target = ws.resolve(path)
    _stat_file(ws, target, path)
    rel = ws.rel(target)
    with _open_read(target) as f:
        data = f.read()
    if _looks_binary(data[:_SNIFF_BYTES]):
        raise ToolError(f"{rel} looks like a binary file; edit_file edits text only")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{rel} is not UTF-8 text; edit_file cannot edit it") from None
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"'old' text not found in {rel}; read the file and copy the exact text, "
            "whitespace and indentation included"
        )
    if count > 1:
        raise ToolError(
            f"'old' text occurs {count} times in {rel}; include more surrounding lines "
            "so it matches exactly once"
        )
    summary = (
        f"edited {rel}: replaced {old.count(chr(10)) + 1} line(s) "
        f"with {new.count(chr(10)) + 1} line(s)"
    )
    return target, text.replace(old, new, 1), summary
