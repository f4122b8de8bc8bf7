"""Events on the bus and ``engine.on(...)`` callbacks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from soothe.engine.context import CALLBACK_NAMES, ContextEngine, StepSpec
from soothe.engine.events import EventBase, GoalStatusChanged, parse_event


async def test_every_goal_event_carries_its_ids(
    engine: ContextEngine, events: list[EventBase]
) -> None:
    goal = await engine.create_goal("x", thread_id="thread-9", priority=70)
    await engine.activate_goal(goal.id, loop_id="loop-3")
    await engine.set_priority(goal.id, 20)
    await engine.complete_goal(goal.id, findings="found")
    other = await engine.create_goal("y", thread_id="thread-9")
    await engine.cancel_goal(other.id, "not needed")
    await engine.remove_goal(other.id)
    types = [e.type for e in events]
    assert types == [
        "goal.created",
        "goal.status_changed",
        "goal.updated",
        "goal.status_changed",
        "goal.created",
        "goal.status_changed",
        "goal.removed",
    ]
    assert all(e.thread_id == "thread-9" for e in events)
    assert [e.loop_id for e in events[:4]] == [None, *["loop-3"] * 3]
    assert events[2].priority == 20
    assert (events[3].to_status, events[3].findings) == ("completed", "found")
    assert (events[5].to_status, events[5].reason) == ("cancelled", "not needed")
    for event in events:  # everything published survives the wire format
        assert parse_event(event.model_dump_json()) == event


async def test_callbacks_sync_and_async(engine: ContextEngine, recorder: Any) -> None:
    assert {"goal_created", "goal_unblocked", "step_skipped"} <= CALLBACK_NAMES
    seen: dict[str, Any] = {name: recorder() for name in CALLBACK_NAMES}
    for name, rec in seen.items():
        engine.on(name, rec)
    async_calls: list[str] = []

    async def on_completed(goal_id: str) -> None:
        await asyncio.sleep(0)
        async_calls.append(goal_id)

    engine.on("goal_completed", on_completed)
    g = await engine.create_goal("g")
    await engine.block_goal(g.id)
    await engine.unblock_goal(g.id)
    await engine.suspend_goal(g.id)
    await engine.resume_goal(g.id)
    await engine.activate_goal(g.id)
    await engine.set_plan(
        g.id,
        [StepSpec(id="A", description="a"), StepSpec(id="B", description="b", dependencies=["A"])],
        1,
    )
    await engine.start_step(g.id, "A")
    await engine.fail_step(g.id, "A", "x")
    await engine.complete_goal(g.id)
    h = await engine.create_goal("h")
    await engine.activate_goal(h.id)
    await engine.fail_goal(h.id, "retry me")
    await engine.cancel_goal(h.id)
    got = {name: rec.calls for name, rec in seen.items() if rec.calls}
    assert got == {
        "goal_created": [(g.id,), (h.id,)],
        "goal_blocked": [(g.id,)],
        "goal_unblocked": [(g.id,)],
        "goal_suspended": [(g.id, "")],
        "goal_resumed": [(g.id,)],
        "goal_activated": [(g.id,), (h.id,)],
        "step_started": [(g.id, "A")],
        "step_failed": [(g.id, "A")],
        "step_skipped": [(g.id, "B")],
        "goal_completed": [(g.id,)],
        "goal_failed": [(h.id, "retry me")],
        "goal_cancelled": [(h.id, "")],
    }
    assert async_calls == [g.id]


async def test_cancel_reason_reaches_event_and_callbacks(
    engine: ContextEngine, events: list[EventBase]
) -> None:
    """The seed calls ``goal_cancelled(goal_id, reason)``; a one-argument callback still
    gets the goal id alone. Sub-goals cancelled with it name the parent and the reason."""
    with_reason: list[tuple[str, str]] = []
    ids_only: list[str] = []
    suspended: list[tuple[str, str]] = []

    async def on_cancel(goal_id: str, reason: str) -> None:
        with_reason.append((goal_id, reason))

    engine.on("goal_cancelled", on_cancel)
    engine.on("goal_cancelled", ids_only.append)
    engine.on("goal_suspended", lambda goal_id, reason: suspended.append((goal_id, reason)))
    root = await engine.create_goal("root")
    child = await engine.create_goal("child", parent_id=root.id)
    other = await engine.create_goal("other")
    await engine.suspend_goal(other.id, "budget: tokens 200k")
    await engine.cancel_goal(root.id, reason="user changed their mind")
    moves = [(e.goal_id, e.reason) for e in events if isinstance(e, GoalStatusChanged)]
    assert moves[-2:] == [
        (child.id, f"parent {root.id} cancelled: user changed their mind"),
        (root.id, "user changed their mind"),
    ]
    assert with_reason == moves[-2:]
    assert ids_only == [child.id, root.id]
    assert suspended == [(other.id, "budget: tokens 200k")]


async def test_callback_may_call_the_engine_and_errors_are_contained(
    engine: ContextEngine, caplog: pytest.LogCaptureFixture
) -> None:
    follow_ups: list[str] = []

    async def chain(goal_id: str) -> None:
        follow = await engine.create_goal(f"follow up of {goal_id}")
        follow_ups.append(follow.id)

    def broken(goal_id: str) -> None:
        raise RuntimeError("observer bug")

    engine.on("goal_completed", broken)
    remove = engine.on("goal_completed", chain)
    first = await engine.create_goal("first")
    done = await engine.complete_goal(first.id)
    assert done.status == "completed"
    assert follow_ups == ["G2"]
    assert "observer bug" in caplog.text
    remove()
    await engine.complete_goal("G2")
    assert follow_ups == ["G2"]
    with pytest.raises(ValueError, match="unknown callback"):
        engine.on("goal_exploded", print)


async def test_bus_topics_reach_goal_subscribers(engine: ContextEngine) -> None:
    goal = await engine.create_goal("x", thread_id="T")
    sub = engine.bus.subscribe(f"goal:{goal.id}")
    thread_sub = engine.bus.subscribe("thread:T")
    await engine.activate_goal(goal.id, loop_id="L")
    await engine.add_evidence(goal.id, kind="tool", summary="s")
    assert [e.type for e in sub.drain()] == [
        "goal.status_changed",
        "evidence.added",
    ]
    assert len(thread_sub.drain()) == 2


async def test_callbacks_follow_the_bus_events(engine: ContextEngine, recorder: Any) -> None:
    names = ("goal_sent_back", "goal_failed", "goal_resumed", "goal_validated")
    seen = {name: recorder() for name in names}
    for name, rec in seen.items():
        engine.on(name, rec)
    listeners_before = len(engine.bus._listeners)
    remove = engine.on("goal_completed", recorder())
    assert len(engine.bus._listeners) == listeners_before + 1  # a bus listener, no other list
    remove()
    assert len(engine.bus._listeners) == listeners_before
    goal = await engine.create_goal("g")
    await engine.activate_goal(goal.id)
    await engine.send_back_goal(goal.id, "not convincing")
    await engine.activate_goal(goal.id)
    await engine.validate_goal(goal.id)
    await engine.fail_goal(goal.id, "verification failed")  # validated -> failed -> pending
    got = {name: rec.calls for name, rec in seen.items() if rec.calls}
    assert got == {
        "goal_sent_back": [(goal.id,)],
        "goal_validated": [(goal.id,)],
        "goal_failed": [(goal.id, "verification failed")],
        "goal_resumed": [(goal.id,)],
    }


async def test_off_unregisters_like_the_seed(engine: ContextEngine) -> None:
    seen: list[str] = []
    listeners = len(engine.bus._listeners)
    engine.on("goal_created", seen.append)
    engine.on("goal_created", seen.append)  # twice: off removes both
    await engine.create_goal("first")
    engine.off("goal_created", seen.append)
    engine.off("goal_created", print)  # never registered: ignored
    await engine.create_goal("second")
    assert seen == ["G1", "G1"]
    assert len(engine.bus._listeners) == listeners
