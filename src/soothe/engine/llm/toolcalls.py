"""The one tool-argument rule, and tool calls checked against the tools that were offered.

Models (and ChatOllama's own band-aid) get argument types wrong in two ways: a JSON
string where the tool wants an object, list, number or boolean, and an object where the
tool wants a string (ChatOllama parses any argument string that looks like JSON, so file
content ``'{"a": 1}'`` arrives as a dict). ``coerce_args`` puts each value back to the
type its JSON schema declares; it is the only place this rule lives. The agent's
``normalize_args`` (aliases, wrapper keys) ends with it, and ``normalize_tool_calls``
applies it to the calls of any other tools. A call to a tool that was not offered, or
with arguments that are not an object, moves to ``invalid_tool_calls`` with the reason.
A reply whose whole content is calls written as text (``textcalls``: bare or fenced
JSON, ``<tool_call>`` blocks, Llama 3.2's ``{"type": "function", ...}``) gets them as
native calls here, so they run like any other. Lone surrogates in a call (a JSON
``"\\ud800"`` escape) are written out here (``bytesafe.escape``): every tool call from a
model enters through this function.

Which string parameters hold free text is the caller's to say (``text_fields``): an
object or list given for one of those becomes its JSON text; given for any other string
(a path, a command), it stays as it came, and a JSON list or object written as a string
there is parsed back, so validation refuses it instead of the value being used as text.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from soothe.engine.bytesafe import escape, escape_in

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage

__all__ = ["coerce_args", "normalize_tool_calls", "tool_parameters"]

log = logging.getLogger(__name__)


def tool_parameters(tools: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Tool name -> JSON schema of its parameters."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        spec = convert_to_openai_tool(tool)
        fn = spec.get("function", {})
        out[fn.get("name", "")] = fn.get("parameters") or {}
    return out


def _types(node: dict[str, Any]) -> set[str]:
    kinds: set[str] = set()
    kind = node.get("type")
    if isinstance(kind, str):
        kinds.add(kind)
    elif isinstance(kind, list):
        kinds.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf"):
        for option in node.get(key, []):
            if isinstance(option, dict):
                kinds |= _types(option)
    return kinds


def _loads(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _coerce(value: Any, node: dict[str, Any], *, text: bool) -> Any:
    kinds = _types(node) - {"null"}
    if not kinds:
        return value
    if kinds == {"string"}:
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False) if text else value
        if not text and isinstance(value, str) and value.lstrip().startswith(("[", "{")):
            parsed = _loads(value)
            return parsed if isinstance(parsed, dict | list) else value
        return value
    if isinstance(value, str) and kinds & {"object", "array"} and "string" not in kinds:
        parsed = _loads(value)
        if (isinstance(parsed, dict) and "object" in kinds) or (
            isinstance(parsed, list) and "array" in kinds
        ):
            return parsed
        return value
    if isinstance(value, str) and kinds <= {"integer", "number"}:
        try:
            number = float(value.strip())
        except ValueError:
            return value
        if "integer" in kinds and number.is_integer():
            return int(number)
        return number if "number" in kinds else value
    if isinstance(value, str) and kinds == {"boolean"} and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if isinstance(value, dict) and "object" in kinds and "properties" in node:
        return coerce_args(value, node)
    return value


def coerce_args(
    args: dict[str, Any],
    parameters: dict[str, Any],
    *,
    text_fields: Collection[str] | None = None,
) -> dict[str, Any]:
    """``args`` with each value put back to the type its parameter declares.

    ``text_fields`` names the string parameters that hold free text (file content);
    ``None`` means every string parameter does.
    """
    props = parameters.get("properties") or {}
    return {
        key: _coerce(value, props[key], text=text_fields is None or key in text_fields)
        if isinstance(props.get(key), dict)
        else value
        for key, value in args.items()
    }


def _text_calls(message: AIMessage, params: dict[str, dict[str, Any]]) -> AIMessage:
    """``message`` with the tool calls written as its text made native (textcalls.py),
    their text taken out of the content; unchanged when the text is not calls."""
    from langchain_core.messages.tool import tool_call

    from soothe.engine.llm.textcalls import TEXT_CALLS_KEY, parse_text_calls

    content = message.text
    meta = message.response_metadata or {}
    cut = (meta.get("done_reason") or meta.get("finish_reason")) == "length"
    found = parse_text_calls(content, params, cut=cut)
    if found is None:
        return message
    calls, rest = found
    log.info("%d tool call(s) written as text: %s", len(calls), ", ".join(c.name for c in calls))
    extra = {**message.additional_kwargs, TEXT_CALLS_KEY: [c.id for c in calls]}
    return message.model_copy(
        update={
            "content": rest,
            "tool_calls": [tool_call(name=c.name, args=c.args, id=c.id) for c in calls],
            "additional_kwargs": extra,
        }
    )


def normalize_tool_calls(
    message: AIMessage, tools: Sequence[Any] | None, *, coerce: bool = True
) -> AIMessage:
    """A copy of ``message`` whose ``tool_calls`` are parsed dicts fit for the tools.

    A reply with no native call whose content is one or more calls written as text
    (the shapes and the strict rule of ``textcalls``) gets them as its ``tool_calls``,
    their text taken out of the content: they then run as native calls.

    ``coerce=False`` leaves the argument values as they came, for a caller that runs
    ``coerce_args`` itself after its own renaming (the agent's ``normalize_args``).
    """
    from langchain_core.messages.tool import invalid_tool_call, tool_call

    if not message.tool_calls and not message.invalid_tool_calls:
        if not tools or "{" not in message.text:
            return message
        message = _text_calls(message, tool_parameters(tools))
        if not message.tool_calls:
            return message
    params = tool_parameters(tools) if tools else None
    good = []
    # A lone surrogate (valid JSON, not Unicode) is written out here, where calls enter,
    # so no event, checkpoint, store or file name downstream ever holds one (bytesafe).
    bad = [escape_in(tc) for tc in message.invalid_tool_calls]
    for tc in message.tool_calls:
        call_id = escape(tc.get("id") or f"call_{uuid.uuid4().hex[:12]}")
        name = escape(tc.get("name") or "")
        args: Any = tc.get("args")
        if isinstance(args, str):
            with contextlib.suppress(ValueError):
                args = json.loads(args)
        args = escape_in(args)
        if not isinstance(args, dict):
            bad.append(
                invalid_tool_call(
                    name=name,
                    args=json.dumps(args, default=str),
                    id=call_id,
                    error="the arguments are not a JSON object",
                )
            )
            continue
        if params is not None and name not in params:
            offered = ", ".join(sorted(params)) or "none"
            bad.append(
                invalid_tool_call(
                    name=name,
                    args=json.dumps(args, default=str),
                    id=call_id,
                    error=f"unknown tool '{name}' (offered: {offered})",
                )
            )
            continue
        if params is not None and coerce:
            args = coerce_args(args, params[name])
        good.append(tool_call(name=name, args=args, id=call_id))
    return message.model_copy(update={"tool_calls": good, "invalid_tool_calls": bad})
