"""UnifiedClassifier: one small structured call routes a request (and answers a quiz).

The call sees the offered tools, one bounded line each (``tool_lines``: ours and the MCP
servers'), so a request a tool answers is not taken for a quiz.

Three deterministic guards around the call: a request the loader grounded in the
workspace (``task=True``) is never answered as a quiz (the call still says simple or
complex); a request that matches an MCP tool (``mcp_match``: it shares subject words with
the tool's name, or two with its description) is never a quiz either, since the user
added that tool to be used; and a quiz answer that echoes our own labels, field names or
schema (what a small model does when it cannot follow the format) is rejected and the
request goes down the task path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from soothe.engine.loop.schemas import Classification
from soothe.engine.text import clip
from soothe.engine.words import WORK_WORDS, content_words

if TYPE_CHECKING:
    from soothe.engine.agent.mcp import McpTool
    from soothe.engine.loop.planner import LLMPlanner

QUIZ_LABELS = ("quiz", "trivial")
LABEL_WORDS = frozenset({"quiz", "trivial", "simple", "complex"})
FIELD_WORDS = frozenset({"label", "answer", "reason"})
SCHEMA_MARKS = ("{", "}", "enum", '"type"', "properties", "maxlength", "$defs", "json schema")
_FIELD_ECHO = re.compile(r"\b(label|answer|reason|quiz|trivial|simple|complex)\"?\s*[:=]", re.I)
_EDGES = " \t\r\n\"'`.,;:!?()[]<>*_-"


TOOL_LINE_CHARS = 80
"""A tool's line in the classification prompt: its name and the first sentence of its
description, clipped to this many characters."""
MAX_TOOL_LINES = 16
TOOL_LIST_CHARS = 1600
"""The whole list stays within these; the rest is one "... and N more" line."""
_SERVER_TAG = re.compile(r"^\[[^\]]{1,80}\]\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")


@dataclass(frozen=True)
class OfferedTool:
    """A tool a step may be offered, as routing sees it."""

    name: str
    description: str = ""
    mcp: bool = False
    """From an MCP server the user configured (``engine/agent/mcp.py``)."""
    server: str = ""
    """That server's name (the user's own word for what it is about)."""


def mcp_offered(tools: Iterable[McpTool]) -> list[OfferedTool]:
    """MCP tools (``McpManager.tools``) as routing sees them."""
    return [OfferedTool(t.name, t.description, mcp=True, server=t.server) for t in tools]


def first_sentence(text: str, limit: int = TOOL_LINE_CHARS) -> str:
    """The first sentence of a tool description (an MCP server's ``[name]`` tag left
    out), on one line, clipped to ``limit``."""
    text = _SERVER_TAG.sub("", text.strip())
    text = _SENTENCE_END.split(text, maxsplit=1)[0]
    return clip(text, limit)


def _stems(words: set[str]) -> set[str]:
    """Subject words with a plural/verb ``s`` taken off ("means" is "mean"), less the
    verbs of work that fit any tool."""
    out = set()
    for word in words:
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return out - WORK_WORDS


def mcp_match(request: str, tools: Sequence[OfferedTool]) -> OfferedTool | None:
    """The first MCP tool the request is about: it shares a subject word with the tool's
    name or its server's, or two with its description (``engine.words``; plurals
    folded). None if none."""
    asked = _stems(content_words(request))
    if not asked:
        return None
    for tool in tools:
        if not tool.mcp:
            continue
        names = f"{tool.name} {tool.server}".replace("_", " ").replace("-", " ")
        name = _stems(content_words(names))
        about = name | _stems(content_words(_SERVER_TAG.sub("", tool.description)))
        shared = asked & about
        if shared & name or len(shared) >= 2:
            return tool
    return None


def tool_lines(tools: Sequence[OfferedTool], request: str = "") -> list[str]:
    """The classification prompt's tool list: ``name: first sentence`` per tool, the
    MCP tools the request matches first, bounded by ``MAX_TOOL_LINES`` and
    ``TOOL_LIST_CHARS`` (a last line says how many were left out)."""
    matched = [t for t in tools if t.mcp and mcp_match(request, [t]) is not None]
    ordered = matched + [t for t in tools if t not in matched]
    lines: list[str] = []
    used = 0
    for tool in ordered:
        sentence = first_sentence(tool.description)
        line = clip(f"- {tool.name}: {sentence}" if sentence else f"- {tool.name}", 120)
        if len(lines) >= MAX_TOOL_LINES or used + len(line) + 1 > TOOL_LIST_CHARS:
            break
        lines.append(line)
        used += len(line) + 1
    if len(lines) < len(ordered):
        lines.append(f"- ... and {len(ordered) - len(lines)} more")
    return lines


def precheck(text: str) -> Classification | None:
    """Skip the model where the answer is certain: skill invocations are always tasks."""
    if text.lstrip().startswith("/skill:"):
        return Classification(label="complex", reason="skill invocation")
    return None


def echo_problem(answer: str) -> str | None:
    """Why a quiz answer is an echo of our own prompt or schema, or None if it is not."""
    low = answer.lower()
    word = low.strip(_EDGES)
    if word in LABEL_WORDS:
        return f"the answer is the label word '{word}'"
    if word in FIELD_WORDS:
        return f"the answer is the field name '{word}'"
    for mark in SCHEMA_MARKS:
        if mark in low:
            return f"the answer holds a schema fragment ({mark!r})"
    if match := _FIELD_ECHO.search(answer):
        return f"the answer echoes '{match.group(1).lower()}:'"
    return None


class UnifiedClassifier:
    def __init__(self, planner: LLMPlanner) -> None:
        self.planner = planner

    async def classify(
        self,
        text: str,
        history: str = "",
        ids: Any = None,
        *,
        task: bool = False,
        tools: Sequence[OfferedTool] = (),
    ) -> Classification:
        """Route the request. A model that cannot classify sends it down the agentic path.

        ``task``: the request is known to be a workspace task (the loader grounded it, or
        the user forced it with ``/task``): a quiz label is taken as "simple".
        ``tools``: what a step would be offered; listed in the prompt, and a request
        matching one of its MCP tools is not a quiz either."""
        from soothe.engine.loop.planner import PlanningFailed

        local = precheck(text)
        if local is not None:
            return local
        try:
            result = await self.planner.classify(
                text, history=history, ids=ids, tools=tool_lines(tools, text)
            )
        except PlanningFailed as exc:
            return Classification(label="complex", reason=f"classification failed: {exc}"[:200])
        if result.label not in QUIZ_LABELS:
            return result
        if task:
            return Classification(
                label="simple", reason=f"a workspace task, not a {result.label}"[:200]
            )
        if (tool := mcp_match(text, tools)) is not None:
            return Classification(
                label="simple", reason=f"the tool {tool.name} may answer it, not a quiz"[:200]
            )
        if not result.answer.strip():
            # A quiz label without an answer would cost a second call anyway: plan instead.
            return Classification(label="simple", reason="no answer given with the quiz label")
        if problem := echo_problem(result.answer):
            return Classification(label="simple", reason=f"quiz answer rejected: {problem}"[:200])
        return result
