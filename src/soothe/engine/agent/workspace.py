"""Confinement of tool paths to the workspace root.

Every path a model names is resolved (symlinks followed, ``..`` collapsed) and must land
under the resolved root. A refusal is a ``PathRefused`` whose message is written for the
model to read; tools turn it into a tool message, never into a crash.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from soothe.engine.bytesafe import escape, unescape_name

# Directories that searches skip: noise, caches and other trees the agent never needs.
IGNORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)


class ToolError(Exception):
    """A tool could not do what was asked; ``str()`` is the message the model sees."""


class PathRefused(ToolError):
    """A path that leaves the workspace or cannot be resolved."""


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def at(cls, root: Path | str) -> Workspace:
        return cls(Path(root).expanduser().resolve())

    def contains(self, path: Path) -> bool:
        return path == self.root or path.is_relative_to(self.root)

    def rel(self, path: Path) -> str:
        """The workspace-relative POSIX form of an already resolved path, as shown to
        the model and the user: bytes that are not UTF-8 escaped (``bytesafe``), which
        ``resolve`` maps back."""
        if path == self.root:
            return "."
        return escape(path.relative_to(self.root).as_posix())

    def resolve(self, raw: str) -> Path:
        """Resolve ``raw`` (relative to the root, or absolute) or refuse it.

        A name as ``rel`` shows it (``caf\\xff.txt``) means the file with that byte,
        unless a file is really named so."""
        text = (raw or "").strip() or "."
        shown = escape(text)
        if "\x00" in text:
            raise PathRefused("path contains a NUL character")
        if (real := unescape_name(text)) != text and not os.path.lexists(self.root / text):
            text = real
        try:
            os.fsencode(text)
        except UnicodeEncodeError:
            raise PathRefused(f"{shown}: not a file name (it holds a lone surrogate)") from None
        if text.startswith("~"):
            raise PathRefused(
                f"{shown}: home-directory paths are outside the workspace {self.shown_root}; "
                "use a path relative to the workspace"
            )
        given = Path(text)
        candidate = given if given.is_absolute() else self.root / given
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError) as exc:
            raise PathRefused(f"{shown}: cannot resolve this path ({escape(str(exc))})") from None
        if self.contains(resolved):
            return resolved
        lexical = Path(os.path.normpath(candidate))
        if self.contains(lexical):
            raise PathRefused(
                f"{shown} leads outside the workspace through a symbolic link; refused"
            )
        raise PathRefused(
            f"{shown} is outside the workspace {self.shown_root}; tools only reach files under it"
        )

    @property
    def shown_root(self) -> str:
        return escape(str(self.root))

    def walk(self, start: Path, stop: threading.Event | None = None) -> Iterator[tuple[Path, bool]]:
        """Yield ``(path, is_dir)`` under ``start`` in sorted order.

        Symlinked directories are not descended into; a symlinked file is yielded only
        when its target is inside the workspace. Ignored directories are pruned.
        """
        for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
            if stop is not None and stop.is_set():
                return
            base = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
            for name in dirnames:
                path = base / name
                if not path.is_symlink():
                    yield path, True
            for name in sorted(filenames):
                path = base / name
                if path.is_symlink():
                    try:
                        target = path.resolve()
                    except (OSError, RuntimeError):
                        continue
                    if not self.contains(target) or not target.is_file():
                        continue
                yield path, False
