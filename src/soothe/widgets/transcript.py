"""The blocks a StepStream shows, and the ordered list of them one view holds.

Plain mutable objects, Textual-free: the view model (``soothe.app.view_state``) builds and
updates them from engine events (live, or replayed from the store); the StepStream renders
them. One block can sit in several views at once (a step's card is in the conversation,
in its goal's view and in its own view): it is the same object, so every view shows the
same thing. ``version`` only grows, so a widget can tell what changed since it last looked.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

NoteKind = Literal["user", "info", "plan", "step", "ok", "warn", "error", "reasoning"]
CardStatus = Literal["active", "completed", "failed", "cancelled", "skipped", "suspended"]

MAX_SEGMENTS = 400
MAX_TEXT_CHARS = 120_000


@dataclass(eq=False)
class Note:
    text: str
    kind: NoteKind = "info"

    def dump(self) -> dict[str, Any]:
        return {"note": self.text, "kind": self.kind}


@dataclass(eq=False)
class TextRun:
    """Streamed model output of one step (tokens joined as they come)."""

    stream: str
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

    def dump(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass(eq=False)
class ToolRun:
    call_id: str
    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    output: str | None = None
    ok: bool | None = None
    truncated: bool = False
    version: int = 0

    def dump(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "args": self.args,
            "output": self.output,
            "ok": self.ok,
            "truncated": self.truncated,
        }


@dataclass(eq=False)
class StepCard:
    """One step, live: a header (goal/step, status, tokens), its text and its tool calls.

    Two steps streaming at once each fill their own card, so their text never interleaves.
    ``answer`` is set when the step's text is the goal's final answer: the card then shows
    it rendered, and no separate answer block repeats it.
    """

    goal_id: str
    step_id: str
    description: str = ""
    status: CardStatus = "active"
    parts: list[TextRun | ToolRun] = field(default_factory=list)
    tokens: int = 0
    duration_s: float = 0.0
    detail: str = ""
    answer: bool = False
    version: int = 0

    @property
    def key(self) -> str:
        return f"{self.goal_id}/{self.step_id}"

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextRun))

    def add_text(self, text: str, tokens: int = 1) -> TextRun:
        last = self.parts[-1] if self.parts else None
        if not isinstance(last, TextRun):
            last = TextRun(stream=self.key)
            self.parts.append(last)
        last.add(text)
        self.tokens += tokens
        self.version += 1
        return last

    def add_tool(self, run: ToolRun) -> None:
        self.parts.append(run)
        self.version += 1

    def dump(self) -> dict[str, Any]:
        return {
            "card": self.key,
            "description": self.description,
            "status": self.status,
            "tokens": self.tokens,
            "detail": self.detail,
            "answer": self.answer,
            "parts": [p.dump() for p in self.parts],
        }


@dataclass(eq=False)
class Answer:
    text: str
    title: str = ""

    def dump(self) -> dict[str, Any]:
        return {"answer": self.text, "title": self.title}


Segment = Note | TextRun | ToolRun | StepCard | Answer
Block = Note | ToolRun | StepCard | Answer


class Transcript:
    """The blocks of one view, oldest released past ``max_segments``.

    ``released`` counts the blocks dropped from the front (the store still has them; the
    view model reloads them when the user scrolls back).
    """

    def __init__(self, key: str, title: str, max_segments: int = MAX_SEGMENTS) -> None:
        self.key = key
        self.title = title
        self.segments: deque[Block] = deque()
        self.max_segments = max_segments
        self.released = 0

    def __len__(self) -> int:
        return len(self.segments)

    def __contains__(self, block: object) -> bool:
        return any(b is block for b in self.segments)

    def add(self, segment: Block) -> Block:
        self.segments.append(segment)
        while len(self.segments) > self.max_segments:
            self.segments.popleft()
            self.released += 1
        return segment

    def note(self, text: str, kind: NoteKind = "info") -> Note:
        note = Note(text, kind)
        self.add(note)
        return note

    def dump(self) -> list[dict[str, Any]]:
        return [block.dump() for block in self.segments]
