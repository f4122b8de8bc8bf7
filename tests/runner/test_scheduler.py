"""ctrl+r (Session.run_goals) goes through the engine's one scheduler: conflicting goals
run one after the other, never together, and none is left stuck active."""

from __future__ import annotations

from pathlib import Path

from soothe.engine.events import EventBase, GoalStatusChanged
from soothe.engine.session import Session
from tests.fakes.brain import Brain
from tests.loop.helpers import assess, make_settings, plan, step


async def test_run_goals_runs_conflicting_goals_one_after_the_other(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    brain = Brain()
    brain.add("PlanGeneration", *[plan(step("S-01", "do the goal"))] * 3)
    brain.step("S-01", *["done as asked"] * 3)
    brain.add("StatusAssessment", *[assess("done", progress="complete")] * 3)
    brain.add("complete", *["Done as asked."] * 3)
    settings = make_settings(tmp_path, ws, loop={"max_parallel_goals": 2})
    session = Session(
        settings, models={"default": brain.model()}, db_path=":memory:", checkpoint_path=":memory:"
    )
    await session.start()
    try:
        first = await session.add_goal("edit config.toml one way", priority=60)
        second = (
            await session.context.create_goal(
                "edit config.toml another way",
                priority=55,
                conflicts_with=[first],
                thread_id=session.thread_id,
            )
        ).id
        third = await session.add_goal("read the README", priority=50)

        active: set[str] = set()
        together: list[set[str]] = []

        def watch(event: EventBase) -> None:
            if isinstance(event, GoalStatusChanged) and event.goal_id:
                if event.to_status == "active":
                    active.add(event.goal_id)
                    together.append(set(active))
                else:
                    active.discard(event.goal_id)

        session.bus.add_listener(watch)
        outcome = await session.run_goals()

        assert outcome.ok, outcome.error
        statuses = {g: session.context.get_goal(g).status for g in (first, second, third)}
        assert statuses == {first: "completed", second: "completed", third: "completed"}
        assert not any({first, second} <= seen for seen in together)
        # Two slots: the goal that conflicts with nothing ran beside the first one.
        assert {first, third} in together
        assert set(outcome.goal_ids) == {first, second, third}
    finally:
        await session.close()


async def test_autonomous_sub_goals_the_model_marks_conflicting_never_run_together(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    brain = Brain()
    brain.add(
        "GoalDecomposition",
        {
            "subgoals": [
                {"key": "A", "description": "Edit config.toml one way", "priority": 60},
                {
                    "key": "B",
                    "description": "Edit config.toml another way",
                    "priority": 55,
                    "conflicts_with": ["A", "B", "Z"],  # itself and an unknown key: left out
                },
                {"key": "C", "description": "Read the README", "priority": 50},
            ]
        },
    )
    brain.add("PlanGeneration", *[plan(step("S-01", "do the goal"))] * 3)
    brain.step("S-01", *["done as asked"] * 3)
    brain.add("StatusAssessment", *[assess("done", progress="complete")] * 3)
    brain.add("complete", *["Done as asked."] * 3)
    settings = make_settings(tmp_path, ws, loop={"max_parallel_goals": 2})
    session = Session(
        settings, models={"default": brain.model()}, db_path=":memory:", checkpoint_path=":memory:"
    )
    await session.start()
    try:
        active: set[str] = set()
        together: list[set[str]] = []

        def watch(event: EventBase) -> None:
            if isinstance(event, GoalStatusChanged) and event.goal_id:
                if event.to_status == "active":
                    active.add(event.goal_id)
                    together.append(set(active))
                else:
                    active.discard(event.goal_id)

        session.bus.add_listener(watch)
        outcome = await session.run("Tidy the project", autonomous=True)

        assert outcome.ok, outcome.error
        subs = {g.description: g for g in session.context.list_goals() if g.parent_id}
        a = subs["Edit config.toml one way"]
        b = subs["Edit config.toml another way"]
        c = subs["Read the README"]
        assert b.conflicts_with == (a.id,) and a.conflicts_with == (b.id,)
        assert c.conflicts_with == ()
        assert {g.status for g in subs.values()} == {"completed"}
        assert not any({a.id, b.id} <= seen for seen in together)
        # Two slots: the sub-goal that conflicts with nothing ran beside the first one.
        assert {a.id, c.id} in together
    finally:
        await session.close()
