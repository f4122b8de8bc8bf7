"""A plan in dependency mode on the real Session against the fake Ollama server: the
ready steps of a wave stream at the same time (up to loop.max_parallel_steps), and a
step on one of them waits for the whole wave (issue 33 item 5)."""

from __future__ import annotations

from tests.app.real_harness import (
    Pause,
    Rig,
    assess,
    classify,
    plan,
    ready,
    send,
    settle,
    step,
    until,
    wait_event,
)


async def test_dependency_mode_streams_a_wave_together(rig: Rig) -> None:
    brain = rig.brain
    brain.add("Classification", classify("complex"))
    brain.add(
        "PlanGeneration",
        plan(
            step("S-01", "Name the first colour"),
            step("S-02", "Name the second colour"),
            step("S-03", "Join the colours", ["S-01"]),
            mode="dependency",
        ),
    )
    first = Pause(text="Red is the first colour of the list.", after=3)
    second = Pause(text="Blue is the second colour of the list.", after=3)
    brain.step("S-01", first)
    brain.step("S-02", second)
    brain.step("S-03", "Red and blue.")
    brain.add("StatusAssessment", assess("done", completion=False))
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Name two colours, then join them")
        await wait_event(first.reached, pilot)
        await wait_event(second.reached, pilot)  # one at a time, this never came
        await app.handler.wait_idle()
        await pilot.pause()
        goal = app.main.goal_tree.goal("G1")
        assert goal is not None
        assert [(s.id, s.status) for s in goal.steps] == [
            ("S-01", "active"),
            ("S-02", "active"),
            ("S-03", "pending"),
        ]
        first.release.set()  # S-03's dependency is done, but its wave is not

        def status(step_id: str) -> str:
            return app.session.context.step_dag("G1").steps[step_id].status

        await until(lambda: status("S-01") == "completed", pilot)
        await pilot.pause(0.3)
        assert (status("S-02"), status("S-03")) == ("active", "pending")
        assert "step:S-03" not in brain.kinds()
        second.release.set()
        await settle(app, pilot)
        assert brain.kinds()[-2:] == ["step:S-03", "StatusAssessment"]
        assert [(s.id, s.status) for s in app.main.goal_tree.goal("G1").steps] == [  # type: ignore[union-attr]
            ("S-01", "completed"),
            ("S-02", "completed"),
            ("S-03", "completed"),
        ]
        assert not brain.unscripted, brain.kinds()
