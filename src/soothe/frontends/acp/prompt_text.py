"""A ``session/prompt``'s content blocks as the one request text the runner takes.

We honour what ``initialize`` advertises: text; resource links (a file of the workspace
becomes an ``@path`` mention, which the loader reads and grounds the request on; any
other link is named); embedded resources (their text is attached after the request,
fenced, under its URI). Images and audio are not advertised; a client that sends one
anyway gets it named, not dropped silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from soothe.engine.sanitize import one_line

EMBEDDED_CHARS = 60_000
"""An embedded resource is attached up to this many characters (the packer fits the
prompt to the window afterwards; this only bounds what one block can bring)."""


def _workspace_path(uri: str, workspace: Path) -> str | None:
    """``file:///ws/src/a.py`` -> ``src/a.py`` when inside the workspace."""
    parts = urlsplit(uri)
    if parts.scheme not in ("file", ""):
        return None
    path = Path(unquote(parts.path))
    try:
        rel = path.resolve().relative_to(workspace.resolve())
    except (ValueError, OSError):
        return None
    return rel.as_posix() or "."


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return fence


def request_text(blocks: Sequence[Any], workspace: Path) -> str:
    """The request, with mentions and attachments, from the prompt's blocks."""
    words: list[str] = []
    attached: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            words.append(block.text)
        elif kind == "resource_link":
            rel = _workspace_path(block.uri, workspace)
            words.append(f"@{rel}" if rel else f"{one_line(block.name)} ({one_line(block.uri)})")
        elif kind == "resource":
            resource = block.resource
            uri = one_line(getattr(resource, "uri", ""))
            text = getattr(resource, "text", None)
            if text is None:
                words.append(f"(attached: {uri}, not text)")
                continue
            if len(text) > EMBEDDED_CHARS:
                text = text[:EMBEDDED_CHARS] + f"\n… ({len(text) - EMBEDDED_CHARS} more characters)"
            rel = _workspace_path(uri, workspace)
            fence = _fence(text)
            attached.append(f"Attached {rel or uri}:\n{fence}\n{text}\n{fence}")
        else:
            words.append(f"(an {kind or 'unknown'} block was attached; Soothe reads text only)")
    request = " ".join(w.strip() for w in words if w.strip())
    if attached:
        request = "\n\n".join([request, *attached]) if request else "\n\n".join(attached)
    return request
