"""Projection stays within its bounds and reads only what the bounds need."""

from __future__ import annotations

import re
from collections import deque
from typing import Any

import pytest

from soothe.engine.config import ProjectionSettings
from soothe.engine.context import ContextEngine, GoalSpec, StepSpec


async def _focus_with_everything(engine: ContextEngine, thread: str = "t") -> str:
    parent = None
    for level in range(4):
        goal = await engine.create_goal(
            f"ancestor {level} " + "words " * 200, parent_id=parent, thread_id=thread
        )
        parent = goal.id
    focus = await engine.create_goal("the focus goal", parent_id=parent, thread_id=thread)
    informers = await engine.create_goals(
        [
            GoalSpec(description=f"informer {i}", informs=[focus.id], thread_id=thread)
            for i in range(10)
        ]
    )
    for g in informers:
        await engine.complete_goal(g.id, findings=f"finding of {g.id} " * 400)
    await engine.set_plan(
        focus.id,
        [StepSpec(id=f"S-{n:02d}", description=f"step {n} " * 50) for n in range(30)],
        1,
    )
    for n in range(5):
        await engine.complete_step(focus.id, f"S-{n:02d}", "result " * 100)
    for n in range(100):
        phase = "plan" if n % 2 else "execute"
        await engine.append_ledger(focus.id, "assistant", f"entry {n} " + "x" * 500, phase)
    await engine.append_ledger(None, "user", "thread-level note", "chat", thread_id=thread)
    await engine.activate_goal(focus.id)
    await engine.complete_goal(focus.id, findings="own findings " * 500)
    return focus.id


async def test_projection_respects_default_bounds(engine: ContextEngine) -> None:
    focus = await _focus_with_everything(engine)
    bundle = engine.project(focus)
    bounds = ProjectionSettings()
    assert bundle.goal.id == focus and bundle.goal.status == "completed"
    assert len(bundle.goals) <= bounds.max_goals
    assert len(bundle.steps) <= bounds.max_steps_per_goal and bundle.steps_total == 30
    assert bundle.step_counts == {"completed": 5, "pending": 25}
    assert len(bundle.ledger) <= bounds.max_ledger_messages
    assert sum(len(e.content) for e in bundle.ledger) <= bounds.max_ledger_chars
    assert bundle.ledger[-1].content == "thread-level note"
    assert [e.id for e in bundle.ledger] == sorted(e.id for e in bundle.ledger)
    assert len(bundle.lineage) <= bounds.max_lineage_chars
    assert (
        bundle.lineage.startswith("G1 [pending]: ancestor 0") and "> G4 [pending]" in bundle.lineage
    )
    assert len(bundle.informed_findings) == bounds.max_goals
    assert sum(len(f.findings) for f in bundle.informed_findings) <= bounds.max_lineage_chars
    assert len(bundle.findings) <= bounds.max_lineage_chars
    text = bundle.render()
    assert "## Goal " + focus in text and "## Recent ledger" in text
    assert len(text) < 20_000


async def test_projection_with_tighter_settings(bus: Any) -> None:
    tight = ProjectionSettings(
        max_goals=2,
        max_steps_per_goal=3,
        max_ledger_chars=300,
        max_ledger_messages=4,
        max_lineage_chars=200,
    )
    engine = await ContextEngine.open(":memory:", bus=bus, projection=tight)
    try:
        focus = await _focus_with_everything(engine)
        bundle = engine.project(focus)
        assert len(bundle.goals) == 2 and len(bundle.steps) == 3
        assert len(bundle.ledger) <= 4 and sum(len(e.content) for e in bundle.ledger) <= 300
        assert len(bundle.lineage) <= 200 and len(bundle.informed_findings) == 2
        assert bundle.lineage.startswith("…") or bundle.lineage.startswith("G4")
        # the steps shown favour the next pending work and the newest completed ones
        assert [s.status for s in bundle.steps] == ["pending", "pending", "pending"]
        assert len(bundle.render()) < 3_000
    finally:
        await engine.close()


async def test_projection_phase_filter(engine: ContextEngine) -> None:
    focus = await _focus_with_everything(engine)
    bundle = engine.project(focus, phases=["plan"])
    assert bundle.ledger and {e.phase for e in bundle.ledger} == {"plan"}
    assert {e.phase for e in engine.get_ledger_entries(focus, phases=["execute"])} == {"execute"}
    assert len(engine.get_ledger_entries(phases=["chat"])) == 1
    assert len(engine.get_ledger_entries(thread_id="t")) == 101


class CountingDict(dict[str, Any]):
    reads = 0

    def __getitem__(self, key: str) -> Any:
        CountingDict.reads += 1
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        CountingDict.reads += 1
        return super().get(key, default)

    def __iter__(self) -> Any:
        raise AssertionError("projection must not iterate over all goals")

    def values(self) -> Any:
        raise AssertionError("projection must not iterate over all goals")

    def items(self) -> Any:
        raise AssertionError("projection must not iterate over all goals")


class NoScanDeque(deque[Any]):
    def __iter__(self) -> Any:
        raise AssertionError("projection must not scan the whole ledger")


async def _reads_for_projection(others: int) -> tuple[int, str]:
    engine = await ContextEngine.open(":memory:")
    try:
        await engine.create_goals(
            [GoalSpec(description=f"other {i}", thread_id=f"o{i % 7}") for i in range(others)]
        )
        for i in range(min(others, 50)):
            await engine.append_ledger(f"G{i + 1}", "assistant", "noise", "execute")
        focus = await _focus_with_everything(engine)
        graph = engine._graph
        graph.goals = CountingDict(graph.goals)
        graph.by_status = CountingDict(graph.by_status)
        engine._ledger._all = NoScanDeque(engine._ledger._all)
        CountingDict.reads = 0
        text = engine.project(focus).render()
        return CountingDict.reads, text
    finally:
        await engine.close()


async def test_projection_cost_does_not_grow_with_goal_count() -> None:
    small_reads, small_text = await _reads_for_projection(10)
    big_reads, big_text = await _reads_for_projection(3000)
    assert small_reads == big_reads
    assert small_reads < 60

    def same(text: str) -> str:
        return re.sub(r"G\d+", "G", text)[:2000]

    assert same(small_text) == same(big_text)


async def test_projection_of_unknown_goal(engine: ContextEngine) -> None:
    with pytest.raises(KeyError):
        engine.project("G9")


async def test_projection_without_a_focus_goal_is_the_dag_summary(engine: ContextEngine) -> None:
    """The seed's ``project()`` with no goal: the active goal's view; none active, the DAG
    summary only; an empty DAG gives the summary of no goals."""
    empty = engine.project()
    assert empty.goal is None and empty.dag.size == 0 and empty.goals == []
    assert empty.render() == "## Goal DAG (no goals)"
    first = await engine.create_goal("Index the docs")
    waiting = await engine.create_goal("Write the summary", priority=70)
    await engine.create_goal("Publish it", depends_on=[waiting.id])
    await engine.activate_goal(first.id)
    await engine.complete_goal(first.id)
    bundle = engine.project()
    assert bundle.goal is None and bundle.dag.counts == {"completed": 1, "pending": 2}
    assert bundle.render() == (
        "## Goal DAG (3 goals: completed 1, pending 2)\n"
        f"- {waiting.id} (ready) [pending] Write the summary"
    )
    await engine.activate_goal(waiting.id, loop_id="L1")
    focused = engine.project()
    assert focused.goal is not None and focused.goal.id == waiting.id
    assert focused.render() == engine.project(waiting.id).render()
