"""bounded_json_schema: what goes to a model is bounded and self-contained."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from soothe.engine.llm.schema import UnboundedSchemaError, bounded_json_schema

Short = Annotated[str, Field(max_length=40)]


class Step(BaseModel):
    id: str = Field(max_length=12)
    kind: Literal["action", "ask_user"] = "action"
    dependencies: list[Short] = Field(default_factory=list, max_length=8)
    note: str | None = Field(None, max_length=60)


class Plan(BaseModel):
    steps: list[Step] = Field(max_length=6)
    limits: dict[str, int] = Field(default_factory=dict, max_length=4)


def walk(node: object):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def test_bounded_schema_is_inlined_and_bounded() -> None:
    schema = bounded_json_schema(Plan)
    assert "$defs" not in schema
    assert not any("$ref" in node for node in walk(schema))
    step = schema["properties"]["steps"]["items"]
    assert step["properties"]["id"]["maxLength"] == 12
    assert schema["properties"]["steps"]["maxItems"] == 6
    for node in walk(schema):
        if node.get("type") == "string" and "enum" not in node:
            assert "maxLength" in node
        if node.get("type") == "array":
            assert "maxItems" in node


def test_returns_a_copy() -> None:
    first = bounded_json_schema(Plan)
    first["properties"].clear()
    assert bounded_json_schema(Plan)["properties"]


class Loose(BaseModel):
    title: str
    items: list[int]
    meta: dict[str, str]
    nested: Step
    maybe: str | None = None
    more: list[str] = []


def test_unbounded_fields_are_refused_with_their_paths() -> None:
    with pytest.raises(UnboundedSchemaError) as info:
        bounded_json_schema(Loose)
    message = str(info.value)
    assert "Loose.title: string without max_length" in message
    assert "Loose.items: list without max_length" in message
    assert "Loose.meta: open map without max_length" in message
    assert "(+" in message  # more than five problems are counted, not listed


class Node(BaseModel):
    name: str = Field(max_length=10)
    children: list[Node] = Field(default_factory=list, max_length=3)


def test_recursive_schema_is_refused() -> None:
    with pytest.raises(UnboundedSchemaError, match="recursive"):
        bounded_json_schema(Node)


# --- what we send is what we sent before (langchain's converters, our bounds) -------------

SENT = Path(__file__).with_name("sent_schemas.json")
"""The schemas as our own inliner / title stripper built them before ``dereference_refs``
and ``convert_to_openai_tool`` replaced them (written once from that code)."""


def test_tool_specs_are_the_ones_we_sent_before() -> None:
    from soothe.engine.agent.tools import tool_specs

    assert tool_specs() == json.loads(SENT.read_text())["tools"]


def test_a_ref_with_siblings_keeps_them_and_mutual_recursion_is_refused() -> None:
    class Inner(BaseModel):
        a: str = Field(max_length=3)

    class Outer(BaseModel):
        x: Inner = Field(description="the inner one")
        y: list[Inner] = Field(max_length=2)

    schema = bounded_json_schema(Outer)
    assert schema["properties"]["x"]["description"] == "the inner one"
    assert schema["properties"]["x"]["properties"]["a"]["maxLength"] == 3
    assert schema["properties"]["y"]["items"]["properties"]["a"]["maxLength"] == 3

    class Ping(BaseModel):
        pong: list[Pong] = Field(max_length=2)

    class Pong(BaseModel):
        ping: Ping | None = None

    Ping.model_rebuild()
    with pytest.raises(UnboundedSchemaError, match="recursive schema through"):
        bounded_json_schema(Ping)
