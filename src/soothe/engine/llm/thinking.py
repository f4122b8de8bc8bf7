"""Thinking models: when to send ``think``, how much room a thinking reply gets, and the
one splitter that tells a reply's reasoning from its answer.

Facts (NOTES.md "Thinking models"): a model whose ``/api/show`` lists ``"thinking"``
thinks unless the request says ``think: false``; its trace streams in
``message.thinking`` and counts toward ``options.num_predict``, so a limit below the
trace gives an empty answer ending with done_reason "length". ``think`` (true or a level)
on a model without the capability is HTTP 400 ``"NAME" does not support thinking``; older
servers (0.12.0-0.12.4) refused ``false`` too, so nothing is sent to a model whose
capabilities are not known to include it. Some templates write the trace into the
content as ``<think>...</think>`` (even with ``think: false``), or only the closing tag
(the opening one was in the prompt). Pure stdlib: no LangChain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "CLOSE",
    "OPEN",
    "ThinkSplitter",
    "ThinkValue",
    "Thoughts",
    "allowance_for",
    "cut_while_thinking",
    "split_think",
    "strip_think",
    "think_value",
    "thinks",
]

OPEN = "<think>"
CLOSE = "</think>"
_TAGS = (OPEN, CLOSE)

ThinkValue = bool | Literal["low", "medium", "high"]
THINKING_PURPOSES = frozenset({"step", "final"})
"""Call roles that get the configured ``model.think``; every other call (classification,
assessments, plans, any structured call) is sent ``think: false``."""


def thinks(capabilities: Sequence[str] | None) -> bool:
    """The server says the model can think (``/api/show`` capabilities)."""
    return capabilities is not None and "thinking" in capabilities


def think_value(
    configured: ThinkValue, capabilities: Sequence[str] | None, purpose: str
) -> ThinkValue | None:
    """The ``think`` field of a call: None (not sent) unless the model has the thinking
    capability; then ``configured`` for step and final calls, False for the rest."""
    if not thinks(capabilities):
        return None
    return configured if purpose in THINKING_PURPOSES else False


def allowance_for(think: ThinkValue | None, allowance: int, *, thought: bool = False) -> int:
    """Tokens added to a call's ``num_predict`` for a trace: the whole ``allowance`` when
    the call asks the model to think, or when a reply of this model was seen thinking
    anyway (``thought``: it ignored ``false``, or thinks by default and was not told);
    else none."""
    if think not in (None, False) or thought:
        return max(allowance, 0)
    return 0


def cut_while_thinking(content: str, done_reason: str | None, thinking_tokens: int) -> bool:
    """A reply ended at its token limit before it said anything: its answer (content
    with any ``<think>`` trace removed) is empty and it was thinking (a trace came in the
    thinking field, or the content held one)."""
    if done_reason != "length":
        return False
    answer, thought = split_think(content)
    return not answer.strip() and (thinking_tokens > 0 or bool(thought.strip()))


def _held_back(text: str) -> int:
    """How many characters at the end of ``text`` may be the start of a tag."""
    longest = 0
    for tag in _TAGS:
        for n in range(min(len(tag) - 1, len(text)), 0, -1):
            if text.endswith(tag[:n]):
                longest = max(longest, n)
                break
    return longest


@dataclass
class ThinkSplitter:
    """Splits streamed content into answer and thinking as it arrives.

    ``<think>`` opens a trace and ``</think>`` closes it; a tag may straddle chunks (a
    possible tag start is held back until the next piece says what it is). A trace still
    open when the stream ends is thinking (a reply cut at the limit). The answer after a
    trace loses its leading blank lines. A closing tag with no opening one is dropped
    here; ``split_think`` (on the whole text) also moves what came before it."""

    inside: bool = False
    _pending: str = ""
    _trim: bool = False
    """Strip the answer's leading white space (a trace just closed)."""

    def feed(self, piece: str) -> tuple[str, str]:
        """(answer, thinking) of ``piece``."""
        text = self._pending + piece
        self._pending = ""
        answer: list[str] = []
        thought: list[str] = []
        while text:
            wanted = (CLOSE,) if self.inside else _TAGS
            found = [(i, tag) for tag in wanted if (i := text.find(tag)) >= 0]
            if found:
                i, tag = min(found)
                self._put(text[:i], answer, thought)
                text = text[i + len(tag) :]
                if tag == OPEN:
                    self.inside = True
                else:
                    self.inside = False
                    self._trim = True
                continue
            keep = _held_back(text)
            self._put(text[: len(text) - keep], answer, thought)
            self._pending = text[len(text) - keep :]
            break
        return "".join(answer), "".join(thought)

    def flush(self) -> tuple[str, str]:
        """(answer, thinking) held back at the end of the stream."""
        text, self._pending = self._pending, ""
        answer: list[str] = []
        thought: list[str] = []
        self._put(text, answer, thought)
        return "".join(answer), "".join(thought)

    def _put(self, text: str, answer: list[str], thought: list[str]) -> None:
        if not text:
            return
        if self.inside:
            thought.append(text)
            return
        if self._trim:
            text = text.lstrip()
            if not text:
                return
            self._trim = False
        answer.append(text)


def split_think(text: str) -> tuple[str, str]:
    """(answer, thinking) of a whole reply's content: every ``<think>...</think>`` block
    and an unclosed trailing ``<think>...`` are thinking; so is everything before a
    closing tag that no opening tag precedes (a template that put ``<think>`` in the
    prompt)."""
    if OPEN not in text and CLOSE not in text:
        return text, ""
    lead = ""
    close = text.find(CLOSE)
    opened = text.find(OPEN)
    if close >= 0 and (opened < 0 or opened > close):
        lead, text = text[:close], text[close + len(CLOSE) :].lstrip()
    splitter = ThinkSplitter()
    answer, thought = splitter.feed(text)
    rest_answer, rest_thought = splitter.flush()
    return answer + rest_answer, lead + thought + rest_thought


def strip_think(text: str) -> str:
    """``text`` without its thinking (``split_think``)."""
    return split_think(text)[0] if (OPEN in text or CLOSE in text) else text


COALESCE_CHARS = 200
"""A StepThinking event carries at least this much reasoning (or a whole line)."""


@dataclass
class Thoughts:
    """Reasoning pieces gathered into events: one per ``COALESCE_CHARS`` characters or per
    line, so a 2,000-token trace is ~40 events, not 2,000."""

    _parts: list[str] = field(default_factory=list)
    _size: int = 0

    def add(self, piece: str) -> str | None:
        """The text of the next event once enough came, else None."""
        self._parts.append(piece)
        self._size += len(piece)
        if self._size >= COALESCE_CHARS or "\n" in piece:
            return self.take()
        return None

    def take(self) -> str | None:
        """What is gathered (None: nothing)."""
        if not self._parts:
            return None
        text = "".join(self._parts)
        self._parts, self._size = [], 0
        return text if text.strip() else None
