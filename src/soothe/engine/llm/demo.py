"""The ``demo`` provider: an in-process scripted model that needs no server.

Plain chat gets a short answer that says it comes from the demo model. A structured
request (a JSON schema bound as ``format``) gets an object built from the schema, or
from a handler registered for the schema's title with ``register_demo_responder``.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from soothe.engine.text import clip

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from soothe.engine.llm.scripted import ScriptedChatModel

__all__ = [
    "DEMO_NAME",
    "build_demo_model",
    "demo_answer",
    "demo_responder",
    "instance_from_schema",
    "register_demo_chat",
    "register_demo_responder",
    "unregister_demo_responder",
]

DEMO_NAME = "demo model"

# (messages, json schema) -> a dict, a pydantic instance, a JSON string or a ScriptedReply
DemoHandler = Callable[[list["BaseMessage"], dict[str, Any]], Any]

# (messages, call info) -> a script item, or None for the built-in answer
DemoChat = Callable[[list["BaseMessage"], dict[str, Any]], Any]

_HANDLERS: dict[str, DemoHandler] = {}
_CHAT: list[DemoChat] = []
_HANDLERS_LOCK = threading.Lock()


def register_demo_responder(schema_title: str, fn: DemoHandler) -> None:
    """Answer structured requests whose schema ``title`` is ``schema_title`` with ``fn``.

    The title of a pydantic model's schema is its class name unless configured.
    """
    with _HANDLERS_LOCK:
        _HANDLERS[schema_title] = fn


def unregister_demo_responder(schema_title: str) -> None:
    with _HANDLERS_LOCK:
        _HANDLERS.pop(schema_title, None)


def register_demo_chat(fn: DemoChat | None) -> None:
    """Answer plain (non-structured) demo calls with ``fn``; None restores the default.

    ``fn`` gets the call info of the scripted model (``tools``, ``tool_names``...) and
    may return any script item (text, a ``ScriptedReply`` with tool calls) or None.
    """
    with _HANDLERS_LOCK:
        _CHAT.clear()
        if fn is not None:
            _CHAT.append(fn)


def build_demo_model(*, chunk_delay: float = 0.0) -> ScriptedChatModel:
    """A scripted model answering every call through ``demo_responder``.

    ``chunk_delay`` paces the streamed words, so the demo looks like a live model.
    """
    from soothe.engine.llm.scripted import ScriptedChatModel, ScriptedReply

    def respond(messages: list[BaseMessage], info: dict[str, Any]) -> Any:
        item = demo_responder(messages, info)
        if isinstance(item, str) and chunk_delay:
            return ScriptedReply(text=item, chunk_delay=chunk_delay)
        return item

    # the last call only: a session's worth of calls would keep every prompt it sent
    return ScriptedChatModel(responder=respond, model_name=DEMO_NAME, keep_calls=1)


def demo_responder(messages: list[BaseMessage], info: dict[str, Any]) -> Any:
    schema = _requested_schema(info.get("kwargs") or {})
    if schema is not None:
        title = str(schema.get("title", ""))
        with _HANDLERS_LOCK:
            handler = _HANDLERS.get(title)
        if handler is not None:
            return handler(messages, schema)
        return instance_from_schema(schema)
    with _HANDLERS_LOCK:
        chat = _CHAT[0] if _CHAT else None
    if chat is not None:
        item = chat(messages, info)
        if item is not None:
            return item
    return demo_answer(messages)


def _requested_schema(kwargs: dict[str, Any]) -> dict[str, Any] | None:
    fmt = kwargs.get("format")
    if isinstance(fmt, dict):
        return fmt
    response_format = kwargs.get("response_format")
    if isinstance(response_format, dict):
        inner = response_format.get("json_schema", {})
        if isinstance(inner, dict) and isinstance(inner.get("schema"), dict):
            return inner["schema"]
    return None


def demo_answer(messages: list[BaseMessage]) -> str:
    asked = ""
    for message in reversed(messages):
        if message.type == "human":
            asked = message.text
            break
    asked = clip(asked, 120)
    request = f'You asked: "{asked}". ' if asked else ""
    return (
        f"This is the demo model: no real model is connected. {request}"
        "Set model.provider to ollama or openai (see `soothe doctor`) for real answers."
    )


# --- a valid instance for a JSON schema -----------------------------------------------------


def instance_from_schema(schema: dict[str, Any]) -> Any:
    """A small valid value for ``schema`` (refs resolved against its ``$defs``)."""
    return _value(schema, schema.get("$defs", {}), "value", 0)


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"), {})
        return {**_resolve(target, defs), **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _value(node: Any, defs: dict[str, Any], name: str, depth: int) -> Any:
    if not isinstance(node, dict) or depth > 12:
        return None
    node = _resolve(node, defs)
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    if "default" in node and _plain(node["default"]):
        return node["default"]
    for key in ("anyOf", "oneOf"):
        options = [o for o in node.get(key, []) if _resolve(o, defs).get("type") != "null"]
        if options:
            return _value(options[0], defs, name, depth + 1)
        if key in node:
            return None
    if "allOf" in node:
        merged: dict[str, Any] = {}
        for part in node["allOf"]:
            merged.update(_resolve(part, defs))
        return _value(merged, defs, name, depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and "properties" in node:
        kind = "object"
    if kind == "object":
        return {
            prop: _value(sub, defs, prop, depth + 1)
            for prop, sub in node.get("properties", {}).items()
        }
    if kind == "array":
        lo = int(node.get("minItems", 1))
        hi = node.get("maxItems")
        count = lo if hi is None else min(lo, int(hi))
        items = node.get("items", {})
        return [_value(items, defs, name, depth + 1) for _ in range(count)]
    if kind == "string":
        return _string(node, name)
    if kind in ("integer", "number"):
        return _number(node, integer=kind == "integer")
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return None


def _plain(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _string(node: dict[str, Any], name: str) -> str:
    text = f"demo {name.replace('_', ' ')}"
    hi = node.get("maxLength")
    lo = int(node.get("minLength", 0))
    if len(text) < lo:
        text = text + "." * (lo - len(text))
    if hi is not None:
        text = text[: int(hi)]
    return text


def _number(node: dict[str, Any], *, integer: bool) -> float | int:
    lo = node.get("minimum")
    if lo is None and "exclusiveMinimum" in node:
        lo = node["exclusiveMinimum"] + (1 if integer else 0.5)
    hi = node.get("maximum")
    if hi is None and "exclusiveMaximum" in node:
        hi = node["exclusiveMaximum"] - (1 if integer else 0.5)
    value: float = 1
    if lo is not None:
        value = max(value, lo)
    if hi is not None:
        value = min(value, hi)
    if not integer:
        return float(value)
    whole = math.ceil(value)
    if hi is not None and whole > hi:
        whole = math.floor(hi)
    return whole
