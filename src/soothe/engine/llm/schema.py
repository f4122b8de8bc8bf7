"""JSON schemas sent to models: refs inlined, every string and list bounded, no bound
a local server's grammar compiler refuses.

A string without ``maxLength`` (or a list without ``maxItems``) lets a small model repeat
itself until the token limit and return broken JSON, so ``bounded_json_schema`` refuses
such a pydantic model outright: the mistake shows up in the first test that uses it.

Ollama compiles a ``format`` schema into a llama.cpp grammar and rejects the whole
request when a bound is ~2,000 or more ("failed to parse grammar"), so a structured
schema with a bound >= ``GRAMMAR_BOUND_LIMIT`` is refused here too. Tool parameters are
validated by their pydantic models, not by a grammar: ``sendable_tool`` drops their
large bounds (file content, long commands) from what is sent, and validation keeps them.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

__all__ = [
    "GRAMMAR_BOUND_LIMIT",
    "UnboundedSchemaError",
    "bounded_json_schema",
    "grammar_problems",
    "max_bound",
    "schema_problems",
    "sendable_tool",
]

GRAMMAR_BOUND_LIMIT = 1000
"""No ``maxLength`` / ``maxItems`` / ``maxProperties`` in a schema we send reaches this
(llama.cpp in Ollama refuses >= ~2,000, depending on the item type: keep well below)."""

_BOUND_KEYS = ("maxLength", "maxItems", "maxProperties", "minLength", "minItems")


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
    problems += grammar_problems(inlined, schema.__name__)
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


def _walk_bounds(node: Any, path: str) -> list[tuple[str, str, int]]:
    """(path, keyword, value) of every length/count bound in a JSON schema."""
    found: list[tuple[str, str, int]] = []
    if isinstance(node, list):
        for i, item in enumerate(node):
            found += _walk_bounds(item, f"{path}[{i}]")
        return found
    if not isinstance(node, dict):
        return found
    for key in _BOUND_KEYS:
        value = node.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            found.append((path, key, value))
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            for name, sub in value.items():
                found += _walk_bounds(sub, f"{path}.{name}")
        elif isinstance(value, dict | list) and key not in ("enum", "const", "default"):
            found += _walk_bounds(value, f"{path}.{key}" if key != "items" else f"{path}[]")
    return found


def grammar_problems(node: Any, path: str) -> list[str]:
    """Every bound a local server's grammar compiler may refuse (>= GRAMMAR_BOUND_LIMIT)."""
    return [
        f"{where}: {key} {value} is too large for a local server's grammar "
        f"(keep it below {GRAMMAR_BOUND_LIMIT}; bound long text by validation instead)"
        for where, key, value in _walk_bounds(node, path)
        if value >= GRAMMAR_BOUND_LIMIT
    ]


def max_bound(node: Any) -> int:
    """The largest length/count bound anywhere in a JSON schema (0 when none)."""
    return max((value for _, _, value in _walk_bounds(node, "")), default=0)


def _without_large_bounds(node: Any) -> Any:
    if isinstance(node, list):
        return [_without_large_bounds(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _BOUND_KEYS and isinstance(value, int) and value >= GRAMMAR_BOUND_LIMIT:
            continue
        if key in ("enum", "const", "default"):
            out[key] = value
        else:
            out[key] = _without_large_bounds(value)
    return out


def sendable_tool(spec: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-style tool spec as it may go to a model: bounds >= GRAMMAR_BOUND_LIMIT
    removed from its parameters (their pydantic model still enforces them)."""
    fn = spec.get("function")
    if not isinstance(fn, dict) or not grammar_problems(fn.get("parameters") or {}, ""):
        return spec
    params = _without_large_bounds(fn.get("parameters") or {})
    return {**spec, "function": {**fn, "parameters": params}}
