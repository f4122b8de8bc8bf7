"""UnifiedClassifier: one small structured call routes a request (and answers a quiz).

Two deterministic guards around the call: a request the loader grounded in the workspace
(``task=True``) is never answered as a quiz (the call still says simple or complex), and a
quiz answer that echoes our own labels, field names or schema (what a small model does
when it cannot follow the format) is rejected and the request goes down the task path.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from soothe.engine.loop.schemas import Classification

if TYPE_CHECKING:
    from soothe.engine.loop.planner import LLMPlanner

QUIZ_LABELS = ("quiz", "trivial")
LABEL_WORDS = frozenset({"quiz", "trivial", "simple", "complex"})
FIELD_WORDS = frozenset({"label", "answer", "reason"})
SCHEMA_MARKS = ("{", "}", "enum", '"type"', "properties", "maxlength", "$defs", "json schema")
_FIELD_ECHO = re.compile(r"\b(label|answer|reason|quiz|trivial|simple|complex)\"?\s*[:=]", re.I)
_EDGES = " \t\r\n\"'`.,;:!?()[]<>*_-"


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
        self, text: str, history: str = "", ids: Any = None, *, task: bool = False
    ) -> Classification:
        """Route the request. A model that cannot classify sends it down the agentic path.

        ``task``: the request is known to be a workspace task (the loader grounded it, or
        the user forced it with ``/task``): a quiz label is taken as "simple"."""
        from soothe.engine.loop.planner import PlanningFailed

        local = precheck(text)
        if local is not None:
            return local
        try:
            result = await self.planner.classify(text, history=history, ids=ids)
        except PlanningFailed as exc:
            return Classification(label="complex", reason=f"classification failed: {exc}"[:200])
        if result.label not in QUIZ_LABELS:
            return result
        if task:
            return Classification(
                label="simple", reason=f"a workspace task, not a {result.label}"[:200]
            )
        if not result.answer.strip():
            # A quiz label without an answer would cost a second call anyway: plan instead.
            return Classification(label="simple", reason="no answer given with the quiz label")
        if problem := echo_problem(result.answer):
            return Classification(label="simple", reason=f"quiz answer rejected: {problem}"[:200])
        return result
