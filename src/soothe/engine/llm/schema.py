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
    from langchain_core.utils.json_schema import dereference_refs

    raw = schema.model_json_schema()
    defs = raw.get("$defs", {})
    for name in defs:
        if _reaches(name, name, defs, set()):
            raise UnboundedSchemaError(f"recursive schema through {name}: not allowed for a model")
    inlined = dereference_refs(raw)
    inlined.pop("$defs", None)
    problems = schema_problems(inlined, schema.__name__)
    if problems:
        shown = "; ".join(problems[:5])
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        raise UnboundedSchemaError(f"{schema.__name__} is not bounded for a model: {shown}{more}")
    return inlined


def _refs(node: Any) -> set[str]:
    """The ``$defs`` names a schema node refers to."""
    if isinstance(node, list):
        return set().union(*(_refs(item) for item in node))
    if not isinstance(node, dict):
        return set()
    ref = node.get("$ref")
    found = {ref.removeprefix("#/$defs/")} if isinstance(ref, str) else set()
    return found.union(*(_refs(value) for key, value in node.items() if key != "$ref"))


def _reaches(start: str, target: str, defs: dict[str, Any], seen: set[str]) -> bool:
    """Whether ``defs[start]`` refers (through any chain) to ``target``.

    ``dereference_refs`` cuts a cycle silently (an empty schema where the recursion
    was); a model must never get such a schema, so a recursive one is refused first."""
    for name in _refs(defs.get(start, {})):
        if name == target:
            return True
        if name not in seen:
            seen.add(name)
            if _reaches(name, target, defs, seen):
                return True
    return False


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
