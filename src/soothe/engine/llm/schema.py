"""JSON schemas sent to models: refs inlined, every string and list bounded.

A string without ``maxLength`` (or a list without ``maxItems``) lets a small model repeat
itself until the token limit and return broken JSON, so ``bounded_json_schema`` refuses
such a pydantic model outright: the mistake shows up in the first test that uses it.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

__all__ = ["UnboundedSchemaError", "bounded_json_schema", "schema_problems"]


class UnboundedSchemaError(ValueError):
    """A schema meant for a model has an unbounded string, list or map."""


def bounded_json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema to send for ``schema``; raises UnboundedSchemaError if unbounded."""
    return copy.deepcopy(_bounded(schema))


@lru_cache(maxsize=256)
def _bounded(schema: type[BaseModel]) -> dict[str, Any]:
    raw = schema.model_json_schema()
    defs = raw.pop("$defs", {})
    inlined = _inline(raw, defs, ())
    problems = schema_problems(inlined, schema.__name__)
    if problems:
        shown = "; ".join(problems[:5])
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        raise UnboundedSchemaError(f"{schema.__name__} is not bounded for a model: {shown}{more}")
    return inlined


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise UnboundedSchemaError(f"recursive schema through {name}: not allowed for a model")
        target = _inline(defs[name], defs, (*seen, name))
        siblings = {k: _inline(v, defs, seen) for k, v in node.items() if k != "$ref"}
        return {**target, **siblings}
    return {key: _inline(value, defs, seen) for key, value in node.items()}


def schema_problems(node: Any, path: str) -> list[str]:
    """Every unbounded string, array or open map in an inlined JSON schema."""
    problems: list[str] = []
    if isinstance(node, list):
        for item in node:
            problems += schema_problems(item, path)
        return problems
    if not isinstance(node, dict):
        return problems
    if "enum" in node or "const" in node:
        return problems
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "string" in kinds and "maxLength" not in node:
        problems.append(f"{path}: string without max_length")
    if "array" in kinds:
        if "maxItems" not in node:
            problems.append(f"{path}: list without max_length")
        items = node.get("items")
        if items is not None:
            problems += schema_problems(items, f"{path}[]")
        for i, item in enumerate(node.get("prefixItems", [])):
            problems += schema_problems(item, f"{path}[{i}]")
    if "object" in kinds or "properties" in node:
        for name, sub in node.get("properties", {}).items():
            problems += schema_problems(sub, f"{path}.{name}")
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            if "maxProperties" not in node:
                problems.append(f"{path}: open map without max_length")
            problems += schema_problems(extra, f"{path}{{}}")
        elif extra is True:
            problems.append(f"{path}: open map (additionalProperties) not allowed")
    for key in ("anyOf", "oneOf", "allOf"):
        if key in node:
            problems += schema_problems(node[key], path)
    return problems
