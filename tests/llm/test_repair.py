"""repair_json: near-miss JSON from small models turned into one valid object."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soothe.engine.llm.repair import repair, repair_json


def parsed(text: str) -> object:
    out = repair_json(text)
    assert out is not None, f"no repair for {text!r}"
    return json.loads(out)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Here is the plan:\n```json\n{"a": [1, 2]}\n```\nAnything else?', {"a": [1, 2]}),
        ('Sure! The answer is {"a": "x"} - hope that helps {really}', {"a": "x"}),
        ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
        ("{'a': 'x', 'b': ['y', 'z']}", {"a": "x", "b": ["y", "z"]}),
        (
            "{'note': 'don't stop', 'ok': True, 'none': None}",
            {"note": "don't stop", "ok": True, "none": None},
        ),
        ('{"a": "say \\"hi\\"", "b": \'it "quoted"\'}', {"a": 'say "hi"', "b": 'it "quoted"'}),
        ('{"text": "line one\nline two"}', {"text": "line one\nline two"}),
        ('{a: 1, b: "x"}', {"a": 1, "b": "x"}),
        ('"{\\"a\\": 1}"', {"a": 1}),
        ('{"a": 1} // done', {"a": 1}),
    ],
)
def test_near_misses_are_repaired(raw: str, expected: object) -> None:
    assert parsed(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1, "b": [1, 2', {"a": 1, "b": [1, 2]}),
        (
            '{"steps": [{"id": "1"}, {"id": "2", "d": "half',
            {"steps": [{"id": "1"}, {"id": "2", "d": "half"}]},
        ),
        ('{"a": 1, "b', {"a": 1}),
        ('{"a": 1, "b": ', {"a": 1}),
        ('{"a": 1, "b": tru', {"a": 1}),
        ('{"a": 12', {"a": 12}),
        ('```json\n{"a": {"b": [', {"a": {"b": []}}),
    ],
)
def test_truncated_objects_are_closed(raw: str, expected: object) -> None:
    result = repair(raw)
    assert result is not None
    assert json.loads(result.text) == expected
    assert result.closed


def test_complete_object_is_not_marked_closed() -> None:
    result = repair('prose {"a": 1} prose')
    assert result is not None
    assert not result.closed


@pytest.mark.parametrize("raw", ["", "   ", "no json here", "[1, 2, 3]", "{=}", '"just a string"'])
def test_hopeless_input_gives_none(raw: str) -> None:
    assert repair_json(raw) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)


@settings(max_examples=120, deadline=None)
@given(objects, st.sampled_from(["plain", "fenced", "prose", "indented"]))
def test_valid_objects_survive_any_wrapping(obj: dict, wrap: str) -> None:
    text = json.dumps(obj, indent=2 if wrap == "indented" else None)
    if wrap == "fenced":
        text = f"```json\n{text}\n```"
    elif wrap == "prose":
        text = f"Here it is:\n{text}\nLet me know."
    assert parsed(text) == obj


@settings(max_examples=120, deadline=None)
@given(objects, st.integers(min_value=1, max_value=400))
def test_any_prefix_is_closed_or_refused(obj: dict, cut: int) -> None:
    text = json.dumps(obj)
    prefix = text[: min(cut, len(text))]
    out = repair_json(prefix)
    if out is not None:
        assert isinstance(json.loads(out), dict)


def test_a_fence_inside_a_string_does_not_cut_the_object_short() -> None:
    """Hypothesis found it: the fence's body ended at the ``` inside the key, and that
    prefix, closed, came back as {} before the whole object was tried."""
    assert parsed('```json\n{"```": null}\n```') == {"```": None}


@pytest.mark.parametrize("key", ["```", "a```", " ```"])
def test_a_fence_inside_a_key_is_part_of_the_object(key: str) -> None:
    """Hypothesis found ``{"```": {}}`` in prose read as {}: the ``` was taken for a fence
    opening and its "body" ``{}}`` read whole."""
    obj = {key: {}}
    assert parsed(f"Here it is:\n{json.dumps(obj)}\nLet me know.") == obj
    assert parsed(f"```json\n{json.dumps(obj)}\n```") == obj


def test_a_fence_after_an_object_in_prose_still_counts() -> None:
    assert parsed('I had {"a": 1} before; the answer:\n```json\n{"b": 2}\n```') == {"b": 2}
