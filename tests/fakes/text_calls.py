"""Tool calls written as text, as models that lack a tool template write them.

`text_call(shape, name, args)` is the reply content such a model sends instead of a
native `tool_calls` entry (script it as the reply's text). The four shapes seen on
real local models (../shared/NOTES.md, "Tool calls written as text"):

- ``bare``: ``{"name": "read_file", "arguments": {"path": "a.txt"}}``
- ``fenced``: the same object in a Markdown ```json fence
- ``tool_call``: Qwen/Hermes ``<tool_call>{...}</tool_call>``
- ``llama``: Llama 3.2 ``{"type": "function", "name": ..., "parameters": {...}}``
"""

from __future__ import annotations

import json
from typing import Any, Literal

TextCallShape = Literal["bare", "fenced", "tool_call", "llama"]
TEXT_CALL_SHAPES: tuple[TextCallShape, ...] = ("bare", "fenced", "tool_call", "llama")

__all__ = ["TEXT_CALL_SHAPES", "TextCallShape", "text_call"]


def text_call(shape: TextCallShape, name: str, args: dict[str, Any]) -> str:
    """The content a model writes for a call of `name` with `args` in `shape`."""
    call = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    match shape:
        case "bare":
            return call
        case "fenced":
            return f"```json\n{call}\n```"
        case "tool_call":
            return f"<tool_call>\n{call}\n</tool_call>"
        case "llama":
            return json.dumps(
                {"type": "function", "name": name, "parameters": args}, ensure_ascii=False
            )
    msg = f"unknown text call shape {shape!r}; one of {TEXT_CALL_SHAPES}"
    raise ValueError(msg)
