"""Judging a goal's final answer before the user gets it (issue 12: honest outcomes).

A small model's final answer is often not one: the tool-mode JSON it saw in its history
written back as text, our own labels or schema, a copy of the planning context (status
tags, field names), or prose that shares no word with what the workspace showed. Steps
already refuse such answers (``agent.judge``); this is the same rule for the goal:

1. ``final_answer_problem`` says why an answer is not one (None when it is);
2. the loop then asks once more with a compact facts-and-question prompt
   (``facts_prompt``), which a small model follows far better than the full context;
3. if that is no answer either, the user gets the facts themselves, marked
   ``RAW_MARK`` (``raw_answer``), or, with no facts, no answer (the goal fails).

Grounding is judged only against facts from the workspace (tool output and what the
loader read), never against step answers, which may be the very junk being judged. It
applies on every profile when the request named files (``names_files``), and always on
the small profile.

Two more judgements of the same kind (issue 31): whether the loader's facts bear on a
request (``facts_bear_on``: when planning fails, the goal is answered from them instead
of failing), and whether what a thread already knows bears on a follow-up
(``thread_bears_on``: a follow-up may be answered without new steps only then).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from soothe.engine.agent.judge import RAW_MARK, no_answer_reason
from soothe.engine.agent.read_only import is_read_only_request
from soothe.engine.classify import FIELD_WORDS, LABEL_WORDS
from soothe.engine.context.projection import bootstrap_tag
from soothe.engine.text import clip
from soothe.engine.words import content_words

if TYPE_CHECKING:
    from soothe.engine.context.models import EvidenceEntry

FACT_KINDS = ("bootstrap", "tool")
FACTS_CHARS = 3000
"""How much of the facts the re-ask prompt and a raw answer carry."""

LOADER_TAGS = ("listing", "file")
"""The loader's facts about the workspace (``engine.loader``): its listing, named files."""

FROM_FACTS_NOTE = "_Answered from the workspace facts alone: no plan could be made ({why})._"
"""Ends an answer made from the facts after planning failed (``facts_bear_on``)."""

FACTS_SYSTEM = (
    "Answer the user's request from the facts below, in plain sentences. "
    "Use only the facts; if they do not answer it, say what is missing. "
    "No JSON, no code, no headings."
)

_SCHEMA_ECHO = re.compile(r'"(type|enum|properties|maxLength|minLength|\$defs|required)"\s*:')
_UNWRAP_KEYS = ("answer", "text", "content", "result", "response")
_CONTEXT_ECHO = re.compile(
    r"\[(completed|active|pending|failed|running|skipped|validated)\]"
    r"|\b(execution_mode|plan_action|goal_progress|require_goal_completion|expected_output)\b",
    re.I,
)


def unwrap_json(answer: str) -> str:
    """The text inside a JSON reply that wraps an answer (``{"answer": "..."}``), else
    ``answer`` unchanged."""
    body = answer.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    if not body.startswith("{"):
        return answer
    try:
        value = json.loads(body)
    except ValueError:
        return answer
    if isinstance(value, dict):
        for key in _UNWRAP_KEYS:
            inner = value.get(key)
            if isinstance(inner, str) and inner.strip():
                return inner.strip()
    return answer


def facts_of(entries: Sequence[EvidenceEntry]) -> list[EvidenceEntry]:
    """The goal's evidence that came from the workspace: tool output and what the loader
    gathered (not the project instructions, which are rules, not facts)."""
    return [
        e
        for e in entries
        if e.kind in FACT_KINDS
        and (e.content or e.summary).strip()
        and not (e.kind == "bootstrap" and bootstrap_tag(e.summary) == "instructions")
    ]


def grounds_text(entries: Sequence[EvidenceEntry]) -> str:
    """What an answer must rest on: the files the request named (as the loader read them)
    and tool output when it named any, else every fact (the listing too). "Read notes.txt
    and tell me the first item" is answered from notes.txt, not from the listing."""
    facts = [
        e
        for e in facts_of(entries)
        if not (e.kind == "bootstrap" and bootstrap_tag(e.summary) == "missing")
    ]
    named = [e for e in facts if e.kind == "bootstrap" and bootstrap_tag(e.summary) == "file"]
    if named:
        facts = [e for e in facts if e.kind == "tool" or e in named]
    return "\n".join(e.content or e.summary for e in facts)


def facts_text(entries: Sequence[EvidenceEntry], limit: int = FACTS_CHARS) -> str:
    """The facts as labelled blocks, within ``limit`` characters (the newest kept)."""
    blocks: list[str] = []
    room = limit
    for entry in reversed(facts_of(entries)):
        if room <= 120:
            break
        body = (entry.content or "").strip()
        block = clip(f"{entry.summary}:\n{body}" if body else entry.summary, room, flatten=False)
        blocks.append(block)
        room -= len(block) + 2
    return "\n\n".join(reversed(blocks))


def final_answer_problem(
    answer: str,
    *,
    goal: str,
    grounds: str,
    instructions: Sequence[str] = (),
    require_grounding: bool = False,
) -> str | None:
    """Why ``answer`` is not an answer to ``goal``, or None when it is one.

    The shape checks always apply. ``require_grounding`` (the small-model profile, whose
    prose cannot be taken on trust) adds one more: a request that changes nothing (a
    question about the workspace) with ``grounds`` (what the workspace showed that the
    answer must rest on, ``grounds_text``) must be answered from them: the answer shares
    a content word with them that the goal itself does not already have. An answer to a
    change ("done", "wrote hello.py") reports an action and is not held to it."""
    text = answer.strip()
    if reason := no_answer_reason(text, list(instructions)):
        return reason
    if text[:1] in "{[" and "json" not in goal.lower():
        return "JSON instead of an answer"
    word = text.lower().strip(" \t\n\"'`.,;:!?()[]*_-")
    if word in LABEL_WORDS or word in FIELD_WORDS:
        return f"the label or field name '{word}'"
    if _SCHEMA_ECHO.search(text):
        return "a fragment of our JSON schema"
    if _CONTEXT_ECHO.search(text):
        return "a copy of the planning context"
    if require_grounding and grounds.strip() and is_read_only_request(goal):
        mine = content_words(text) - content_words(goal)
        if not mine & content_words(grounds):
            return "it shares nothing with the workspace facts"
    return None


def facts_prompt(goal: str, facts: str) -> str:
    return f"Facts:\n{facts.strip() or '(none)'}\n\nRequest: {goal.strip()}\n\nAnswer:"


def raw_answer(facts: str) -> str:
    """The facts as the answer, marked so nobody reads them as the model's."""
    return f"{RAW_MARK}\n\n{facts.strip()}"


def named_files(entries: Sequence[EvidenceEntry]) -> list[str]:
    """The paths of the files the loader read because the request named them."""
    out = []
    for e in entries:
        if e.kind == "bootstrap" and bootstrap_tag(e.summary) == "file":
            what = e.summary.partition(": ")[2]
            out.append(what.rsplit(" (", 1)[0] if what.endswith(")") else what)
    return out


def names_files(entries: Sequence[EvidenceEntry]) -> bool:
    """True when the request named files the loader read (its answer must rest on them)."""
    return bool(named_files(entries))


def facts_bear_on(request: str, entries: Sequence[EvidenceEntry]) -> bool:
    """True when what the loader gathered for ``request`` bears on it, so an answer can be
    made from it when planning fails: it read a file the request named, or its facts
    share a content word with the request, or the request has no subject of its own
    ("List the files") and the loader found something (the listing)."""
    loaded = [
        e
        for e in entries
        if e.kind == "bootstrap"
        and bootstrap_tag(e.summary) in LOADER_TAGS
        and (e.content or "").strip()
    ]
    if not loaded:
        return False
    if names_files(loaded):
        return True
    words = content_words(request)
    if not words:
        return True
    return bool(words & content_words("\n".join(f"{e.summary}\n{e.content}" for e in loaded)))


def answerable_from_facts(request: str, entries: Sequence[EvidenceEntry]) -> bool:
    """True when planning that failed may be answered from the loader's facts: the request
    asks for no change (facts cannot edit a file) and the facts bear on it."""
    return is_read_only_request(request) and facts_bear_on(request, entries)


def _mentions(summary: str, path: str) -> bool:
    return re.search(rf"(?<![\w/.-]){re.escape(path)}(?![\w/-])", summary) is not None


def thread_bears_on(
    request: str, own: Sequence[EvidenceEntry], earlier: Sequence[EvidenceEntry]
) -> bool:
    """True when the evidence earlier goals of the thread gathered (``earlier``) bears on
    a follow-up ``request`` about the workspace, so it may be answered without new steps.

    ``own`` is the follow-up's own evidence: the files the loader read for it are the
    files it names, and each must be among the earlier facts (a tool read it, or the
    loader did for an earlier request). Otherwise the request's content words must be
    found in the earlier facts: tool output and the files the loader read. A listing only
    shows that a name exists, and earlier answers (findings, recalled memory) may be the
    very thing being judged: neither counts. A request with no words
    of its own ("what was the first item again?") is about the thread itself."""
    facts = [e for e in facts_of(earlier) if e.kind == "tool" or bootstrap_tag(e.summary) == "file"]
    named = named_files(own)
    if named:
        return all(any(_mentions(e.summary, path) for e in facts) for path in named)
    words = content_words(request)
    if not words:
        return True
    return bool(words & content_words("\n".join(f"{e.summary}\n{e.content}" for e in facts)))
