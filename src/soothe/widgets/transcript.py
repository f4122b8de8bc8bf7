"""The data behind a StepStream: an ordered, capped list of segments.

The event handler keeps one Transcript per stream (the whole conversation, each goal, each
step) and mutates it as events arrive; the StepStream shows one of them. Segments are plain
mutable objects so the widget can tell what changed since it last looked (``total`` only
grows, even when old text is dropped to respect the cap).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

NoteKind = Literal["user", "info", "plan", "step", "ok", "warn", "error", "reasoning"]

MAX_SEGMENTS = 300
MAX_TEXT_CHARS = 120_000


@dataclass(eq=False)
class Note:
    text: str
    kind: NoteKind = "info"
    stream: str = ""
    """The step stream this note opens (so the text that follows needs no label)."""


@dataclass(eq=False)
class TextRun:
    """Streamed model output of one step (tokens joined as they come)."""

    stream: str
    label: str = ""
    chunks: list[str] = field(default_factory=list)
    total: int = 0
    kept: int = 0

    def add(self, text: str) -> None:
        self.chunks.append(text)
        self.total += len(text)
        self.kept += len(text)
        if self.kept > MAX_TEXT_CHARS:
            joined = "".join(self.chunks)[-(MAX_TEXT_CHARS * 3 // 4) :]
            self.chunks = [joined]
            self.kept = len(joined)

    @property
    def text(self) -> str:
        if len(self.chunks) > 1:
            self.chunks = ["".join(self.chunks)]
        return self.chunks[0] if self.chunks else ""

    def since(self, seen: int) -> str:
        """Text appended after ``seen`` characters had been read (as much as is kept)."""
        want = self.total - seen
        if want <= 0:
            return ""
        if want >= self.kept:
            return self.text
        out: list[str] = []
        got = 0
        for chunk in reversed(self.chunks):
            out.append(chunk)
            got += len(chunk)
            if got >= want:
                break
        return "".join(reversed(out))[-want:]


@dataclass(eq=False)
class ToolRun:
    call_id: str
    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    output: str | None = None
    ok: bool | None = None
    truncated: bool = False
    version: int = 0


@dataclass(eq=False)
class Answer:
    text: str
    title: str = ""


Segment = Note | TextRun | ToolRun | Answer


class Transcript:
    """Segments of one stream, oldest dropped past ``max_segments``."""

    def __init__(self, key: str, title: str, max_segments: int = MAX_SEGMENTS) -> None:
        self.key = key
        self.title = title
        self.segments: deque[Segment] = deque(maxlen=max_segments)

    def __len__(self) -> int:
        return len(self.segments)

    def add(self, segment: Segment) -> Segment:
        self.segments.append(segment)
        return segment

    def note(self, text: str, kind: NoteKind = "info", stream: str = "") -> Note:
        note = Note(text, kind, stream)
        self.segments.append(note)
        return note

    def text(self, stream: str, delta: str, label: str = "") -> TextRun:
        """Append streamed text; continues the last run when it is the same stream.

        ``label`` names the stream when the text would otherwise be ambiguous (another
        step's output came in between); it is dropped right after that step's own header.
        """
        last = self.segments[-1] if self.segments else None
        if isinstance(last, TextRun) and last.stream == stream:
            last.add(delta)
            return last
        if isinstance(last, Note) and last.stream == stream:
            label = ""
        run = TextRun(stream=stream, label=label)
        run.add(delta)
        self.segments.append(run)
        return run
