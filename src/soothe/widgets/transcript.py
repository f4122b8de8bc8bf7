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
Awaiting = Literal["approval", "clarification"]

MAX_SEGMENTS = 200
MAX_TEXT_CHARS = 120_000
MAX_THINKING_CHARS = 20_000
"""A card keeps the newest this many characters of its step's reasoning."""


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
    approval: str = ""
    """What the user said of this call when it needed approval ("waiting for approval",
    "approved once", "denied" ...), shown on its row; empty when it did not ask."""
    version: int = 0

    def dump(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "args": self.args,
            "output": self.output,
            "ok": self.ok,
            "truncated": self.truncated,
            "approval": self.approval,
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
    awaiting: Awaiting | None = None
    """What the running step waits for from the user (its tool call's approval, or the
    answer to its question), if anything."""
    thinking: str = ""
    """The step's reasoning (a thinking model's trace; the newest MAX_THINKING_CHARS):
    shown dimmed and folded above its text, never part of it."""
    thought: int = 0
    """Characters of reasoning the step streamed in all."""
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

    def add_thinking(self, text: str) -> None:
        self.thinking = (self.thinking + text)[-MAX_THINKING_CHARS:]
        self.thought += len(text)
        self.version += 1

    def dump(self) -> dict[str, Any]:
        return {
            "card": self.key,
            "description": self.description,
            "status": self.status,
            "tokens": self.tokens,
            "detail": self.detail,
            "answer": self.answer,
            "awaiting": self.awaiting,
            "parts": [p.dump() for p in self.parts],
            **({"thinking": self.thinking} if self.thinking else {}),
        }


@dataclass(eq=False)
class Answer:
    text: str
    title: str = ""
    failed: bool = False
    """The answer of a goal that failed ("The goal could not be completed: …"): drawn
    with the error colour, not the success bar of an answer."""

    def dump(self) -> dict[str, Any]:
        return {"answer": self.text, "title": self.title, "failed": self.failed}


Segment = Note | TextRun | ToolRun | StepCard | Answer
Block = Note | ToolRun | StepCard | Answer


class Transcript:
    """The blocks of one view, oldest released past ``max_segments``.

    Each block has an ``origin``: where the store keeps the event that made it (a
    transcript record id, or ``-seq`` for a live event whose record id is not known yet).
    ``released`` counts the blocks dropped from the front and ``earlier`` says the store
    may hold older ones: the view model pages them back in (``prepend``) when the user
    scrolls back, from the records before ``cursor``.
    """

    def __init__(self, key: str, title: str, max_segments: int = MAX_SEGMENTS) -> None:
        self.key = key
        self.title = title
        self.segments: deque[Block] = deque()
        self.origins: deque[int] = deque()
        self.max_segments = max_segments
        self.released = 0
        self.earlier = False
        self._start: int | None = None

    def __len__(self) -> int:
        return len(self.segments)

    def __contains__(self, block: object) -> bool:
        return any(b is block for b in self.segments)

    def add(self, segment: Block, origin: int = 0) -> Block:
        self.segments.append(segment)
        self.origins.append(origin)
        while len(self.segments) > self.max_segments:
            self.segments.popleft()
            self.origins.popleft()
            self.released += 1
            self.earlier = True
            self._start = None
        return segment

    def prepend(
        self, blocks: list[Block], origins: list[int], *, more: bool, start: int | None = None
    ) -> None:
        """Put blocks paged back from the store before the ones held (``more``: the store
        has older ones still; ``start``: the oldest record id read, paging goes on from
        there even when the page made no block of this view)."""
        self.segments.extendleft(reversed(blocks))
        self.origins.extendleft(reversed(origins))
        self.released = max(0, self.released - len(blocks))
        self.earlier = more
        self._start = start

    def trim(self) -> None:
        """Release what paging back added beyond the cap (the user is back at the end)."""
        if len(self.segments) > self.max_segments:
            self._start = None
        while len(self.segments) > self.max_segments:
            self.segments.popleft()
            self.origins.popleft()
            self.released += 1
            self.earlier = True

    @property
    def cursor(self) -> int | None:
        """Where to page back from: the oldest record read, else the origin of the oldest
        block held."""
        if self._start is not None:
            return self._start
        return self.origins[0] if self.origins else None

    def note(self, text: str, kind: NoteKind = "info") -> Note:
        note = Note(text, kind)
        self.add(note)
        return note

    def dump(self) -> list[dict[str, Any]]:
        return [block.dump() for block in self.segments]
