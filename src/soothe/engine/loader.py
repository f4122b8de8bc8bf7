"""The deterministic loader: what a request points at in the workspace, gathered before
any model call (the seed's SemanticLoader, without a model).

``ground(text, workspace)`` decides whether a request is about the workspace (it names a
path that exists there, uses a workspace word such as "file", "list" or "README", or
names ``@path`` explicitly) and, for such a task, reads the named files and lists the
workspace, all bounded. ``Grounding.facts()`` turns that into ``bootstrap`` evidence
(summary tagged for the projection, content = the facts), so even a model that cannot
call tools sees them in its plan, step and completion prompts. Project instructions
(``AGENTS.md`` at the workspace root, else ``.soothe/instructions.md``) are read here too.

Every path goes through the agent's ``Workspace.resolve``: nothing outside the workspace
is read, and a path that leaves it is reported as refused, never followed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from soothe.engine.agent.workspace import PathRefused, Workspace
from soothe.engine.context.projection import bootstrap_summary

MAX_FILES = 4
MAX_FILE_CHARS = 4000
MAX_LISTING = 60
MAX_INSTRUCTIONS_CHARS = 4000
MAX_PATH_TOKENS = 24
INSTRUCTION_FILES = ("AGENTS.md", ".soothe/instructions.md")

WORKSPACE_WORDS = re.compile(
    r"\b(files?|folders?|director(?:y|ies)|dirs?|list(?:ing)?|ls|read|cat|open|"
    r"summari[sz]e|summary|readme|grep|search|edit|write|rewrite|rename|delete|run|"
    r"workspace|repo|repository|codebase)\b",
    re.IGNORECASE,
)
# Tokens that may be paths: "README.md", "src/app.py", "./notes.txt", "@docs".
_PATH_TOKEN = re.compile(r"@?[\w.\-/]*[\w\-/][\w.\-/]*")
_TASK_PREFIX = re.compile(r"^\s*/task(?:\s+|$)", re.IGNORECASE)


def split_task(text: str) -> tuple[str, bool]:
    """``/task TEXT`` -> (TEXT, True): the user forces the task path; else (text, False)."""
    match = _TASK_PREFIX.match(text)
    if not match:
        return text, False
    return text[match.end() :].strip(), True


@dataclass(frozen=True)
class FileFact:
    path: str
    text: str
    size: int
    cut: bool


@dataclass
class Grounding:
    """What the loader found for one request."""

    task: bool = False
    reason: str = ""
    files: list[FileFact] = field(default_factory=list)
    directories: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    listing: list[str] = field(default_factory=list)
    listing_more: bool = False
    top_entries: int = 0
    """Entries directly in the workspace root, counted as list_dir counts them."""
    instructions: tuple[str, str] | None = None  # (file name, text)

    def facts(self) -> list[tuple[str, str]]:
        """(summary, content) pairs for ``bootstrap`` evidence, in a stable order."""
        out: list[tuple[str, str]] = []
        if self.instructions:
            name, text = self.instructions
            out.append((bootstrap_summary("instructions", name), text))
        if self.listing:
            head = _listing_head(self.top_entries, len(self.listing), self.listing_more)
            out.append((bootstrap_summary("listing", f". ({head})"), "\n".join(self.listing)))
        for f in self.files:
            note = f"first {len(f.text)} of {f.size} chars" if f.cut else f"{f.size} chars"
            out.append((bootstrap_summary("file", f"{f.path} ({note})"), f.text))
        for raw in self.missing:
            out.append((bootstrap_summary("missing", raw), f"{raw}: not found in the workspace"))
        return out


def _named_paths(text: str, ws: Workspace) -> tuple[list[Path], list[str]]:
    """Existing workspace paths the request names, and the ``@paths`` it names that do
    not exist (or are refused)."""
    found: list[Path] = []
    missing: list[str] = []
    for token in _PATH_TOKEN.findall(text)[:MAX_PATH_TOKENS]:
        explicit = token.startswith("@")
        raw = token.lstrip("@").rstrip(".")
        if not raw or raw in (".", "..") or "://" in raw:
            continue
        if not explicit and "." not in raw and "/" not in raw:
            continue  # a plain word; "README" alone is a workspace word, not a path
        try:
            path = ws.resolve(raw)
        except PathRefused:
            if explicit:
                missing.append(raw)
            continue
        if path.exists() and path not in found:
            found.append(path)
        elif explicit and not path.exists():
            missing.append(raw)
    return found, missing


def _read(path: Path, limit: int) -> tuple[str, int, bool]:
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(limit * 4 + 4)
    if b"\x00" in head[:1024]:
        return f"(binary file, {size} bytes)", size, False
    text = head.decode("utf-8", errors="replace")
    cut = len(text) > limit or size > len(head)
    return text[:limit], size, cut


def _listing_head(top: int, paths: int, more: bool) -> str:
    """What the listing counted, in list_dir's terms: "15 entries" for a flat root;
    "15 entries, 60 paths in all" with subfolders; "first 60 paths" when cut."""
    entries = f"{top} entr{'y' if top == 1 else 'ies'}"
    if more:
        return f"{entries}; the first {paths} paths of the tree"
    if paths != top:
        return f"{entries}, {paths} paths in all"
    return entries


def _top_entries(path: Path) -> int:
    try:
        with os.scandir(path) as found:
            return sum(1 for _ in found)
    except OSError:
        return 0


def _listing(ws: Workspace, start: Path, limit: int) -> tuple[list[str], bool]:
    entries: list[str] = []
    for path, is_dir in ws.walk(start):
        if len(entries) >= limit:
            return entries, True
        entries.append(ws.rel(path) + ("/" if is_dir else ""))
    return entries, False


def load_instructions(ws: Workspace) -> tuple[str, str] | None:
    """The project instructions (bounded), or None when the workspace has none."""
    for name in INSTRUCTION_FILES:
        try:
            path = ws.resolve(name)
        except PathRefused:
            continue
        if path.is_file():
            text, _size, cut = _read(path, MAX_INSTRUCTIONS_CHARS)
            return name, text + ("\n…" if cut else "")
    return None


def ground(text: str, ws: Workspace, *, forced: bool = False) -> Grounding:
    """Decide whether ``text`` is a workspace task and gather its facts (bounded)."""
    paths, missing = _named_paths(text, ws)
    word = WORKSPACE_WORDS.search(text)
    explicit = "@" in text and (paths or missing)
    if forced:
        reason = "forced task (/task)"
    elif paths:
        reason = f"names {ws.rel(paths[0])}, which exists in the workspace"
    elif explicit:
        reason = "names an @path"
    elif word:
        reason = f"uses the workspace word '{word.group(0)}'"
    else:
        return Grounding()
    if re.search(r"\breadme\b", text, re.IGNORECASE) and not any(
        p.name.lower().startswith("readme") for p in paths
    ):
        # "Summarize README" names the file without its extension: the root's README.
        readme = sorted(p for p in ws.root.glob("[Rr][Ee][Aa][Dd][Mm][Ee]*") if p.is_file())
        paths += readme[:1]
    out = Grounding(task=True, reason=reason, missing=missing)
    out.instructions = load_instructions(ws)
    out.listing, out.listing_more = _listing(ws, ws.root, MAX_LISTING)
    out.top_entries = _top_entries(ws.root)
    for path in paths:
        rel = ws.rel(path)
        if path.is_dir():
            if path == ws.root:
                continue
            entries, more = _listing(ws, path, MAX_LISTING)
            out.directories.append(rel)
            out.listing_more = out.listing_more or more
            # A named folder's entries join the listing, which stays bounded.
            for entry in entries:
                if len(out.listing) >= 2 * MAX_LISTING:
                    out.listing_more = True
                    break
                if entry not in out.listing:
                    out.listing.append(entry)
        elif path.is_file() and len(out.files) < MAX_FILES:
            try:
                body, size, cut = _read(path, MAX_FILE_CHARS)
            except OSError as exc:
                out.missing.append(f"{rel} ({exc.strerror or exc})")
                continue
            out.files.append(FileFact(rel, body, size, cut))
    return out
