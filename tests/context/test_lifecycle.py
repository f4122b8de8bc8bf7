"""The goal lifecycle: the whole transition table, retries, resume, cancel cascade."""

from __future__ import annotations

import itertools
import types
from collections import deque

import pytest

from soothe.engine.context import (
    GOAL_TRANSITIONS,
    ContextEngine,
    GoalNode,
    GoalNotReady,
    IllegalTransition,
)
from soothe.engine.context.lifecycle import GOAL_STATES
from soothe.engine.events import EventBase, GoalStatusChanged

TABLE = {
    "pending": {"active", "completed", "failed", "suspended", "blocked", "cancelled"},
    "active": {
        "completed",
        "validated",
        "failed",
        "suspended",
        "blocked",
        "awaiting_clarification",
        "cancelled",
        "pending",
    },
    "failed": {"pending"},
    "suspended": {"pending", "completed", "failed", "cancelled"},
    "blocked": {"pending", "completed", "failed", "cancelled"},
    "awaiting_clarification": {"pending", "completed", "failed", "cancelled"},
    "validated": {"completed", "failed", "cancelled"},
    "cancelled": {"pending"},
    "completed": set(),
}

# How to bring a fresh (pending) goal into each state, through allowed moves only.
ROUTE = {
    "pending": [],
    "active": ["active"],
    "completed": ["completed"],
    "failed": ["failed"],
    "suspended": ["suspended"],
    "blocked": ["blocked"],
    "cancelled": ["cancelled"],
    "validated": ["active", "validated"],
    "awaiting_clarification": ["active", "awaiting_clarification"],
}


def test_table_matches_design() -> None:
    assert set(GOAL_STATES) == set(TABLE)
    assert {k: set(v) for k, v in GOAL_TRANSITIONS.items()} == TABLE


def test_every_state_is_reachable_from_pending() -> None:
    seen = {"pending"}
    queue = deque(["pending"])
    while queue:
        for nxt in GOAL_TRANSITIONS[queue.popleft()]:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    assert seen == set(GOAL_STATES)


async def _goal_in(engine: ContextEngine, state: str) -> GoalNode:
    goal = await engine.create_goal(f"goal in {state}")
    for step in ROUTE[state]:
        await engine._goals.transition(goal.id, step)  # type: ignore[arg-type]
    assert engine.get_goal(goal.id).status == state
    return engine.get_goal(goal.id)


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(GOAL_STATES, GOAL_STATES)))
async def test_transition_table(
    engine: ContextEngine, events: list[EventBase], src: str, dst: str
) -> None:
    goal = await _goal_in(engine, src)
    before = len(events)
    if src == dst:
        same = await engine._goals.transition(goal.id, dst)  # type: ignore[arg-type]
        assert same == goal
        assert len(events) == before, "a move into the current state is a no-op"
    elif dst in TABLE[src]:
        moved = await engine._goals.transition(goal.id, dst)  # type: ignore[arg-type]
        assert moved.status == dst
        changed = [e for e in events[before:] if isinstance(e, GoalStatusChanged)]
        assert [(e.from_status, e.to_status, e.goal_id) for e in changed] == [(src, dst, goal.id)]
    else:
        with pytest.raises(IllegalTransition) as info:
            await engine._goals.transition(goal.id, dst)  # type: ignore[arg-type]
        err = info.value
        assert (err.goal_id, err.from_status, err.to_status) == (goal.id, src, dst)
        assert goal.id in str(err) and src in str(err) and dst in str(err)
        assert engine.get_goal(goal.id).status == src
        assert len(events) == before


async def test_unknown_status_is_refused(engine: ContextEngine) -> None:
    goal = await engine.create_goal("x")
    with pytest.raises(IllegalTransition, match="unknown status"):
        await engine._goals.transition(goal.id, "sleeping")  # type: ignore[arg-type]


async def test_failed_to_pending_needs_retries_left(engine: ContextEngine) -> None:
    goal = await engine.create_goal("x", max_retries=1)
    await engine._goals.transition(goal.id, "failed")
    again = await engine._goals.transition(goal.id, "pending")
    assert again.retry_count == 1
    await engine._goals.transition(goal.id, "failed")
    with pytest.raises(IllegalTransition, match="no retries left"):
        await engine._goals.transition(goal.id, "pending")


async def test_fail_goal_retries_then_fails(engine: ContextEngine, events: list[EventBase]) -> None:
    goal = await engine.create_goal("flaky")  # max_retries 2
    for attempt in (1, 2):
        await engine.activate_goal(goal.id, loop_id=f"L{attempt}")
        back = await engine.fail_goal(goal.id, error=f"boom {attempt}")
        assert (back.status, back.retry_count, back.error) == (
            "pending",
            attempt,
            f"boom {attempt}",
        )
        assert back.loop_id is None
    await engine.activate_goal(goal.id)
    final = await engine.fail_goal(goal.id, error="boom 3")
    assert (final.status, final.retry_count) == ("failed", 2)
    failed = [
        e
        for e in events
        if isinstance(e, GoalStatusChanged) and (e.to_status == "failed" or e.will_retry)
    ]
    assert [(e.to_status, e.will_retry, e.error) for e in failed] == [
        ("pending", True, "boom 1"),
        ("pending", True, "boom 2"),
        ("failed", False, "boom 3"),
    ]
    assert failed[0].loop_id == "L1"


async def test_fail_goal_without_retry_fails_at_once(engine: ContextEngine) -> None:
    goal = await engine.create_goal("x")
    await engine.activate_goal(goal.id)
    assert (await engine.fail_goal(goal.id, "bad", allow_retry=False)).status == "failed"


async def test_fail_goal_never_resurrects_a_finished_goal(engine: ContextEngine) -> None:
    for state in ("cancelled", "completed"):
        goal = await _goal_in(engine, state)
        with pytest.raises(IllegalTransition, match=f"{state} -> failed"):
            await engine.fail_goal(goal.id, "late failure report")
        assert engine.get_goal(goal.id).status == state


async def test_fail_goal_retry_from_validated_goes_through_failed(
    engine: ContextEngine, events: list[EventBase]
) -> None:
    goal = await _goal_in(engine, "validated")
    before = len(events)
    back = await engine.fail_goal(goal.id, "verification failed")
    assert (back.status, back.retry_count) == ("pending", 1)
    moves = [
        (e.from_status, e.to_status, e.will_retry)
        for e in events[before:]
        if isinstance(e, GoalStatusChanged)
    ]
    assert moves == [("validated", "failed", True), ("failed", "pending", False)]


async def test_retry_goal_respects_max_retries(
    engine: ContextEngine, events: list[EventBase]
) -> None:
    """DESIGN's table: failed -> pending only while retries remain."""
    goal = await engine.create_goal("x", max_retries=2)
    await engine.fail_goal(goal.id, "first", allow_retry=False)
    again = await engine.retry_goal(goal.id)
    assert (again.status, again.retry_count) == ("pending", 1)
    await engine.fail_goal(goal.id, "second", allow_retry=False)
    assert (await engine.retry_goal(goal.id)).retry_count == 2
    await engine.fail_goal(goal.id, "third", allow_retry=False)
    before = len(events)
    with pytest.raises(IllegalTransition, match=r"failed -> pending.*no retries left \(2/2\)"):
        await engine.retry_goal(goal.id)
    assert engine.get_goal(goal.id).status == "failed" and events[before:] == []


async def test_retry_goal_fresh_is_the_users_retry_with_a_fresh_budget(
    engine: ContextEngine, events: list[EventBase]
) -> None:
    goal = await engine.create_goal("x", max_retries=0)
    await engine.fail_goal(goal.id, "no retries at all")
    assert engine.get_goal(goal.id).status == "failed"
    with pytest.raises(IllegalTransition, match=r"no retries left \(0/0\)"):
        await engine.retry_goal(goal.id)
    again = await engine.retry_goal_fresh(goal.id)
    assert (again.status, again.retry_count) == ("pending", 0)
    moved = events[-1]
    assert isinstance(moved, GoalStatusChanged) and moved.reason == "retry with a fresh budget"
    with pytest.raises(IllegalTransition, match="only failed goals retry"):
        await engine.retry_goal_fresh(goal.id)


async def test_resume_goal_from_paused_and_cancelled(engine: ContextEngine) -> None:
    for state in ("suspended", "blocked", "awaiting_clarification", "cancelled"):
        goal = await _goal_in(engine, state)
        assert (await engine.resume_goal(goal.id)).status == "pending"
    done = await _goal_in(engine, "completed")
    with pytest.raises(IllegalTransition):
        await engine.resume_goal(done.id)


async def test_unblock_moves_only_a_blocked_goal(
    engine: ContextEngine, events: list[EventBase]
) -> None:
    goal = await _goal_in(engine, "blocked")
    assert (await engine.unblock_goal(goal.id)).status == "pending"
    for state in GOAL_STATES:  # the seed's unblock on anything not blocked: a no-op
        if state == "blocked":
            continue
        other = await _goal_in(engine, state)
        before = len(events)
        assert (await engine.unblock_goal(other.id)) == engine.get_goal(other.id)
        assert engine.get_goal(other.id).status == state
        assert events[before:] == []


async def test_named_helpers_reach_validated_and_awaiting(engine: ContextEngine) -> None:
    a = await engine.create_goal("a")
    b = await engine.create_goal("b")
    await engine.activate_goal(a.id)
    await engine.activate_goal(b.id)
    assert (await engine.validate_goal(a.id)).status == "validated"
    assert (await engine.await_clarification(b.id)).status == "awaiting_clarification"
    assert (await engine.complete_goal(a.id, findings="ok")).status == "completed"
    assert (await engine.suspend_goal((await engine.create_goal("c")).id)).status == "suspended"
    assert (await engine.block_goal((await engine.create_goal("d")).id)).status == "blocked"


async def test_timestamps_and_loop_id(engine: ContextEngine) -> None:
    goal = await engine.create_goal("x")
    assert goal.started_at is None and goal.finished_at is None
    active = await engine.activate_goal(goal.id, loop_id="loop-1")
    assert active.loop_id == "loop-1" and active.started_at is not None
    done = await engine.complete_goal(goal.id, findings="f", report="r")
    assert done.finished_at is not None and (done.findings, done.report) == ("f", "r")
    assert done.updated_at >= done.created_at


async def test_started_at_is_set_on_each_activation(
    engine: ContextEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter(float(t) for t in range(1000, 2000, 10))
    fake_time = types.SimpleNamespace(time=lambda: next(clock))
    monkeypatch.setattr("soothe.engine.context.unit.time", fake_time)  # this module's only
    goal = await engine.create_goal("x")
    first = await engine.activate_goal(goal.id, loop_id="L1")
    back = await engine.fail_goal(goal.id, "flaky")  # a retry: back to pending
    assert (back.status, back.started_at) == ("pending", first.started_at)
    second = await engine.activate_goal(goal.id, loop_id="L2")
    assert first.started_at is not None and second.started_at is not None
    assert second.started_at > first.started_at
    await engine.suspend_goal(goal.id)
    await engine.resume_goal(goal.id)
    third = await engine.activate_goal(goal.id)
    assert third.started_at is not None and third.started_at > second.started_at


async def test_suspend_releases_the_loop(engine: ContextEngine, events: list[EventBase]) -> None:
    """The seed's suspend clears the goal's loop: resumed, another loop claims it."""
    goal = await engine.create_goal("x")
    await engine.activate_goal(goal.id, loop_id="loop-1")
    paused = await engine.suspend_goal(goal.id, "budget: calls 40")
    assert (paused.status, paused.loop_id) == ("suspended", None)
    moved = events[-1]
    assert isinstance(moved, GoalStatusChanged) and moved.loop_id == "loop-1"
    await engine.resume_goal(goal.id)
    claimed = await engine.claim_goal(goal.id, loop_id="loop-2")
    assert claimed is not None and (claimed.status, claimed.loop_id) == ("active", "loop-2")


async def test_cancel_cascades_deepest_first(
    engine: ContextEngine, events: list[EventBase]
) -> None:
    root = await engine.create_goal("root")
    a = await engine.create_goal("a", parent_id=root.id)
    a1 = await engine.create_goal("a1", parent_id=a.id)
    a1x = await engine.create_goal("a1x", parent_id=a1.id)
    b = await engine.create_goal("b", parent_id=root.id)
    finished = await engine.create_goal("done already", parent_id=root.id)
    await engine.complete_goal(finished.id)
    before = len(events)
    await engine.cancel_goal(root.id, reason="user said stop")
    cancels = [
        e
        for e in events[before:]
        if isinstance(e, GoalStatusChanged) and e.to_status == "cancelled"
    ]
    order = [e.goal_id for e in cancels]
    assert order == [a1x.id, a1.id, a.id, b.id, root.id]
    assert engine.get_goal(finished.id).status == "completed"
    assert all(engine.get_goal(g).status == "cancelled" for g in order)
    reasons = {e.goal_id: e.reason for e in cancels}
    assert reasons[a1x.id] == f"parent {root.id} cancelled: user said stop"


async def test_cancel_of_completed_goal_is_refused_before_cascading(engine: ContextEngine) -> None:
    root = await engine.create_goal("root")
    child = await engine.create_goal("child", parent_id=root.id)
    await engine.complete_goal(root.id)
    with pytest.raises(IllegalTransition):
        await engine.cancel_goal(root.id)
    assert engine.get_goal(child.id).status == "pending"


async def test_send_back_counts_then_fails(engine: ContextEngine) -> None:
    goal = await engine.create_goal("verify me")
    for n in (1, 2, 3):
        await engine.activate_goal(goal.id)
        back = await engine.send_back_goal(goal.id, "incomplete")
        assert (back.status, back.send_back_count) == ("pending", n)
    await engine.activate_goal(goal.id)
    final = await engine.send_back_goal(goal.id, "still incomplete")
    assert final.status == "failed" and "sent back 3 times" in final.error


async def test_activation_guards(engine: ContextEngine) -> None:
    dep = await engine.create_goal("dep")
    goal = await engine.create_goal("goal", depends_on=[dep.id])
    with pytest.raises(GoalNotReady, match=f"waiting on {dep.id}"):
        await engine.activate_goal(goal.id)
    assert await engine.claim_goal(goal.id) is None
    rival = await engine.create_goal("rival", conflicts_with=[dep.id])
    await engine.activate_goal(dep.id)
    with pytest.raises(GoalNotReady, match="conflicting goal active"):
        await engine._goals.transition(rival.id, "active")
    assert await engine.claim_goal(rival.id) is None
    await engine.complete_goal(dep.id)
    claimed = await engine.claim_goal(goal.id, loop_id="L")
    assert claimed is not None and claimed.status == "active" and claimed.loop_id == "L"
    assert await engine.claim_goal(goal.id) is None  # already active


async def test_snapshots_are_frozen(engine: ContextEngine) -> None:
    goal = await engine.create_goal("x")
    with pytest.raises(Exception, match="frozen"):
        goal.status = "completed"  # type: ignore[misc]
    assert engine.get_goal(goal.id).status == "pending"
