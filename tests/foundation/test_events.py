"""The event vocabulary: every type survives JSON, seq only grows, unknown types are refused."""

from __future__ import annotations

import inspect
import json
import threading
import types
import typing
from itertools import pairwise
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ValidationError

from soothe.engine import events as ev


def union_members() -> list[type[ev.EventBase]]:
    """The classes of the ``Event`` union, so a newly added type is covered automatically."""
    union = typing.get_args(ev.Event)[0]
    return list(typing.get_args(union))


EVENT_TYPES = union_members()


def _all_subclasses(cls: type) -> set[type]:
    out: set[type] = set()
    for sub in cls.__subclasses__():
        out.add(sub)
        out |= _all_subclasses(sub)
    return out


def sample_value(annotation: Any, name: str, default: Any = None) -> Any:
    """A value for ``annotation`` that differs from ``default`` where possible."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        others = [a for a in args if a != default]
        return (others or list(args))[-1]
    if origin in (typing.Union, types.UnionType):
        real = [a for a in args if a is not type(None)]
        return sample_value(real[0], name)
    if origin is list:
        return [sample_value(args[0], f"{name}0"), sample_value(args[0], f"{name}1")]
    if origin is tuple:  # tuple[str, ...] (a criterion's evidence ids)
        return (sample_value(args[0], f"{name}0"), sample_value(args[0], f"{name}1"))
    if origin is dict:
        return {"path": f"{name}/a b.txt", "n": [1, 2.5, None, True, {"deep": "é"}]}
    if annotation is Any:
        return {"any": [name, 3]}
    if annotation is bool:
        return not default if isinstance(default, bool) else True
    if annotation is int:
        return 41 if default != 41 else 42
    if annotation is float:
        return 0.1 + 12.25
    if annotation is str:
        return f'{name} «quoted" \\ line\nbreak ✓'
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return build(annotation)
    raise AssertionError(f"no sample for {name}: {annotation!r}; teach sample_value about it")


def build(cls: type[BaseModel]) -> Any:
    """An instance with every field set to a non-default value (``type`` stays its literal)."""
    values: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        if name == "type":
            continue
        default = None if field.is_required() else field.get_default(call_default_factory=True)
        values[name] = sample_value(field.annotation, name, default)
    return cls(**values)


def minimal(cls: type[BaseModel]) -> Any:
    """An instance with only the required fields set."""
    values = {
        name: sample_value(field.annotation, name)
        for name, field in cls.model_fields.items()
        if field.is_required()
    }
    return cls(**values)


def test_union_is_discovered_and_nonempty() -> None:
    # one goal.status_changed per move, no per-status classes; step.suspended (issue 14)
    assert len(EVENT_TYPES) >= 30 and ev.StepSuspended in EVENT_TYPES
    assert ev.StepToken in EVENT_TYPES and ev.RunStarted in EVENT_TYPES


def test_every_event_class_in_the_module_is_in_the_union() -> None:
    defined = {
        cls
        for cls in _all_subclasses(ev.EventBase)
        if cls.__module__ == ev.__name__ and "type" in cls.model_fields
    }
    missing = sorted(c.__name__ for c in defined - set(EVENT_TYPES))
    assert not missing, f"event classes not in the Event union: {missing}"


def test_type_tags_are_unique() -> None:
    tags = [cls.model_fields["type"].default for cls in EVENT_TYPES]
    assert all(isinstance(t, str) and t for t in tags)
    assert len(tags) == len(set(tags))


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda c: c.__name__)
def test_round_trip_full(cls: type[ev.EventBase]) -> None:
    original = build(cls)
    original.thread_id, original.loop_id = "th-1", "lp-1"
    original.goal_id, original.step_id = "g-1", "KFA-01"
    for wire in (original.model_dump_json(), original.model_dump_json().encode()):
        parsed = ev.parse_event(wire)
        assert type(parsed) is cls
        assert parsed == original
    parsed = ev.parse_event(original.model_dump(mode="json"))
    assert type(parsed) is cls
    assert parsed == original


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda c: c.__name__)
def test_round_trip_minimal(cls: type[ev.EventBase]) -> None:
    original = minimal(cls)
    parsed = ev.parse_event(original.model_dump_json())
    assert type(parsed) is cls
    assert parsed == original
    assert parsed.seq == original.seq and parsed.ts == original.ts


def test_every_event_carries_the_id_fields() -> None:
    for cls in EVENT_TYPES:
        for name in ("seq", "ts", "thread_id", "loop_id", "goal_id", "step_id", "type"):
            assert name in cls.model_fields, f"{cls.__name__} lacks {name}"


def test_only_step_token_is_a_token() -> None:
    tokens = [cls for cls in EVENT_TYPES if minimal(cls).is_token]
    assert tokens == [ev.StepToken]


def test_seq_strictly_increasing() -> None:
    made = [minimal(EVENT_TYPES[i % len(EVENT_TYPES)]) for i in range(500)]
    seqs = [e.seq for e in made]
    assert all(a < b for a, b in pairwise(seqs))


def test_seq_unique_and_increasing_across_threads() -> None:
    per_thread: dict[int, list[int]] = {}

    def make(key: int) -> None:
        per_thread[key] = [ev.StepToken(text="x").seq for _ in range(2000)]

    threads = [threading.Thread(target=make, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    everything = [s for seqs in per_thread.values() for s in seqs]
    assert len(per_thread) == 4
    assert len(everything) == len(set(everything)) == 8000
    for seqs in per_thread.values():
        assert all(a < b for a, b in pairwise(seqs))


def test_parsing_keeps_seq_instead_of_renumbering() -> None:
    first = ev.RunStarted(text="hi")
    later = ev.RunStarted(text="hi")
    parsed = ev.parse_event(first.model_dump_json())
    assert parsed.seq == first.seq < later.seq


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "no.such.event", "text": "x"},
        {"text": "x"},
        {"type": "run.started"},
        {"type": "run.started", "text": "x", "surprise": 1},
        {"type": "goal.status_changed", "from_status": "active", "to_status": "exploded"},
        {"type": "step.token", "text": ["not", "a", "string"]},
    ],
    ids=["unknown-type", "no-type", "missing-field", "extra-field", "bad-enum", "bad-type"],
)
def test_invalid_payloads_are_rejected(payload: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ev.parse_event(payload)
    with pytest.raises(ValidationError):
        ev.parse_event(json.dumps(payload))


def test_unknown_type_error_names_the_tag() -> None:
    with pytest.raises(ValidationError) as info:
        ev.parse_event('{"type": "no.such.event"}')
    assert "no.such.event" in str(info.value)
