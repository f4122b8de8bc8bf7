"""Tool calls a model wrote into its text instead of ``tool_calls``.

A model whose template lacks tool support, or a small one, writes its call into the
content (NOTES.md "Tool calls written as text"). ``text_tool_calls`` reads such a reply
and returns the calls, which ``toolcalls.normalize_tool_calls`` then puts into
``message.tool_calls``: from there they run exactly as native calls (the same
validation, approval, journal, events and evidence).

The rule is strict, since a false positive runs a tool the model did not call:

* only a reply to a call that offered tools, with no native call (valid or invalid);
* the WHOLE content (a leading ``<think>…</think>`` block and surrounding whitespace set
  aside) is exactly one of:

  1. one JSON object;
  2. one fenced block (`````json`` or a bare ```````) holding one JSON object, nothing
     outside the fence;
  3. one or more Qwen/Hermes ``<tool_call>{…}</tool_call>`` blocks with nothing but
     whitespace between them (the last closing tag may be missing when the reply ended
     on its own, not at the token limit: some templates stop on it);

* each object is one of the call shapes, with no other key:

  a. ``{"name": N, "arguments": A}`` or ``{"name": N, "parameters": A}``, optionally
     with ``"type": "function"`` (Llama 3.2) and an ``"id"``;
  b. ``{"type": "function", "function": {"name": N, "arguments": A}}`` (OpenAI-ish),
     optionally with an ``"id"``;

* ``N`` names an offered tool; ``A`` is an object, or a JSON string holding one, that
  validates against that tool's parameters: every required parameter is there, and each
  declared one has its declared type (after the one coercion rule, ``coerce_args``) and
  enum value;
* every call of the reply passes, or none runs.

Anything else stays text: prose that contains JSON, an object that is not a call shape,
a tool that was not offered, arguments that do not validate, several objects mixed with
prose (the step's no-answer rule then asks again). The call's text is removed from the
content (what remains is a leading thinking block, if any); the calls get ids
``call_…`` and their ids are listed in ``additional_kwargs["text_tool_calls"]``.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

__all__ = ["TEXT_CALLS_KEY", "TextCall", "parse_text_calls", "valid_args"]

TEXT_CALLS_KEY = "text_tool_calls"
"""``additional_kwargs`` key listing the ids of the calls that came as text."""

_THINK = re.compile(r"\A\s*<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(.*?)\n?[ \t]*```\Z", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_OPEN_TAIL = re.compile(r"<tool_call>(.*)\Z", re.DOTALL)
_ARG_KEYS = ("arguments", "parameters")
_EXTRA_KEYS = frozenset({"id", "type"})


@dataclass(frozen=True)
class TextCall:
    name: str
    args: dict[str, Any]
    id: str


def _object(text: str) -> dict[str, Any] | None:
    """``text`` as one JSON object (whitespace around it allowed), else None."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _objects(body: str, *, cut: bool) -> list[dict[str, Any]] | None:
    """The JSON objects ``body`` is made of, by the three forms, or None."""
    if (one := _object(body)) is not None:
        return [one]
    if fence := _FENCE.match(body):
        one = _object(fence.group(1))
        return None if one is None else [one]
    if "<tool_call>" not in body:
        return None
    found: list[dict[str, Any]] = []
    end = 0
    for match in _TAGGED.finditer(body):
        if body[end : match.start()].strip():
            return None  # prose between or before the blocks
        one = _object(match.group(1))
        if one is None:
            return None
        found.append(one)
        end = match.end()
    rest = body[end:]
    if rest.strip():
        tail = _OPEN_TAIL.match(rest.strip())
        if tail is None or cut:
            return None
        one = _object(tail.group(1))
        if one is None:
            return None
        found.append(one)
    return found or None


def _call_shape(obj: dict[str, Any]) -> tuple[str, Any] | None:
    """(name, raw arguments) of a call-shaped object, or None."""
    if "function" in obj:
        if set(obj) - {"function", *_EXTRA_KEYS} or obj.get("type", "function") != "function":
            return None
        inner = obj["function"]
        return _call_shape(inner) if isinstance(inner, dict) and "function" not in inner else None
    keys = set(obj)
    given = [k for k in _ARG_KEYS if k in keys]
    if "name" not in keys or len(given) != 1 or keys - {"name", *given, *_EXTRA_KEYS}:
        return None
    if obj.get("type", "function") != "function" or not isinstance(obj["name"], str):
        return None
    return obj["name"], obj[given[0]]


def _kinds(node: dict[str, Any]) -> set[str]:
    kinds: set[str] = set()
    kind = node.get("type")
    if isinstance(kind, str):
        kinds.add(kind)
    elif isinstance(kind, list):
        kinds.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf"):
        for option in node.get(key) or []:
            if isinstance(option, dict):
                if not _kinds(option):
                    return set()  # an option of any type: anything goes
                kinds |= _kinds(option)
    return kinds


def _fits(value: Any, node: Any) -> bool:
    """``value`` has a type ``node`` declares (and its enum value); a node that
    declares nothing (a ``$ref``, ``{}``) takes anything."""
    if not isinstance(node, dict):
        return True
    enum = node.get("enum")
    if isinstance(enum, list) and value not in enum:
        return False
    kinds = _kinds(node)
    if not kinds:
        return True
    checks = {
        "string": isinstance(value, str),
        "integer": (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and value.is_integer()),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "null": value is None,
        "array": isinstance(value, list) and all(_fits(item, node.get("items")) for item in value),
        "object": isinstance(value, dict) and valid_args(value, node),
    }
    return any(checks.get(kind, True) for kind in kinds)


def valid_args(args: dict[str, Any], parameters: dict[str, Any]) -> bool:
    """``args`` has every required parameter, each declared one of its declared type,
    and no undeclared one where the schema forbids others."""
    props = parameters.get("properties") or {}
    required = parameters.get("required") or []
    if any(name not in args for name in required if isinstance(name, str)):
        return False
    if parameters.get("additionalProperties") is False and set(args) - set(props):
        return False
    return all(_fits(value, props[key]) for key, value in args.items() if key in props)


def parse_text_calls(
    content: str, params: dict[str, dict[str, Any]], *, cut: bool = False
) -> tuple[list[TextCall], str] | None:
    """The calls ``content`` is made of and the text that remains once they are taken
    out (a leading thinking block), or None when it is not calls (the module's rule).

    ``params`` maps each offered tool to the JSON schema of its parameters; ``cut``: the
    reply ended at the token limit (an unclosed ``<tool_call>`` is then not taken)."""
    from soothe.engine.llm.toolcalls import coerce_args

    if not params or "{" not in content:
        return None
    think = _THINK.match(content)
    keep = think.group(0).strip() if think else ""
    body = content[think.end() :] if think else content
    objects = _objects(body.strip(), cut=cut)
    if not objects:
        return None
    calls: list[TextCall] = []
    for obj in objects:
        shape = _call_shape(obj)
        if shape is None:
            return None
        name, raw = shape
        if name not in params:
            return None
        if isinstance(raw, str):
            try:
                raw = json.loads(raw) if raw.strip() else {}
            except ValueError:
                return None
        if not isinstance(raw, dict):
            return None
        # No parameter is free text here: an object or list where a string is declared
        # (a path, a command, even file content) does not validate.
        if not valid_args(coerce_args(raw, params[name], text_fields=()), params[name]):
            return None
        calls.append(TextCall(name=name, args=raw, id=f"call_{uuid.uuid4().hex[:12]}"))
    return calls, keep
