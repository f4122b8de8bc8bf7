"""The StrangeLoop through a Session with a scripted model: plans, waves, replans, bounds."""

from __future__ import annotations

from soothe.engine.llm.scripted import ScriptedReply
from tests.fakes.brain import Brain
from tests.loop.conftest import SessionFactory
from tests.loop.helpers import (
    assess,
    classify,
    goal_moves,
    of_type,
    one,
    plan,
    run_all,
    step,
)


async def test_one_step_terminal_plan_uses_the_step_answer(make_session: SessionFactory) -> None:
    brain = Brain()
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01", "list the workspace")))
    brain.add(
        "step:S-01",
        ScriptedReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}]),
        "The workspace has README.md and notes.txt.",
    )
    session = await make_session(brain)
    events = await run_all(session, "what files are here?")

    # classify 1 + plan 1 + step 2 (tool call, then answer); no assess, no completion call.
    assert brain.kinds() == ["Classification", "PlanGeneration", "step:S-01", "step:S-01"]
    assert one(events, "run.finished").model_calls == 4
    final = one(events, "answer.final")
    assert final.text == "The workspace has README.md and notes.txt."
    goal = session.context.get_goal(final.goal_id)
    assert goal.status == "completed" and goal.findings == final.text
    assert goal_moves(events, goal.id) == ["active", "validated", "completed"]
    result = one(events, "step.tool_result", tool="list_dir")
    assert "README.md" in result.output and result.ok
    assert not of_type(events, "plan.assessed")


async def test_two_parallel_steps_then_a_dependent(make_session: SessionFactory) -> None:
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.add(
        "PlanGeneration",
        plan(
            step("S-01", "read README"),
            step("S-02", "read notes"),
            step("S-03", "combine", ["S-01", "S-02"]),
        ),
    )
    brain.add("step:S-01", ScriptedReply(text="readme says demo", delay=0.15))
    brain.add("step:S-02", ScriptedReply(text="notes say alpha", delay=0.15))
    brain.add("step:S-03", "demo and alpha")
    brain.add("StatusAssessment", assess("done", progress="complete"))
    brain.add("complete", "Final: demo and alpha.")
    session = await make_session(brain)

    in_flight = 0
    peak = 0

    def track(event: object) -> None:
        nonlocal in_flight, peak
        kind = getattr(event, "type", "")
        if kind == "step.started":
            in_flight += 1
            peak = max(peak, in_flight)
        elif kind in ("step.completed", "step.failed"):
            in_flight -= 1

    session.bus.add_listener(track)
    events = await run_all(session, "summarise README and notes")

    started = {e.step_id: e for e in of_type(events, "step.started")}
    completed = {e.step_id: e for e in of_type(events, "step.completed")}
    assert set(completed) == {"S-01", "S-02", "S-03"}
    # The dependent starts only after both of its dependencies finished ...
    assert started["S-03"].seq > max(completed["S-01"].seq, completed["S-02"].seq)
    # ... and the two independent steps really ran at the same time.
    assert peak == 2
    assert started["S-02"].ts < completed["S-01"].ts and started["S-01"].ts < completed["S-02"].ts
    # The dependent saw both results as evidence.
    (s3_prompt,) = brain.step_prompts("S-03")
    assert "readme says demo" in s3_prompt and "notes say alpha" in s3_prompt
    assert brain.kinds()[-2:] == ["StatusAssessment", "complete"]
    assert one(events, "answer.final").text == "Final: demo and alpha."


async def test_dependency_mode_runs_each_wave_together(make_session: SessionFactory) -> None:
    """execution_mode "dependency" (the small profile's): every ready step of a wave runs
    at once, up to loop.max_parallel_steps; a step on one of them waits for the wave."""
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.add(
        "PlanGeneration",
        plan(
            step("S-01", "read README"),
            step("S-02", "read notes"),
            step("S-03", "list the workspace"),
            step("S-04", "combine", ["S-01"]),
            mode="dependency",
        ),
    )
    brain.add("step:S-01", ScriptedReply(text="readme says demo", delay=0.3))
    brain.add("step:S-02", ScriptedReply(text="notes say alpha", delay=0.6))
    brain.add("step:S-03", ScriptedReply(text="two files", delay=0.6))
    brain.add("step:S-04", "demo")
    brain.add("StatusAssessment", assess("done", completion=False))
    session = await make_session(brain, loop={"parallelism": "dependency"})
    in_flight: set[str] = set()
    peak: set[str] = set()

    def track(event: object) -> None:
        nonlocal peak
        kind, step_id = getattr(event, "type", ""), getattr(event, "step_id", "")
        if kind == "step.started":
            in_flight.add(step_id)
            peak = max(peak, set(in_flight), key=len)
        elif kind in ("step.completed", "step.failed"):
            in_flight.discard(step_id)

    session.bus.add_listener(track)
    events = await run_all(session, "summarise README and notes")

    started = {e.step_id: e for e in of_type(events, "step.started")}
    completed = {e.step_id: e for e in of_type(events, "step.completed")}
    assert set(completed) == {"S-01", "S-02", "S-03", "S-04"}
    assert peak == {"S-01", "S-02", "S-03"}, "the three independent steps ran together"
    # S-04 needs only S-01 (done first), yet it runs in the next wave, after all three.
    assert started["S-04"].seq > max(completed[s].seq for s in ("S-01", "S-02", "S-03"))


async def test_dependency_mode_waves_keep_the_parallel_limit(make_session: SessionFactory) -> None:
    """With loop.max_parallel_steps 2 a dependency-mode wave of three runs as 2 + 1."""
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.add(
        "PlanGeneration",
        plan(step("S-01", "a"), step("S-02", "b"), step("S-03", "c"), mode="dependency"),
    )
    for sid in ("S-01", "S-02", "S-03"):
        brain.add(f"step:{sid}", ScriptedReply(text=f"{sid} done", delay=0.3))
    brain.add("StatusAssessment", assess("done", completion=False))
    session = await make_session(brain, loop={"parallelism": "dependency", "max_parallel_steps": 2})
    in_flight = peak = 0

    def track(event: object) -> None:
        nonlocal in_flight, peak
        kind = getattr(event, "type", "")
        if kind == "step.started":
            in_flight += 1
            peak = max(peak, in_flight)
        elif kind in ("step.completed", "step.failed"):
            in_flight -= 1

    session.bus.add_listener(track)
    events = await run_all(session, "do three things")
    assert len(of_type(events, "step.completed")) == 3
    assert peak == 2


async def test_short_dependency_ids_resolve(make_session: SessionFactory) -> None:
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.add(
        "PlanGeneration",
        plan(step("KFA-01", "find facts"), step("KFA-02", "use facts", ["01"]), mode="dependency"),
    )
    brain.add("step:KFA-01", "fact: 42")
    brain.add("step:KFA-02", "used 42")
    brain.add("StatusAssessment", assess("done", completion=False))
    session = await make_session(brain)
    events = await run_all(session, "use the facts")

    assert [e.step_id for e in of_type(events, "step.completed")] == ["KFA-01", "KFA-02"]
    assert not of_type(events, "step.skipped")
    goal_id = one(events, "answer.final").goal_id
    node = session.context.step_dag(goal_id).get("KFA-02")
    assert node.dependencies == ("01",) and node.dropped_dependencies == ()
    # require_goal_completion false: the last step's answer is the answer, no completion call.
    assert one(events, "answer.final").text == "used 42"
    assert "complete" not in brain.kinds()


async def test_replan_after_a_failed_step(make_session: SessionFactory) -> None:
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.add(
        "PlanGeneration",
        plan(step("S-01", "try the broken way"), step("S-02", "build on it", ["S-01"])),
        plan(step("S-01", "try another way")),
    )
    brain.add("step:S-01", "", "")  # an empty answer, asked again: empty, fails the step
    brain.add("step:S-01.2", "worked the other way")
    brain.add(
        "StatusAssessment", assess("replan", progress="low"), assess("done", completion=False)
    )
    session = await make_session(brain)
    events = await run_all(session, "do the thing")

    goal_id = one(events, "answer.final").goal_id
    failed = one(events, "step.failed", step_id="S-01")
    assert "empty answer" in failed.error and not failed.cancelled
    assert one(events, "step.skipped", step_id="S-02").reason == "dependency S-01 failed"
    # assess said replan -> a second plan; its step reusing a failed id was renamed.
    assert [e.iteration for e in of_type(events, "plan.created")] == [1, 2]
    assert [e.status for e in of_type(events, "plan.assessed")] == ["replan", "done"]
    assert brain.kinds() == [
        "Classification",
        "PlanGeneration",
        "step:S-01",
        "step:S-01",  # the empty answer is asked for once more
        "StatusAssessment",
        "PlanGeneration",
        "step:S-01.2",
        "StatusAssessment",
    ]
    assert session.context.get_goal(goal_id).status == "completed"
    assert one(events, "answer.final").text == "worked the other way"
    # The replan prompt showed the failure.
    replan_prompt = brain.user_prompts("PlanGeneration")[1]
    assert "S-01 [failed]" in replan_prompt and "S-02 [skipped]" in replan_prompt


async def test_iteration_bound_ends_exhausted_with_an_answer(make_session: SessionFactory) -> None:
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.add("PlanGeneration", plan(step("S-01", "first")), plan(step("S-02", "second")))
    brain.add("step:S-01", "one")
    brain.add("step:S-02", "two")
    brain.add("StatusAssessment", assess("replan", progress="low"))
    brain.add("complete", "Partial: one and two; not finished.")
    session = await make_session(brain, loop={"max_iterations": 2, "agentic_max_iterations": 1})
    events = await run_all(session, "an endless goal")

    assert [e.iteration for e in of_type(events, "iteration.started")] == [1, 2]
    # After iteration 2 the loop stops without asking again: straight to completion.
    assert brain.kinds() == [
        "Classification",
        "PlanGeneration",
        "step:S-01",
        "StatusAssessment",
        "PlanGeneration",
        "step:S-02",
        "complete",
    ]
    (complete_prompt,) = brain.user_prompts("complete")
    assert "S-01 [completed]" in complete_prompt
    goal_id = one(events, "answer.final").goal_id
    goal = session.context.get_goal(goal_id)
    assert goal.status == "completed" and goal.report == "iteration limit reached"
    assert one(events, "answer.final").text == (
        "Partial: one and two; not finished.\n\n"
        "_Stopped at the iteration limit (2); the goal may be incomplete._"
    )


async def test_loop_result_status_exhausted(make_session: SessionFactory) -> None:
    """StrangeLoop.run itself reports 'exhausted' when the bound is hit."""
    brain = Brain()
    brain.add("PlanGeneration", plan(step("S-01")), plan(step("S-02")))
    brain.add("step:S-01", "a")
    brain.add("step:S-02", "b")
    brain.add("StatusAssessment", assess("continue"))
    brain.add("complete", "limit reached: a, b")
    session = await make_session(brain)
    thread = await session.context.create_thread("t")
    goal = await session.context.create_goal("never done", thread_id=thread.id)
    await session.context.activate_goal(goal.id, loop_id=f"{goal.id}-L1")
    result = await session.runner.loop.run(
        goal_id=goal.id, loop_id=f"{goal.id}-L1", thread_id=thread.id, max_iterations=2
    )
    assert result.status == "exhausted"
    assert result.iterations == 2
    assert result.answer == "limit reached: a, b"
    assert brain.kinds()[-1] == "complete"
    assert "iteration limit was reached" in brain.system_prompts()[-1]


async def test_replan_that_reuses_ids_keeps_short_dependencies(
    make_session: SessionFactory,
) -> None:
    """Small models restart at S-01 when they replan and name dependencies by number: the
    steps renamed to avoid the old ids must still wait for each other."""
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.add(
        "PlanGeneration",
        plan(step("S-01", "broken way")),
        plan(
            step("S-01", "gather again"),
            step("S-02", "use it", ["01"]),
            step("S-03", "check it", ["02"]),
        ),
    )
    brain.add("step:S-01", "")  # fails
    brain.add("desc:gather again", "found 42")
    brain.add("desc:use it", "used 42")
    brain.add("desc:check it", "checked 42")
    brain.add(
        "StatusAssessment", assess("replan", progress="low"), assess("done", completion=False)
    )
    session = await make_session(brain)
    events = await run_all(session, "gather and use")

    replan = next(e for e in of_type(events, "plan.created") if e.iteration == 2)
    first, second, third = (s.id for s in replan.steps)
    assert first != "S-01"  # the failed S-01's id is not reused
    goal_id = one(events, "answer.final").goal_id
    assert session.context.step_dag(goal_id).get(second).dropped_dependencies == ()
    started = {e.step_id: e for e in of_type(events, "step.started")}
    completed = {e.step_id: e for e in of_type(events, "step.completed")}
    assert started[second].seq > completed[first].seq
    assert started[third].seq > completed[second].seq
    assert not of_type(events, "step.skipped")  # "02" did not become ambiguous
    assert "found 42" in brain.step_prompts(second)[0]
    assert one(events, "answer.final").text == "checked 42"
