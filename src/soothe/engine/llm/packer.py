"""The prompt packer: every model request is fitted to the model's context window here.

A real Ollama cuts an over-long prompt SILENTLY from the front (the system prompt, the
schema rules and the tool descriptions go first) and reports what it kept as the last
chunk's ``prompt_eval_count``. So nothing leaves the hub over the window:

- ``TokenEstimator``: one estimate of tokens from characters (conservative, ~3.2 chars per
  token for English and code), calibrated per hub from the server's ``prompt_eval_count``
  on calls that were clearly neither cut nor served from a cached prefix.
- ``Budget``: what one call's messages may take: the window, less that call's reply
  reserve (its ``num_predict``, at most a quarter of the window), a margin and the tool
  specs sent with it.
- ``Part`` / ``Prompt``: how prompt builders say what matters. Parts are filled in
  priority order (rules and schema, the request, the goal and step, the newest tool
  results, then older evidence, ledger, history, workspace facts and memory); a part that
  does not fit whole is clipped (keeping its head or its newest tail) or dropped, and the
  kept parts are rendered in their own order.
- ``fit_messages``: the safety net the hub applies to EVERY call, on any message list:
  the system message and the request are kept, the oldest middle messages (a step's tool
  history) are shortened, then dropped, then the longest remaining body is clipped in the
  middle, down to a floor. A prompt that cannot fit at its minimum raises ``Overflow``,
  which the hub turns into one ``LLMError`` line (``overflow_error``) naming the window
  and the setting to raise.
- ``looks_truncated``: a call's evaluated count well below what we sent AND near a ceiling
  (some servers count only the newly evaluated tokens of a cached prompt, or nothing: a
  small count is not evidence of a cut).

Pure stdlib at import; LangChain messages are touched only through their attributes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from soothe.engine.words import content_words

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from soothe.engine.llm.errors import LLMError

__all__ = [
    "CHARS_PER_TOKEN",
    "EVIDENCE",
    "HISTORY",
    "LEDGER",
    "MEMORY",
    "REQUEST",
    "RESULTS",
    "RULES",
    "STEP",
    "WORKSPACE",
    "Budget",
    "Fitted",
    "Overflow",
    "Part",
    "Prompt",
    "RecentPrompts",
    "TokenEstimator",
    "clip_middle",
    "fit_messages",
    "looks_truncated",
    "overflow_error",
    "pack_parts",
    "select_tools",
]

CHARS_PER_TOKEN = 3.2
"""The estimator's start: conservative for English and code (real tokenizers give ~3.5-4.5)."""
MIN_RATIO, MAX_RATIO = 2.0, 4.0
"""Calibration stays within these chars per token: never less conservative than 4.0."""
MESSAGE_OVERHEAD = 4
"""Tokens the chat template adds per message (role markers)."""
REQUEST_OVERHEAD = 8
"""Tokens the template adds per request."""
CALIBRATE_AT = 0.6
"""A count below this share of our estimate may be a cached prefix's: not used to calibrate."""
CUT_SHARE = 0.85
"""A count below this share of what we expected (at the calibrated ratio, or 4 chars per
token before any calibration) is well below."""
CEILING_SHARE = 0.5
"""...and it is a cut only if it is near a ceiling: at least this share of the window."""
CACHED_SLACK = 1.15
"""A count within this factor of the not-shared rest of a prompt is that rest alone."""
NEAR_SHARE = 0.97
ROUND = 128
"""A count a little below what we expected (``NEAR_SHARE``) is a cut when it is a multiple
of this: the window a server loaded."""

# Priorities: lower is kept first.
RULES = 0
"""Rules and schema: never clipped."""
REQUEST = 1
"""The user's request: clipped last, down to its floor."""
STEP = 2
"""The goal and the step being worked on."""
RESULTS = 3
"""The newest tool results."""
EVIDENCE = 4
"""Older evidence and step results."""
LEDGER = 5
"""The planner's reasoning, failures of earlier rounds."""
HISTORY = 6
"""The conversation so far."""
WORKSPACE = 7
"""Workspace facts: the projection, skill and project instructions."""
MEMORY = 8
"""Recalled from earlier threads."""

MIN_PART_CHARS = 160
"""A part clipped below this many characters says nothing: dropped instead."""
REQUEST_FLOOR_CHARS = 600
"""The request and the newest message are never clipped below this many characters."""
STUB_CHARS = 200
"""What an old tool result or message keeps when shortened."""
CUT_MARK = "\n… [{n} characters cut to fit the context window] …\n"


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        n = 0
        for piece in content:
            if isinstance(piece, str):
                n += len(piece)
            elif isinstance(piece, dict):
                n += len(str(piece.get("text", "")))
        return n
    return len(str(content))


def message_chars(message: BaseMessage) -> int:
    """Characters of a message as the template sends it: text and tool calls."""
    n = _content_chars(message.content)
    for tc in getattr(message, "tool_calls", None) or []:
        n += len(tc.get("name") or "") + len(json.dumps(tc.get("args"), ensure_ascii=False))
    return n


class TokenEstimator:
    """Tokens from characters at one ratio, calibrated from the server's counts."""

    def __init__(self, chars_per_token: float = CHARS_PER_TOKEN) -> None:
        self.ratio = chars_per_token
        self.samples = 0

    def tokens(self, chars: int) -> int:
        return math.ceil(chars / self.ratio) if chars > 0 else 0

    def text(self, text: str) -> int:
        return self.tokens(len(text))

    def chars(self, tokens: int) -> int:
        """Characters that fit in ``tokens`` (rounded down)."""
        return max(0, int(tokens * self.ratio))

    def messages(self, messages: Sequence[BaseMessage]) -> int:
        chars = sum(message_chars(m) for m in messages)
        return self.tokens(chars) + MESSAGE_OVERHEAD * len(messages) + REQUEST_OVERHEAD

    def tools(self, specs: Sequence[Any] | None) -> int:
        """Tokens of the tool specs sent with a call (the template renders their JSON)."""
        if not specs:
            return 0
        return self.tokens(sum(len(json.dumps(s, ensure_ascii=False, default=str)) for s in specs))

    def expected(self, chars: int, count: int) -> int:
        """What a server should count for ``chars`` in ``count`` messages: at the calibrated
        ratio, or (before any calibration) at the least conservative plausible one."""
        ratio = self.ratio if self.samples else MAX_RATIO
        return math.ceil(chars / ratio) + MESSAGE_OVERHEAD * count + REQUEST_OVERHEAD

    def calibrate(self, chars: int, count: int, evaluated: int) -> bool:
        """Learn from a call the server evaluated whole (not cut, not from a cache): its
        count is at least ``CALIBRATE_AT`` of our estimate. True when it was used."""
        if chars <= 0 or evaluated <= 0:
            return False
        estimate = self.tokens(chars) + MESSAGE_OVERHEAD * count + REQUEST_OVERHEAD
        if evaluated < CALIBRATE_AT * estimate:
            return False
        content = evaluated - MESSAGE_OVERHEAD * count - REQUEST_OVERHEAD
        if content <= 0:
            return False
        observed = min(MAX_RATIO, max(MIN_RATIO, chars / content))
        weight = min(self.samples + 1, 8)
        self.ratio = min(MAX_RATIO, max(MIN_RATIO, (self.ratio * weight + observed) / (weight + 1)))
        self.samples += 1
        return True


def reserve_for(limit: int, window: int) -> int:
    """Tokens kept free for the reply: its ``num_predict``, at most a quarter of the window
    (a limit above that is a cap replies rarely reach; holding it whole would leave the
    prompt no room at 2k), a quarter when the call has no limit."""
    quarter = window // 4
    return quarter if limit <= 0 else min(limit, quarter)


def margin_for(window: int) -> int:
    """Tokens kept free for the estimate's error."""
    return 16 + window // 50


@dataclass(frozen=True)
class Budget:
    """What one call may send: ``tokens`` for its messages, in the estimator's units."""

    window: int
    reserve: int
    margin: int
    tools: int

    @property
    def tokens(self) -> int:
        return self.window - self.reserve - self.margin - self.tools

    @classmethod
    def of(cls, window: int, limit: int, tools: int = 0) -> Budget:
        return cls(window, reserve_for(limit, window), margin_for(window), tools)

    def needed(self, message_tokens: int) -> int:
        """The window a prompt of ``message_tokens`` would need, with this call's reserve."""
        return message_tokens + self.reserve + self.margin + self.tools


# --- parts ------------------------------------------------------------------------------

Keep = Literal["head", "tail", "ends"]


@dataclass(frozen=True)
class Part:
    """A section of a prompt: ``priority`` says what is kept first (``RULES`` ... ``MEMORY``),
    ``keep`` what survives a clip ("head"; "tail" for the newest of a log; "ends" for a
    request, whose question may come last), ``floor`` the characters it keeps at least
    (0: it may be dropped)."""

    title: str
    body: str
    priority: int
    keep: Keep = "head"
    floor: int = 0

    def render(self, body: str | None = None) -> str:
        text = (self.body if body is None else body).strip()
        if not text:
            return ""
        return f"## {self.title}\n{text}\n" if self.title else f"{text}\n"


def clip_keep(text: str, chars: int, keep: Keep) -> str:
    """``text`` in about ``chars`` characters, keeping its head, its tail or both ends
    (``clip_middle``), marked cut."""
    if len(text) <= chars:
        return text
    if keep == "ends":
        return clip_middle(text, chars)
    mark = CUT_MARK.format(n=len(text) - chars)
    room = max(0, chars - len(mark))
    if keep == "tail":
        return mark.lstrip("\n") + text[len(text) - room :]
    return text[:room] + mark.rstrip("\n")


def clip_middle(text: str, chars: int) -> str:
    """``text`` in about ``chars`` characters: its head and tail, the middle marked cut."""
    if len(text) <= chars:
        return text
    mark = CUT_MARK.format(n=len(text) - chars)
    room = max(0, chars - len(mark))
    head = room - room // 3
    tail = room - head
    return text[:head] + mark + (text[len(text) - tail :] if tail else "")


@dataclass
class Packed:
    """The parts that fit: ``text``, what was ``clipped`` and ``dropped`` (titles), and the
    characters still ``over`` the room when the floors alone did not fit."""

    text: str
    clipped: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    over: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.clipped or self.dropped)


def pack_parts(parts: Sequence[Part], chars: int) -> Packed:
    """The parts that fit in ``chars`` characters, filled in priority order, rendered in
    their own order, a blank line apart. A part that does not fit whole is clipped to
    what is left (its ``keep`` end), or dropped when less than ``MIN_PART_CHARS`` would be
    left, unless it has a floor; ``RULES`` parts are never clipped."""
    left = chars
    chosen: dict[int, str] = {}
    out = Packed("")
    order = sorted(range(len(parts)), key=lambda i: parts[i].priority)
    for i in order:
        part = parts[i]
        full = part.render()
        if not full:
            continue
        cost = len(full) + 2
        if cost <= left or part.priority <= RULES:
            chosen[i] = full
            left -= cost
            continue
        header = len(part.render("x")) - 1
        room = left - header - 2
        floor = min(part.floor, len(part.body))
        if room < max(MIN_PART_CHARS, floor):
            if not floor:
                out.dropped.append(part.title or "(untitled)")
                continue
            room = floor
        body = clip_keep(part.body.strip(), room, part.keep)
        chosen[i] = part.render(body)
        left -= len(chosen[i]) + 2
        out.clipped.append(part.title or "(untitled)")
    out.text = "\n\n".join(chosen[i].rstrip("\n") for i in sorted(chosen))
    out.over = max(0, -left)
    return out


@dataclass
class Prompt:
    """A prompt by parts: the ``system`` text (rules, kept whole), the ``parts`` of the
    user message, and an optional ``tail`` of later messages (a re-ask's echo and
    feedback), sent after it. The hub packs it against each call's budget."""

    system: str
    parts: list[Part]
    tail: list[Any] = field(default_factory=list)

    def with_system_note(self, note: str) -> Prompt:
        system = f"{self.system}\n\n{note}" if self.system else note
        return Prompt(system, list(self.parts), list(self.tail))

    def with_tail(self, tail: Sequence[Any]) -> Prompt:
        return Prompt(self.system, list(self.parts), list(tail))

    def render(self) -> str:
        """The user message whole (unpacked)."""
        return pack_parts(self.parts, 10**12).text

    def messages(self, budget: int, est: TokenEstimator) -> tuple[list[Any], Packed]:
        """The messages for a budget of ``budget`` tokens, and what the packing did."""
        from langchain_core.messages import HumanMessage, SystemMessage

        fixed: list[Any] = [SystemMessage(content=self.system)] if self.system else []
        fixed_tokens = est.messages([*fixed, *self.tail]) + MESSAGE_OVERHEAD
        room = est.chars(budget - fixed_tokens)
        packed = pack_parts(self.parts, room)
        return [*fixed, HumanMessage(content=packed.text), *self.tail], packed


# --- the safety net -----------------------------------------------------------------------


class Overflow(Exception):
    """Even at its minimum the prompt needs ``needed`` tokens of messages."""

    def __init__(self, needed: int) -> None:
        super().__init__(f"the prompt needs ~{needed} tokens")
        self.needed = needed


@dataclass
class Fitted:
    messages: list[Any]
    tokens: int
    changed: bool = False


def _with_content(message: Any, content: str) -> Any:
    return message.model_copy(update={"content": content})


def _stub(message: Any) -> Any:
    """An old message shortened: its head and a note; a tool call's long arguments cut."""
    from langchain_core.messages import ToolMessage

    update: dict[str, Any] = {}
    text = message.content if isinstance(message.content, str) else None
    if text is not None and len(text) > STUB_CHARS * 2:
        note = (
            "\n… [older output elided to fit the context window: "
            f"{len(text)} chars; call the tool again if needed]"
            if isinstance(message, ToolMessage)
            else " …[cut]"
        )
        update["content"] = text[:STUB_CHARS] + note
    calls = getattr(message, "tool_calls", None) or []
    if calls and any(
        len(json.dumps(c.get("args"), ensure_ascii=False)) > STUB_CHARS for c in calls
    ):
        update["tool_calls"] = [
            {
                **c,
                "args": {
                    k: (
                        v[:STUB_CHARS] + " …[cut]"
                        if isinstance(v, str) and len(v) > STUB_CHARS
                        else v
                    )
                    for k, v in (c.get("args") or {}).items()
                },
            }
            for c in calls
        ]
    return message.model_copy(update=update) if update else message


def _groups(messages: Sequence[Any], protected: set[int]) -> list[list[int]]:
    """Droppable groups of middle messages, oldest first: an AI message with its tool
    results go together (a tool result without its call is refused by OpenAI servers);
    a group holding a protected message is not droppable."""
    from langchain_core.messages import AIMessage, ToolMessage

    groups: list[list[int]] = []
    i = 0
    while i < len(messages):
        group = [i]
        if isinstance(messages[i], AIMessage) and messages[i].tool_calls:
            j = i + 1
            while j < len(messages) and isinstance(messages[j], ToolMessage):
                group.append(j)
                j += 1
        i = group[-1] + 1
        if not protected & set(group):
            groups.append(group)
    return groups


def fit_messages(
    messages: Sequence[Any], budget: int, est: TokenEstimator, *, floor: int = REQUEST_FLOOR_CHARS
) -> Fitted:
    """``messages`` within ``budget`` tokens (copies; the caller's list is not changed).

    Kept: the leading system message whole, the first user message (the request) and the
    newest message with what it answers (a tool result's call, a re-ask's echo). In order,
    until it fits: the oldest middle messages are shortened to a stub, then dropped (a
    tool call with its results); then the longest remaining body (not the system's) is
    clipped in the middle, never below ``floor`` characters.
    Raises ``Overflow`` when it cannot fit."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    msgs = list(messages)
    total = est.messages(msgs)
    if total <= budget:
        return Fitted(msgs, total)
    protected: set[int] = {len(msgs) - 1}
    # ...with what the newest message answers: a tool result's call, a re-ask's echo
    j = len(msgs) - 1
    while j > 0 and isinstance(msgs[j], ToolMessage):
        j -= 1
        protected.add(j)
    if j == len(msgs) - 1 and j > 0 and isinstance(msgs[j - 1], AIMessage):
        protected.add(j - 1)
    if msgs and isinstance(msgs[0], SystemMessage):
        protected.add(0)
    first_user = next((i for i, m in enumerate(msgs) if isinstance(m, HumanMessage)), None)
    if first_user is not None:
        protected.add(first_user)
    # 1. the oldest middle messages shortened
    for i in range(len(msgs)):
        if total <= budget:
            break
        if i in protected:
            continue
        short = _stub(msgs[i])
        if short is not msgs[i]:
            total += est.tokens(message_chars(short)) - est.tokens(message_chars(msgs[i]))
            msgs[i] = short
    # 2. then dropped, oldest first
    if total > budget:
        drop: set[int] = set()
        for group in _groups(msgs, protected):
            if total <= budget:
                break
            drop |= set(group)
            total -= sum(est.tokens(message_chars(msgs[i])) + MESSAGE_OVERHEAD for i in group)
        if drop:
            msgs = [m for i, m in enumerate(msgs) if i not in drop]
    # 3. the longest remaining body clipped in the middle, down to the floor
    system = 0 if msgs and isinstance(msgs[0], SystemMessage) else -1
    for _ in range(4 * len(msgs) + 4):
        total = est.messages(msgs)
        if total <= budget:
            return Fitted(msgs, total, True)
        excess = est.chars(total - budget) + 8
        candidates = [
            (len(m.content), i)
            for i, m in enumerate(msgs)
            if i != system and isinstance(m.content, str) and len(m.content) > floor
        ]
        if not candidates:
            break
        size, i = max(candidates)
        target = max(floor, size - excess - len(CUT_MARK) - 8)
        msgs[i] = _with_content(msgs[i], clip_middle(msgs[i].content, target))
    total = est.messages(msgs)
    if total <= budget:
        return Fitted(msgs, total, True)
    raise Overflow(total)


# --- truncation and the one-line failure ---------------------------------------------------


def looks_truncated(
    chars: int,
    count: int,
    evaluated: int,
    window: int,
    est: TokenEstimator,
    cached: tuple[int, int] = (0, 0),
) -> bool:
    """The server cut the prompt. Its count is near a ceiling (at least ``CEILING_SHARE``
    of the window: a small count is a cached prefix or a server that does not count,
    ollama #3427, not a cut), and it is well below what ``chars`` in ``count`` messages
    should be (``CUT_SHARE``), or a little below it and a round number: a cut prompt is
    counted at the window the server loaded (2048, 4096: a multiple of ``ROUND``).
    ``cached`` (characters, messages) is the prefix an earlier request shared: a count
    no larger than the rest of the prompt is a server that counted only what it did not
    have cached, not a cut."""
    if evaluated <= 0 or window <= 0 or evaluated < CEILING_SHARE * window:
        return False
    cached_chars, cached_count = cached
    if cached_chars > 0:
        rest = est.expected(chars - cached_chars, count - cached_count)
        if evaluated <= CACHED_SLACK * rest:
            return False
    expected = est.expected(chars, count)
    if evaluated < CUT_SHARE * expected:
        return True
    return evaluated < NEAR_SHARE * expected and evaluated % ROUND == 0


class RecentPrompts:
    """The last few requests a hub sent, as message fingerprints: how much of a new
    request an earlier one shared (what a server may have had cached)."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._sent: list[list[tuple[int, int]]] = []
        """Each request: (fingerprint, characters) per message."""

    @staticmethod
    def _marks(messages: Sequence[Any]) -> list[tuple[int, int]]:
        out = []
        for m in messages:
            calls = getattr(m, "tool_calls", None) or []
            key = (type(m).__name__, str(m.content), json.dumps(calls, default=str))
            out.append((hash(key), message_chars(m)))
        return out

    def shared(self, messages: Sequence[Any]) -> tuple[int, int]:
        """(characters, messages) of the longest prefix of ``messages`` an earlier request
        began with."""
        marks = self._marks(messages)
        best = (0, 0)
        for earlier in self._sent:
            chars = n = 0
            for (a, size), (b, _) in zip(marks, earlier, strict=False):
                if a != b:
                    break
                chars += size
                n += 1
            if n < len(marks):  # the whole request again is not a cached prefix of itself
                best = max(best, (chars, n))
        return best

    def add(self, messages: Sequence[Any]) -> None:
        self._sent.append(self._marks(messages))
        del self._sent[: -self.size]


def _setting(source: str) -> tuple[str, str]:
    """(the setting the window comes from, what to do) for a window's ``source``."""
    if "capped" in source:
        return source, "use a model trained for a longer context"
    if source.startswith("model.num_ctx"):
        return "model.num_ctx", "raise model.num_ctx"
    if "Ollama" in source:
        return source, "set model.num_ctx"
    if source.startswith("model.context_window"):
        return "model.context_window", "raise model.context_window (and the server's window)"
    if source.startswith("assumed"):
        return source, "set model.context_window"
    return source, "raise the server's context size"


def overflow_error(needed: int, window: int, source: str, *, kept: int | None = None) -> LLMError:
    """The one line of a prompt that cannot fit: what it needs, the window, the setting."""
    from soothe.engine.llm.errors import LLMError, ModelErrorKind

    where, fix = _setting(source)
    if kept is not None and kept < window:
        message = (
            f"the prompt needs ~{needed:,} tokens but the server kept only {kept:,} of the "
            f"window of {window:,} ({where}): the server holds less than it was asked "
            "(check its context length, e.g. OLLAMA_CONTEXT_LENGTH), or lower the window"
        )
    else:
        message = (
            f"the prompt needs ~{needed:,} tokens but the window is {window:,} ({where}): {fix}"
        )
    return LLMError(ModelErrorKind.context_overflow, message, retryable=False)


# --- tools ---------------------------------------------------------------------------------

READ_TOOLS = frozenset({"read_file", "list_dir", "glob", "grep"})
TOOLS_SHARE = 0.4
"""When the tool specs would take more than this share of a step's budget, it is tight."""

_WORD = re.compile(r"[a-z0-9]+")


def _spec_name(spec: Any) -> str:
    fn = spec.get("function", spec) if isinstance(spec, dict) else {}
    return str(fn.get("name") or "")


def _spec_words(spec: Any) -> set[str]:
    fn = spec.get("function", spec) if isinstance(spec, dict) else {}
    text = f"{fn.get('name') or ''} {fn.get('description') or ''}".replace("_", " ")
    return content_words(text)


def select_tools(
    specs: Sequence[Any],
    text: str,
    budget: int,
    est: TokenEstimator,
    wanted: frozenset[str] = frozenset(),
) -> list[Any]:
    """The tool specs to offer a step: all of them unless they take more than
    ``TOOLS_SHARE`` of its ``budget``. Then, in this order while they fit that share (at
    least one): the tools ``text`` (the step) names or the caller says it ``wanted``,
    those whose name or description shares a word with it, read_file, the other read
    tools; the rest are not offered."""
    specs = list(specs)
    room = TOOLS_SHARE * budget
    if est.tools(specs) <= room:
        return specs
    words = content_words(text.replace("_", " "))
    lowered = text.lower()

    def rank(spec: Any) -> int:
        name = _spec_name(spec)
        if name and (name.lower() in lowered or name in wanted):
            return 0
        if _spec_words(spec) & words:
            return 1
        if name == "read_file":
            return 2
        return 3 if name in READ_TOOLS else 4

    ranked = sorted(range(len(specs)), key=lambda i: rank(specs[i]))
    chosen: list[int] = []
    used = 0
    for i in ranked:
        if rank(specs[i]) > 3:
            break
        cost = est.tools([specs[i]])
        if chosen and used + cost > room:
            continue
        chosen.append(i)
        used += cost
    return [specs[i] for i in sorted(chosen)]
