"""Judging a step's tool calls and answers, so a step does not fool itself.

Two rules (issue 12 item 4), measured on a real 135M model:

* an identical tool call (same tool, same arguments after normalisation) within one step
  is not run again: the model gets the earlier result and a note, and after the second
  repeat the step stops calling tools (``RepeatGuard``);
* an answer that is empty, has no words ("]["), is a tool call written as text, or a
  copy of our own instructions is "no answer" (``no_answer_reason``): the step asks once more with a
  compact facts-and-question prompt (``facts_prompt``), and if that fails too, the last
  successful tool outputs become the step result, marked as such (``raw_result``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from soothe.engine.agent.capping import cap_text
from soothe.engine.agent.tools import TOOLS, ToolOutcome, normalize_args
from soothe.engine.agent.workspace import ToolError

MAX_REPEATS = 2
"""Repeats of an earlier call a step tolerates; the one that reaches this ends the step."""

RAW_MARK = "(raw tool output; the model gave no answer)"
REPEAT_NOTE = (
    "\n\n[note: you already made this exact call in this step; this is its earlier "
    "result. Do not repeat it: use the result, call something else, or answer.]"
)
REPEATS_SPENT = (
    "You keep repeating a tool call you already made. Do not call tools. Answer now "
    "with what the tool results above show; say briefly what is still unknown."
)
FACTS_CHARS = 3000
"""How much tool output goes into the compact facts prompt (and a raw result)."""


def call_key(call: dict[str, Any]) -> str | None:
    """The identity of a call: its tool and normalised arguments, as canonical JSON.

    A call the model layer could not parse has no identity (it is answered with its
    own error every time; the budget bounds it)."""
    if call.get("error"):
        return None
    name = str(call.get("name") or "").strip()
    raw = call.get("args")
    tool = TOOLS.get(name)
    args: Any = raw
    if tool is not None:
        try:
            args = normalize_args(tool, raw)
            args = tool.args.model_validate(args).model_dump()  # defaults filled in
        except (ToolError, ValidationError):
            pass
    try:
        return name + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return None


class RepeatGuard:
    """Remembers the step's calls; answers a repeat with the earlier outcome."""

    def __init__(self) -> None:
        self.seen: dict[str, ToolOutcome] = {}
        self.repeats = 0

    @property
    def spent(self) -> bool:
        return self.repeats >= MAX_REPEATS

    def earlier(self, call: dict[str, Any]) -> ToolOutcome | None:
        """The earlier outcome of an identical call (and count the repeat), or None."""
        key = call_key(call)
        if key is None or key not in self.seen:
            return None
        self.repeats += 1
        return self.seen[key]

    def remember(self, call: dict[str, Any], outcome: ToolOutcome) -> None:
        key = call_key(call)
        if key is not None:
            self.seen.setdefault(key, outcome)


# --- "no answer" -------------------------------------------------------------------------

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_TOOL_CALL_TAG = re.compile(r"</?\s*(tool_call|function_call|tool_use|function)\b", re.I)
_CALL_KEYS = frozenset({"name", "tool", "function", "tool_name", "tool_calls", "action"})
_ARG_KEYS = frozenset({"arguments", "args", "parameters", "params", "input", "action_input"})
_TOOL_AS_TEXT = re.compile(r"^\W{0,3}(" + "|".join(TOOLS) + r")\s*\(", re.I)


def _norm(text: str) -> str:
    text = text.lower().replace("`", "").replace('"', "").replace("'", "")
    text = re.sub(r"[.,;:!?]+(\s|$)", " ", text)  # sentence punctuation, not README.md
    return " ".join(re.sub(r"[^\w./() -]+", " ", text).split())


def _looks_like_call(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_looks_like_call(v) for v in value)
    if not isinstance(value, dict):
        return False
    keys = set(value)
    if "tool_calls" in keys or ("function" in keys and isinstance(value["function"], dict)):
        return True
    name = next((value[k] for k in ("name", "tool", "tool_name") if k in value), None)
    return isinstance(name, str) and (bool(keys & _ARG_KEYS) or name in TOOLS)


def is_tool_call_text(text: str) -> bool:
    body = _FENCE.sub("", text.strip()).strip()
    if _TOOL_CALL_TAG.search(body) or _TOOL_AS_TEXT.match(body):
        return True
    if body[:1] in "{[":
        try:
            return _looks_like_call(json.loads(body))
        except ValueError:
            # Truncated JSON that names one of our tools is a call too.
            return bool(re.search(r'"(name|tool)"\s*:\s*"(' + "|".join(TOOLS) + ')"', body))
    return False


def is_instruction_copy(text: str, instructions: list[str]) -> bool:
    """True when the answer is made of our own prompt lines (rules, the budget line).

    Every line of the answer with some substance must occur in one of ``instructions``
    (normalised: case, quotes, punctuation and whitespace ignored)."""
    corpus = " \n ".join(_norm(i) for i in instructions)
    lines = [_norm(line).lstrip("- ").strip() for line in text.splitlines()]
    lines = [line for line in lines if len(line) >= 12]
    if not lines:
        return False
    return all(line in corpus for line in lines)


def no_answer_reason(text: str, instructions: list[str]) -> str | None:
    """Why ``text`` is not an answer, or None when it is one."""
    if not text.strip():
        return "empty answer"
    if not re.search(r"[^\W_]", text):  # "][", "...": not a letter or digit in it
        return "no words"
    if is_tool_call_text(text):
        return "a tool call written as text"
    if is_instruction_copy(text, instructions):
        return "a copy of the step's instructions"
    return None


def last_outputs(outcomes: list[ToolOutcome], limit: int = FACTS_CHARS) -> str:
    """The newest successful tool outputs, newest last, within ``limit`` characters."""
    picked: list[str] = []
    room = limit
    for o in reversed([o for o in outcomes if o.ok and o.output.strip()]):
        if room <= 200:
            break
        args = ", ".join(f"{k}={v!r}" for k, v in o.args.items() if k != "content")
        block = cap_text(f"{o.tool}({args}):\n{o.output.strip()}", room)[0]
        picked.append(block)
        room -= len(block) + 2
    return "\n\n".join(reversed(picked))


def facts_prompt(step_id: str, description: str, expected_output: str, facts: str) -> str:
    parts = ["Facts (tool output):\n" + (facts or "(none)")]
    parts.append(f"Step {step_id}: {description.strip()}")
    if expected_output.strip():
        parts.append(f"Wanted: {expected_output.strip()}")
    parts.append("Answer this step in plain sentences, using only the facts above.")
    return "\n\n".join(parts)


def raw_result(facts: str) -> str:
    return f"{RAW_MARK}\n{facts}"
