"""Step DAGs: readiness, dependency-token expansion, unknown and failed dependencies, replans."""

from __future__ import annotations

from typing import Any

import pytest

from soothe.engine.context import (
    ContextEngine,
    IllegalStepTransition,
    PlanError,
    StepDAG,
    StepNode,
    StepNotFound,
    StepNotReady,
    StepSpec,
    UnknownStepDependency,
    expand_dependency_satisfaction_ids,
    step_number,
)
from soothe.engine.events import EventBase


def spec(step_id: str, *deps: str, kind: str = "action") -> StepSpec:
    return StepSpec(id=step_id, description=f"do {step_id}", dependencies=list(deps), kind=kind)


def node(step_id: str, status: str = "pending", *deps: str) -> StepNode:
    return StepNode(id=step_id, goal_id="G1", description=step_id, status=status, dependencies=deps)


def test_step_number() -> None:
    assert step_number("KFA-01") == 1
    assert step_number("step12") == 12
    assert step_number("7") == 7
    assert step_number("setup") is None


def test_expansion_adds_numeric_aliases() -> None:
    assert expand_dependency_satisfaction_ids(["KFA-01"]) == {"KFA-01", "01", "1"}
    assert expand_dependency_satisfaction_ids(["KFA-01", "KFA-12"]) == {
        "KFA-01",
        "01",
        "1",
        "KFA-12",
        "12",
    }


def test_expansion_skips_ambiguous_numbers() -> None:
    assert expand_dependency_satisfaction_ids(["KFA-01", "KFB-01"]) == {"KFA-01", "KFB-01"}
    assert expand_dependency_satisfaction_ids(["KFA-01", "KFB-1", "X-02"]) == {
        "KFA-01",
        "KFB-1",
        "X-02",
        "02",
        "2",
    }


def test_ready_steps_with_aliases() -> None:
    dag = StepDAG(
        "G1",
        [
            node("KFA-01", "completed"),
            node("KFA-02", "pending", "01"),
            node("KFA-03", "pending", "1", "KFA-02"),
            node("KFA-04", "pending", "001"),
        ],
    )
    assert [s.id for s in dag.ready_steps()] == ["KFA-02", "KFA-04"]
    assert dag.waiting_on("KFA-03") == ["KFA-02"]


def test_ambiguous_alias_is_not_satisfied_and_is_dead() -> None:
    dag = StepDAG(
        "G1",
        [node("KFA-01", "completed"), node("KFB-01", "completed"), node("X", "pending", "01")],
    )
    assert dag.ready_steps() == []
    [(dead, why)] = dag.dead_steps()
    assert dead.id == "X" and "ambiguous" in why


def test_alias_waits_while_a_candidate_can_still_complete() -> None:
    dag = StepDAG("G1", [node("KFA-01", "active"), node("X", "pending", "1")])
    assert dag.ready_steps() == [] and dag.dead_steps() == []


def test_exact_id_wins_over_alias() -> None:
    dag = StepDAG("G1", [node("KFA-01", "completed"), node("1"), node("X", "pending", "1")])
    assert [s.id for s in dag.ready_steps()] == ["1"]


async def _active_goal(engine: ContextEngine) -> str:
    goal = await engine.create_goal("work", thread_id="t", topic="x")
    await engine.activate_goal(goal.id, loop_id="L")
    return goal.id


async def test_plan_and_run_steps(engine: ContextEngine, events: list[EventBase]) -> None:
    gid = await _active_goal(engine)
    nodes = await engine.set_plan(gid, [spec("KFA-01"), spec("KFA-02", "01")], iteration=1)
    assert [n.id for n in nodes] == ["KFA-01", "KFA-02"]
    assert [n.iteration for n in nodes] == [1, 1]
    with pytest.raises(StepNotReady, match="waiting on: 01"):
        await engine.start_step(gid, "KFA-02")
    started = await engine.start_step(gid, "KFA-01")
    assert started.status == "active"
    done = await engine.complete_step(gid, "KFA-01", "found it", tokens=12, duration_s=0.5)
    assert (done.result_summary, done.tokens, done.duration_s) == ("found it", 12, 0.5)
    assert [s.id for s in engine.step_dag(gid).ready_steps()] == ["KFA-02"]
    step_events = [e for e in events if e.type.startswith("step.")]
    assert [e.type for e in step_events] == ["step.started", "step.completed"]
    assert all(
        (e.goal_id, e.step_id, e.thread_id, e.loop_id) == (gid, "KFA-01", "t", "L")
        for e in step_events
    )
    with pytest.raises(IllegalStepTransition):
        await engine.start_step(gid, "KFA-01")
    with pytest.raises(StepNotFound):
        await engine.complete_step(gid, "nope")


async def test_reset_step_reruns_an_interrupted_step(
    engine: ContextEngine, events: list[EventBase]
) -> None:
    gid = await _active_goal(engine)
    await engine.set_plan(gid, [spec("A"), spec("B", "A")], 1)
    await engine.start_step(gid, "A")
    assert (await engine.reset_step(gid, "A", "interrupted by the user")).status == "pending"
    assert (await engine.reset_step(gid, "A")).status == "pending"  # no move, no event
    suspended = [e for e in events if e.type == "step.suspended"]
    assert [(e.goal_id, e.step_id, e.reason) for e in suspended] == [  # type: ignore[attr-defined]
        (gid, "A", "interrupted by the user")
    ]
    assert [s.id for s in engine.step_dag(gid).ready_steps()] == ["A"]
    await engine.complete_step(gid, "A")
    with pytest.raises(IllegalStepTransition):
        await engine.reset_step(gid, "A")


async def test_unknown_dependency_is_reported(engine: ContextEngine) -> None:
    gid = await _active_goal(engine)
    with pytest.raises(UnknownStepDependency) as info:
        await engine.set_plan(gid, [spec("A-1"), spec("A-2", "A-1", "ghost", "9")], 1)
    assert info.value.unknown == {"A-2": ["ghost", "9"]}
    assert len(engine.step_dag(gid)) == 0
    check = engine.planning.step.check(gid, [spec("A-1", "nope")])
    assert not check.ok and check.unknown == {"A-1": ["nope"]}
    nodes = await engine.set_plan(
        gid, [spec("A-1"), spec("A-2", "A-1", "ghost")], 1, unknown_deps="drop"
    )
    assert nodes[1].dependencies == ("A-1",)
    assert nodes[1].dropped_dependencies == ("ghost",)


async def test_failed_dependency_skips_dependents(
    engine: ContextEngine, events: list[EventBase]
) -> None:
    gid = await _active_goal(engine)
    await engine.set_plan(
        gid,
        [spec("S-1"), spec("S-2", "S-1"), spec("S-3", "2"), spec("S-4"), spec("S-5", "S-4")],
        1,
    )
    await engine.start_step(gid, "S-1")
    skipped = await engine.fail_step(gid, "S-1", "tool crashed")
    assert skipped == ["S-2", "S-3"]
    dag = engine.step_dag(gid)
    assert {s.id: s.status for s in dag} == {
        "S-1": "failed",
        "S-2": "skipped",
        "S-3": "skipped",
        "S-4": "pending",
        "S-5": "pending",
    }
    assert "S-1 failed" in dag.steps["S-2"].error
    assert [s.id for s in dag.ready_steps()] == ["S-4"]
    assert await engine.fail_step(gid, "S-4", "not needed") == ["S-5"]
    assert dag.is_finished()
    kinds = [(e.type, e.step_id) for e in events if e.type in ("step.failed", "step.skipped")]
    assert kinds == [
        ("step.failed", "S-1"),
        ("step.skipped", "S-2"),
        ("step.skipped", "S-3"),
        ("step.failed", "S-4"),
        ("step.skipped", "S-5"),
    ]


async def test_completing_a_step_can_make_an_alias_ambiguous(engine: ContextEngine) -> None:
    gid = await _active_goal(engine)
    await engine.set_plan(gid, [spec("KFA-01"), spec("KFB-01"), spec("X", "01")], 1)
    await engine.complete_step(gid, "KFA-01")
    assert [s.id for s in engine.step_dag(gid).ready_steps()] == ["KFB-01", "X"]
    await engine.complete_step(gid, "KFB-01")
    assert engine.step_dag(gid).steps["X"].status == "skipped"


async def test_replan_keeps_completed_and_replaces_the_rest(engine: ContextEngine) -> None:
    gid = await _active_goal(engine)
    await engine.set_plan(gid, [spec("KFA-01"), spec("KFA-02", "01"), spec("KFA-03")], 1)
    await engine.complete_step(gid, "KFA-01", "kept result")
    await engine.start_step(gid, "KFA-03")
    await engine.fail_step(gid, "KFA-03", "bad")
    nodes = await engine.set_plan(
        gid, [spec("KFA-01"), spec("KFB-01", "KFA-01"), spec("B2", "1")], 2
    )
    dag = engine.step_dag(gid)
    assert list(dag.steps) == ["KFA-01", "KFB-01", "B2"]
    assert dag.steps["KFA-01"].result_summary == "kept result"
    assert dag.steps["KFA-01"].iteration == 1 and nodes[0].status == "completed"
    assert [n.iteration for n in nodes[1:]] == [2, 2]
    # "1" matches KFA-01 (completed) and KFB-01 (pending): exactly one completed -> satisfied
    assert [s.id for s in dag.ready_steps()] == ["KFB-01", "B2"]
    assert engine.planning.step.next_iteration(gid) == 3


async def test_replan_refuses_redefining_a_running_step(engine: ContextEngine) -> None:
    gid = await _active_goal(engine)
    await engine.set_plan(gid, [spec("A"), spec("B")], 1)
    await engine.start_step(gid, "A")
    with pytest.raises(PlanError, match="running"):
        await engine.set_plan(gid, [spec("A"), spec("C")], 2)
    nodes = await engine.set_plan(gid, [spec("C", "A")], 2)
    assert list(engine.step_dag(gid).steps) == ["A", "C"] and nodes[0].id == "C"


async def test_plan_errors(engine: ContextEngine) -> None:
    gid = await _active_goal(engine)
    with pytest.raises(PlanError, match="duplicate"):
        await engine.set_plan(gid, [spec("A"), spec("A")], 1)
    with pytest.raises(PlanError, match="cycle A -> B -> A"):
        await engine.set_plan(gid, [spec("A", "B"), spec("B", "A")], 1)
    with pytest.raises(PlanError, match="cycle"):
        await engine.set_plan(gid, [spec("S-1", "1")], 1)
    assert len(engine.step_dag(gid)) == 0


async def test_evidence_ids_and_summary(engine: ContextEngine, events: list[EventBase]) -> None:
    gid = await _active_goal(engine)
    await engine.set_plan(gid, [spec("KFA-01")], 1)
    first = await engine.add_evidence(gid, kind="bootstrap", summary="workspace listing")
    second = await engine.add_evidence(
        gid, kind="tool", summary="read README", content="# Soothe", step_id="KFA-01"
    )
    assert (first.id, second.id) == (f"E-{gid}-1", f"E-{gid}-2")
    assert [e.id for e in engine.evidence(gid)] == [first.id, second.id]
    added = [e for e in events if e.type == "evidence.added"]
    assert added[-1].step_id == "KFA-01" and added[-1].evidence_id == second.id
    summary = engine.evidence_summary(gid)
    assert f"[{second.id}] tool @KFA-01: read README" in summary
    for n in range(200):
        await engine.add_evidence(gid, kind="tool", summary=f"finding number {n} " * 5)
    bounded = engine.evidence_summary(gid, max_chars=500)
    assert len(bounded) <= 500
    assert "finding number 199" in bounded and "earlier evidence entries omitted" in bounded
    with pytest.raises(StepNotFound):
        await engine.add_evidence(gid, kind="tool", summary="x", step_id="nope")


async def test_skip_step_is_public_and_skips_the_dependents(
    engine: ContextEngine, events: list[EventBase], recorder: Any
) -> None:
    """The seed's ``skip_step(goal_id, step_id)``, through the one step transition."""
    goal = await engine.create_goal("g")
    await engine.activate_goal(goal.id)
    await engine.set_plan(
        goal.id,
        [
            StepSpec(id="A", description="a"),
            StepSpec(id="B", description="b", dependencies=["A"]),
            StepSpec(id="C", description="c"),
        ],
        1,
    )
    rec = recorder()
    engine.on("step_skipped", rec)
    assert await engine.skip_step(goal.id, "A", "the user has it already") == ["A", "B"]
    dag = engine.step_dag(goal.id)
    assert [dag.get(s).status for s in "ABC"] == ["skipped", "skipped", "pending"]  # type: ignore[union-attr]
    skips = [(e.step_id, e.reason) for e in events if e.type == "step.skipped"]
    assert skips == [("A", "the user has it already"), ("B", "dependency A skipped")]
    assert rec.calls == [(goal.id, "A"), (goal.id, "B")]
    before = len(events)
    assert await engine.skip_step(goal.id, "A") == []  # already skipped: nothing happens
    assert len(events) == before
    await engine.start_step(goal.id, "C")
    await engine.complete_step(goal.id, "C", "done")
    with pytest.raises(IllegalStepTransition):
        await engine.skip_step(goal.id, "C")
