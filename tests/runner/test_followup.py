"""Follow-up requests in a thread (continuation intake) and grounding on every route,
through ``soothe -p`` against the fake Ollama server: the assertions read what the server
RECEIVED."""

from __future__ import annotations

from typing import Any

from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain, prompt_text, route
from tests.fakes.cli_harness import Env

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": True}
FINDING = "The first item is: tidy the docs."


def tool(name: str, **args: object) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "args": args}])


def received(fake: Any, since: int = 0) -> list[tuple[str, str]]:
    """(kind, every message's text) of each chat request the server received."""
    return [(route(body)[0], prompt_text(body)) for body in fake.chat_requests()[since:]]


def only_thread(soothe: Any) -> str:
    listing = soothe("threads")
    (line,) = listing.out.splitlines()
    return line.split()[0]


def read_notes(soothe: Any, brain: Brain, env: Env) -> str:
    """The first request of the thread: read notes.txt (one tool call); its thread id."""
    (env.workspace / "notes.txt").write_text("- tidy the docs\n- ship it\n")
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Read notes.txt"}]})
    brain.step("S-01", tool("read_file", path="notes.txt"), FINDING)
    first = soothe("-p", "Read notes.txt")
    assert (first.code, first.out) == (0, FINDING + "\n"), first.err
    return only_thread(soothe)


def test_follow_up_is_answered_from_the_thread_without_a_new_plan(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    thread = read_notes(soothe, brain, env)
    before = len(fake.chat_requests())
    brain.add("Classification", {"label": "simple"})
    brain.add("StatusAssessment", DONE)
    brain.add("complete", "It was: tidy the docs.")

    result = soothe("-p", "what was the first item again?", "--thread", thread)

    assert (result.code, result.out) == (0, "It was: tidy the docs.\n"), result.err
    calls = received(fake, before)
    assert [kind for kind, _ in calls] == ["Classification", "StatusAssessment", "complete"]
    assess = calls[1][1]
    # The earlier goal's finding and its tool evidence reach the assessment through the
    # projection (the conversation history alone holds only the answer).
    section = assess.split("## Findings from goals that inform this one", 1)[1]
    assert FINDING in section, section
    assert "tool @S-01: read_file(path=notes.txt" in section, section
    assert ") -> - tidy the docs - ship it" in section
    assert "## Recalled from earlier work" not in assess  # not twice
    db = stored()
    first, second = db.goals_of(thread)
    assert second.id in first.informs
    assert (first.status, second.status) == ("completed", "completed")
    assert db.steps[second.id] == []  # no plan was made for the follow-up


def test_follow_up_that_needs_work_still_plans_after_the_assessment(
    soothe, brain: Brain, env: Env, fake
) -> None:
    thread = read_notes(soothe, brain, env)
    before = len(fake.chat_requests())
    brain.add("Classification", {"label": "simple"})
    brain.add("StatusAssessment", {"status": "replan", "goal_progress": "none"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Count the items"}]})
    brain.step("S-01", "There are 2 items.")
    brain.add("StatusAssessment", DONE)
    brain.add("complete", "notes.txt has 2 items.")

    result = soothe("-p", "how many items are there in total?", "--thread", thread)

    assert (result.code, result.out) == (0, "notes.txt has 2 items.\n"), result.err
    kinds = [kind for kind, _ in received(fake, before)]
    assert kinds == [
        "Classification",
        "StatusAssessment",
        "PlanGeneration",
        "step:S-01.2" if "step:S-01.2" in kinds else "step:S-01",
        "StatusAssessment",
        "complete",
    ]
    plan = next(text for kind, text in received(fake, before) if kind == "PlanGeneration")
    assert FINDING in plan


def test_a_done_with_no_progress_is_not_believed_for_a_follow_up(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    thread = read_notes(soothe, brain, env)
    before = len(fake.chat_requests())
    brain.add("Classification", {"label": "simple"})
    brain.add(
        "StatusAssessment",
        {"status": "done", "goal_progress": "none"},  # rejected: plan instead
        DONE,
    )
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Answer"}]})
    brain.add("step", "tidy the docs")
    brain.add("complete", "tidy the docs")

    result = soothe("-p", "what was the first item again?", "--thread", thread)

    assert (result.code, result.out) == (0, "tidy the docs\n"), result.err
    kinds = [kind for kind, _ in received(fake, before)]
    assert kinds[:3] == ["Classification", "StatusAssessment", "PlanGeneration"]


def test_a_quiz_follow_up_still_costs_one_call(soothe, brain: Brain, env: Env, fake) -> None:
    thread = read_notes(soothe, brain, env)
    before = len(fake.chat_requests())
    brain.add("Classification", {"label": "quiz", "answer": "Paris."})

    result = soothe("-p", "What is the capital of France?", "--thread", thread)

    assert (result.code, result.out) == (0, "Paris.\n")
    assert [kind for kind, _ in received(fake, before)] == ["Classification"]


def test_a_new_thread_is_not_a_follow_up(soothe, brain: Brain, env: Env, fake) -> None:
    read_notes(soothe, brain, env)
    before = len(fake.chat_requests())
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Think"}]})
    brain.step("S-01", "A thought.")

    result = soothe("-p", "Think of something")

    assert (result.code, result.out) == (0, "A thought.\n")
    calls = received(fake, before)
    assert [kind for kind, _ in calls] == ["Classification", "PlanGeneration", "step:S-01"]
    assert all(FINDING not in text for _, text in calls[1:])


def test_failed_earlier_goal_informs_with_its_error(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    brain.add("Classification", {"label": "simple"})
    brain.always["PlanGeneration"] = {"steps": [{"id": "S-01", "description": "Open it"}]}
    brain.always["step"] = ""  # every step answer empty: the goal fails honestly
    brain.always["StatusAssessment"] = {"status": "replan", "goal_progress": "none"}
    brain.always["Reflection"] = {"what_failed": "empty answers", "try_next": "look"}
    brain.always["text"] = ""
    first = soothe("-p", "Open the vault", "--max-iterations", "2")
    assert first.code == 1
    thread = only_thread(soothe)
    (failed,) = stored().goals_of(thread)
    assert failed.status == "failed"
    before = len(fake.chat_requests())
    brain.add("Classification", {"label": "simple"})
    brain.always.clear()
    brain.add("StatusAssessment", DONE)
    brain.add("complete", "It failed: the steps gave no answer.")

    result = soothe("-p", "why did that not work?", "--thread", thread)

    assert result.code == 0, result.err
    assess = next(text for kind, text in received(fake, before) if kind == "StatusAssessment")
    section = assess.split("## Findings from goals that inform this one", 1)[1]
    assert f"### {failed.id} [failed]" in section and "(failed: " in section


# --- grounding on the autonomous route ----------------------------------------------


def test_autonomous_sub_goals_see_the_root_grounding(soothe, brain: Brain, env: Env, fake) -> None:
    (env.workspace / "notes.txt").write_text("- tidy the docs\n- ship it\n")
    (env.workspace / "AGENTS.md").write_text("House rule: answer in exactly one sentence.\n")
    skill = env.workspace / ".soothe" / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("# tidy\nSort every list alphabetically.\n")
    brain.add(
        "GoalDecomposition",
        {
            "subgoals": [
                {"key": "A", "description": "Sort the items"},
                {"key": "B", "description": "Write them back", "depends_on": ["A"]},
            ]
        },
    )
    brain.add(
        "PlanGeneration",
        {"steps": [{"id": "S-01", "description": "Sort"}]},
        {"steps": [{"id": "S-01", "description": "Write"}]},
    )
    brain.add("step", "ship it; tidy the docs", "written")
    brain.add("StatusAssessment", DONE, DONE)
    brain.add("complete", "Sorted.", "Written.")

    result = soothe("-p", "/skill:tidy the items of notes.txt", "--autonomous")

    assert result.code == 0, result.err
    calls = received(fake)
    kinds = [kind for kind, _ in calls]
    assert kinds.count("PlanGeneration") == 2 and kinds[0] == "GoalDecomposition"
    for kind, prompt in calls:
        assert "House rule: answer in exactly one sentence." in prompt, kind
        assert "## Skill instructions (tidy)" in prompt, kind
        assert prompt.count("Sort every list alphabetically.") == 1, kind
        assert "file: notes.txt (26 chars)" in prompt, kind
        assert "- tidy the docs\n- ship it" in prompt, kind


# --- grounding on the direct subagent route -----------------------------------------


async def test_direct_subagent_step_is_grounded(tmp_path) -> None:
    from soothe.engine.config import load_settings
    from soothe.engine.session import Session

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("- tidy the docs\n- ship it\n")
    (ws / "AGENTS.md").write_text("House rule: answer in exactly one sentence.\n")
    brain = Brain()
    brain.add("step", "tidy the docs")
    settings = load_settings(
        None,
        {
            "model": {"provider": "ollama", "name": "scripted"},
            "storage": {"data_dir": str(tmp_path / "data")},
            "tools": {"workspace": str(ws), "approval": "auto", "clarify": "auto"},
        },
    )
    session = Session(
        settings, models={"default": brain.model()}, db_path=":memory:", checkpoint_path=":memory:"
    )
    await session.start()
    try:
        thread = await session.ensure_thread("first item")
        outcome = await session.runner.run(
            "What is the first item of notes.txt?", thread, subagent="core"
        )
    finally:
        await session.close()

    assert outcome.ok and outcome.answer == "tidy the docs", outcome.error
    (step,) = brain.prompts("step")
    assert "House rule: answer in exactly one sentence." in step
    assert "file: notes.txt (26 chars)" in step and "- tidy the docs\n- ship it" in step
