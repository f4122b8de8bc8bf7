"""Structured output: strict parse, local repair, validation feedback for a re-ask.

Pure pydantic + stdlib; ``ModelHub.structured`` drives the model calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from soothe.engine.llm.repair import repair

__all__ = [
    "ParseOutcome",
    "StructuredResult",
    "feedback_text",
    "parse_structured",
    "schema_hint",
]

T = TypeVar("T", bound=BaseModel)

MAX_PROBLEMS = 6
MAX_ECHO_CHARS = 1500
"""How much of a bad reply is sent back with a re-ask (a looping model can be huge)."""


@dataclass
class StructuredResult(Generic[T]):
    """The outcome of ``ModelHub.structured``: a value, or a one-line ``error``."""

    value: T | None
    attempts: int
    error: str | None = None
    raw: str = ""
    repaired: bool = False
    truncated: bool = False
    problems: list[str] = field(default_factory=list)
    context: str = ""
    """When the window shaped the prompt: "the prompt was clipped to fit the context window
    of 2,048 tokens (model.num_ctx)" (for the caller's error line); else ''."""

    @property
    def ok(self) -> bool:
        return self.value is not None


@dataclass
class ParseOutcome(Generic[T]):
    value: T | None
    repaired: bool = False
    truncated: bool = False
    problems: list[str] = field(default_factory=list)


def _problems(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors(include_url=False)[:MAX_PROBLEMS]:
        loc = ".".join(str(p) for p in err["loc"]) or "(object)"
        msg = " ".join(str(err["msg"]).split())
        if err["type"] in ("string_too_long", "too_long"):
            msg += " - keep it shorter"
        out.append(f"{loc}: {msg}"[:200])
    if exc.error_count() > MAX_PROBLEMS:
        out.append(f"... and {exc.error_count() - MAX_PROBLEMS} more")
    return out


def parse_structured(raw: str, schema: type[T], *, truncated: bool = False) -> ParseOutcome[T]:
    """Parse ``raw`` strictly; else repair it locally; then validate against ``schema``.

    ``truncated`` says the model stopped at its token limit: an object that only parses
    after being closed is then refused (it may silently miss items), not trusted.
    """
    text = raw.strip()
    try:
        return ParseOutcome(schema.model_validate_json(text))
    except ValidationError:
        pass
    fixed = repair(text)
    if fixed is None:
        if not text:
            problem = "the reply was empty"
        elif truncated:
            problem = "the reply was cut off at the token limit before the object was complete"
        else:
            problem = "the reply is not a JSON object"
        return ParseOutcome(None, truncated=truncated, problems=[problem])
    if fixed.closed and truncated:
        return ParseOutcome(
            None,
            repaired=True,
            truncated=True,
            problems=["the reply was cut off at the token limit; keep every string short"],
        )
    repaired = not _is_json_object(text)
    try:
        value = schema.model_validate_json(fixed.text)
    except ValidationError as exc:
        return ParseOutcome(None, repaired, truncated, problems=_problems(exc))
    return ParseOutcome(value, repaired, truncated)


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


CUT_FEEDBACK = (
    "Your reply was cut off at the token limit: this time reply at once with a SHORTER "
    "object (fewer items, short strings), without thinking at length first."
)
"""Added to the re-ask of a reply cut at its limit: the call is never repeated unchanged."""


def feedback_text(outcome: ParseOutcome[Any], schema_name: str, *, cut: bool = False) -> str:
    """The user message of a re-ask: what was wrong, and what to send instead; ``cut``:
    the reply ended at its token limit, so the re-ask asks for a shorter one."""
    lines = "\n".join(f"- {p}" for p in outcome.problems) or "- it did not match the schema"
    shorter = f"\n{CUT_FEEDBACK}" if cut else ""
    return (
        f"Your previous reply was not a valid {schema_name} object:\n{lines}{shorter}\n"
        "Reply again with only the corrected JSON object: no prose, no code fences."
    )


def echo_text(raw: str) -> str:
    """The bad reply as sent back to the model, cut to a bounded size."""
    return raw if len(raw) <= MAX_ECHO_CHARS else raw[:MAX_ECHO_CHARS] + " …(cut)"


def schema_hint(json_schema: dict[str, Any]) -> str:
    """A compact instruction naming the schema, added to the prompt of every attempt."""
    compact = json.dumps(_strip_titles(json_schema), separators=(",", ":"), ensure_ascii=False)
    return (
        "Answer with one JSON object that matches this JSON schema "
        f"(no prose, no code fences; keep strings short):\n{compact}"
    )


def _strip_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _strip_titles(value)
    return out
