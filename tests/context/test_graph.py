"""Goal relations: cycles, depth, removal, conflicts, informs, readiness, priority, findings."""

from __future__ import annotations

import pytest

from soothe.engine.context import (
    MAX_GOAL_DEPTH,
    ContextEngine,
    CycleError,
    DepthLimitExceeded,
    GoalInUse,
    GoalNotFound,
    GoalSpec,
    InvalidGoal,
)
from soothe.engine.events import EventBase, GoalUpdated


async def test_ids_are_short_and_sequential(engine: ContextEngine) -> None:
    ids = [(await engine.create_goal(f"g{i}")).id for i in range(3)]
    assert ids == ["G1", "G2", "G3"]


async def test_dependency_cycle_is_refused_and_named(engine: ContextEngine) -> None:
    a = await engine.create_goal("a")
    b = await engine.create_goal("b", depends_on=[a.id])
    c = await engine.create_goal("c", depends_on=[b.id])
    with pytest.raises(CycleError) as info:
        await engine.add_dependency(a.id, c.id)
    assert info.value.cycle == [a.id, c.id, b.id, a.id]
    assert "G1 -> G3 -> G2 -> G1" in str(info.value)
    assert engine.get_goal(a.id).depends_on == ()
    with pytest.raises(CycleError):
        await engine.add_dependency(a.id, a.id)


async def test_would_cycle_is_the_check_add_dependency_refuses_with(
    engine: ContextEngine,
) -> None:
    a = await engine.create_goal("a")
    b = await engine.create_goal("b", depends_on=[a.id])
    c = await engine.create_goal("c", depends_on=[b.id])
    free = await engine.create_goal("free")
    pairs = [(x.id, y.id) for x in (a, b, c, free) for y in (a, b, c, free)]
    answers = {pair: engine.would_cycle(*pair) for pair in pairs}
    assert {pair for pair, cycles in answers.items() if cycles} == {
        (a.id, a.id),
        (a.id, b.id),
        (a.id, c.id),
        (b.id, b.id),
        (b.id, c.id),
        (c.id, c.id),
        (free.id, free.id),
    }
    for (goal_id, depends_on_id), cycles in answers.items():
        if cycles:
            with pytest.raises(CycleError):
                await engine.add_dependency(goal_id, depends_on_id)
    with pytest.raises(GoalNotFound):
        engine.would_cycle(a.id, "G99")


async def test_add_and_remove_dependency(engine: ContextEngine, events: list[EventBase]) -> None:
    a = await engine.create_goal("a")
    b = await engine.create_goal("b")
    await engine.add_dependency(b.id, a.id)
    await engine.add_dependency(b.id, a.id)  # no-op
    assert engine.get_goal(b.id).depends_on == (a.id,)
    assert [g.id for g in engine.ready_goals()] == [a.id]
    updated = [e for e in events if isinstance(e, GoalUpdated)]
    assert len(updated) == 1 and updated[0].depends_on == [a.id]
    await engine.remove_dependency(b.id, a.id)
    assert {g.id for g in engine.ready_goals()} == {a.id, b.id}
    with pytest.raises(GoalNotFound):
        await engine.add_dependency(b.id, "G99")


async def test_depth_limit(engine: ContextEngine) -> None:
    parent = None
    chain = []
    for level in range(MAX_GOAL_DEPTH):
        goal = await engine.create_goal(f"level {level + 1}", parent_id=parent)
        chain.append(goal.id)
        parent = goal.id
    with pytest.raises(DepthLimitExceeded, match="nest at most 5"):
        await engine.create_goal("too deep", parent_id=parent)
    assert engine.planning.goal.lineage(chain[-1])[0].id == chain[0]
    assert [g.id for g in engine.lineage(chain[-1])] == chain[-2::-1]


async def test_remove_goal_refused_while_needed(engine: ContextEngine) -> None:
    a = await engine.create_goal("a")
    b = await engine.create_goal("b", depends_on=[a.id])
    with pytest.raises(GoalInUse, match=f"depended on by {b.id}"):
        await engine.remove_goal(a.id)
    parent = await engine.create_goal("p")
    await engine.create_goal("kid", parent_id=parent.id)
    with pytest.raises(GoalInUse, match="sub-goals"):
        await engine.remove_goal(parent.id)
    running = await engine.create_goal("r")
    await engine.activate_goal(running.id)
    with pytest.raises(GoalInUse, match="active"):
        await engine.remove_goal(running.id)
    await engine.remove_goal(b.id)
    await engine.remove_goal(a.id)
    assert not engine.has_goal(a.id) and not engine.has_goal(b.id)


async def test_remove_goal_cuts_soft_edges(engine: ContextEngine, events: list[EventBase]) -> None:
    a = await engine.create_goal("a")
    b = await engine.create_goal("b", informs=[a.id], conflicts_with=[a.id])
    await engine.add_evidence(a.id, kind="tool", summary="s")
    await engine.append_ledger(a.id, "assistant", "hello", "plan")
    await engine.remove_goal(a.id)
    left = engine.get_goal(b.id)
    assert left.informs == () and left.conflicts_with == ()
    assert engine.get_ledger_entries() == []
    assert events[-1].type == "goal.removed" and events[-1].goal_id == a.id
    with pytest.raises(GoalNotFound):
        engine.evidence(a.id)


async def test_conflicts_are_symmetric(engine: ContextEngine) -> None:
    a = await engine.create_goal("a")
    b = await engine.create_goal("b", conflicts_with=[a.id])
    assert engine.get_goal(a.id).conflicts_with == (b.id,)
    c = await engine.create_goal("c")
    await engine.add_conflict(c.id, a.id)
    assert engine.get_goal(a.id).conflicts_with == (b.id, c.id)
    assert engine.get_goal(c.id).conflicts_with == (a.id,)
    assert (await engine.add_conflict(a.id, c.id)).conflicts_with == (b.id, c.id)  # no twin
    with pytest.raises(InvalidGoal):
        await engine.add_conflict(a.id, a.id)
    e = await engine.create_goal("e")
    await engine.activate_goal(a.id)
    assert [g.id for g in engine.ready_goals()] == [e.id]  # b and c conflict with active a
    d = await engine.create_goal("d")
    await engine.activate_goal(d.id)
    with pytest.raises(InvalidGoal, match="both active"):
        await engine.add_conflict(a.id, d.id)


async def test_ready_order_priority_then_age(engine: ContextEngine) -> None:
    low = await engine.create_goal("low", priority=10)
    high_old = await engine.create_goal("high old", priority=90)
    mid = await engine.create_goal("mid")
    high_new = await engine.create_goal("high new", priority=90)
    assert [g.id for g in engine.ready_goals()] == [high_old.id, high_new.id, mid.id, low.id]
    await engine.set_priority(low.id, 100)
    assert engine.ready_goals()[0].id == low.id
    with pytest.raises(InvalidGoal):
        await engine.set_priority(low.id, 101)
    with pytest.raises(InvalidGoal):
        await engine.create_goal("bad", priority=-1)


async def test_informs(engine: ContextEngine) -> None:
    a = await engine.create_goal("a")
    b = await engine.create_goal("b")
    await engine.add_informs(a.id, b.id)
    assert engine.planning.goal.related(b.id)["informed_by"] == [a.id]
    assert (await engine.add_informs(a.id, b.id)).informs == (b.id,)  # already there
    with pytest.raises(InvalidGoal):
        await engine.add_informs(a.id, a.id)


async def test_batch_creation_with_refs(engine: ContextEngine) -> None:
    root = await engine.create_goal("root", thread_id="t1")
    made = await engine.create_goals(
        [
            GoalSpec(description="one", ref="one", parent_id=root.id),
            GoalSpec(description="two", ref="two", depends_on=["one"], conflicts_with=[root.id]),
            {"description": "three", "depends_on": ["one", "two"], "informs": ["one"]},
        ]
    )
    one, two, three = made
    assert two.depends_on == (one.id,) and three.depends_on == (one.id, two.id)
    assert engine.get_goal(root.id).conflicts_with == (two.id,)
    assert three.informs == (one.id,)
    with pytest.raises(GoalNotFound):
        await engine.create_goals([GoalSpec(description="x", depends_on=["later"])])
    assert len(engine.list_goals()) == 4


async def test_decompose_creates_sequential_subgoals(engine: ContextEngine) -> None:
    parent = await engine.create_goal("big", thread_id="t")
    subs = await engine.planning.goal.decompose(parent.id, ["a", "b", "c"], sequential=True)
    assert [s.parent_id for s in subs] == [parent.id] * 3
    assert {s.source for s in subs} == {"decomposition"} and {s.thread_id for s in subs} == {"t"}
    assert subs[1].depends_on == (subs[0].id,) and subs[2].depends_on == (subs[1].id,)
    assert [g.id for g in engine.ready_goals()] == [parent.id, subs[0].id]


async def test_list_goals_filters(engine: ContextEngine) -> None:
    a = await engine.create_goal("a", thread_id="t1", topic="x")
    b = await engine.create_goal("b", thread_id="t2", topic="x")
    await engine.activate_goal(b.id)
    assert [g.id for g in engine.list_goals(status="active")] == [b.id]
    assert [g.id for g in engine.list_goals(status=["pending", "active"])] == [a.id, b.id]
    assert [g.id for g in engine.list_goals(thread_id="t1")] == [a.id]
    assert [g.id for g in engine.planning.goal.by_topic("x")] == [a.id, b.id]
    with pytest.raises(GoalNotFound):
        engine.get_goal("G404")
