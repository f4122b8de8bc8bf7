"""Grounded routing, the loader and the context every prompt gets, through ``soothe -p``
against the fake Ollama server: the assertions read what the server RECEIVED."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from soothe.engine.classify import echo_problem
from soothe.engine.events import parse_event
from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain, prompt_text, route
from tests.fakes.cli_harness import Env

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": True}


def tool(name: str, **args: object) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "args": args}])


def received(fake: Any) -> list[tuple[str, str]]:
    """(kind, every message's text) of each chat request the fake server received."""
    return [(route(body)[0], prompt_text(body)) for body in fake.chat_requests()]


def of_kind(fake: Any, prefix: str) -> list[str]:
    return [text for kind, text in received(fake) if kind.startswith(prefix)]


def workspace(env: Env) -> None:
    (env.workspace / "README.md").write_text("# Demo\nA demo project for the loader.\n")
    (env.workspace / "notes.txt").write_text("- tidy the docs\n- ship it\n")
    (env.workspace / "src").mkdir()
    (env.workspace / "src" / "app.py").write_text("print('hi')\n")


def test_list_the_files_never_takes_the_quiz_path(soothe, brain: Brain, env: Env, fake) -> None:
    workspace(env)
    # A small model's classic failure: a quiz label with a label word as the "answer".
    brain.add("Classification", {"label": "quiz", "answer": "trivial"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "List the files"}]})
    brain.step("S-01", "README.md, notes.txt and src/app.py.")

    result = soothe("-p", "List the files in this folder", "--json")

    assert result.code == 0, result.err
    events = [parse_event(line) for line in result.out.splitlines()]
    (classified,) = [e for e in events if e.type == "classification"]
    assert classified.label == "simple" and not classified.answered
    assert "workspace task" in classified.reason
    answer = [e for e in events if e.type == "answer.final"][-1]
    assert answer.text == "README.md, notes.txt and src/app.py."
    kinds = [kind for kind, _ in received(fake)]
    assert kinds == ["Classification", "PlanGeneration", "step:S-01"]
    # The listing reached the plan and the step prompt although no tool was called.
    for prompt in (*of_kind(fake, "PlanGeneration"), *of_kind(fake, "step")):
        assert "## Workspace facts" in prompt
        for entry in ("README.md", "notes.txt", "src/", "src/app.py"):
            assert f"\n{entry}\n" in prompt, entry


def test_named_file_is_read_into_every_prompt(soothe, brain: Brain, env: Env, fake, stored) -> None:
    workspace(env)
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Give the first item"}]})
    brain.step("S-01", "The first item is: tidy the docs.")

    result = soothe("-p", "What is the first item in notes.txt?")

    assert (result.code, result.out) == (0, "The first item is: tidy the docs.\n")
    for prompt in (*of_kind(fake, "PlanGeneration"), *of_kind(fake, "step")):
        assert "file: notes.txt (26 chars)" in prompt
        assert "- tidy the docs\n- ship it" in prompt
    db = stored()
    (goal,) = db.goals
    boot = [e for e in db.evidence[goal.id] if e.kind == "bootstrap"]
    assert [e.summary.split(":")[0] for e in boot] == ["listing", "file"]
    assert boot[1].id == f"E-{goal.id}-2" and boot[1].content == "- tidy the docs\n- ship it\n"


def test_at_path_is_explicit_and_confined(
    soothe, brain: Brain, env: Env, fake, tmp_path: Path
) -> None:
    workspace(env)
    outside = tmp_path / "secret.txt"
    outside.write_text("TOP SECRET VALUE\n")
    brain.add("Classification", {"label": "quiz", "answer": "I cannot see files."})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Compare"}]})
    # The answer rests on what notes.txt holds (an answer about named files must, on every
    # profile: issue 31).
    answer = "Only notes.txt could be read: it says to tidy the docs and ship it."
    brain.step("S-01", answer)

    request = f"Compare @notes.txt with @{outside} and @../secret.txt and @gone.md"
    result = soothe("-p", request)

    assert (result.code, result.out) == (0, answer + "\n")
    (step,) = of_kind(fake, "step")
    assert "- tidy the docs" in step
    assert "missing: gone.md" in step and "gone.md: not found in the workspace" in step
    assert "missing: ../secret.txt" in step
    assert all("TOP SECRET" not in text for _, text in received(fake))


def test_agents_md_and_the_skill_reach_every_step_prompt(
    soothe, brain: Brain, env: Env, fake
) -> None:
    workspace(env)
    (env.workspace / "AGENTS.md").write_text("House rule: answer in exactly one sentence.\n")
    skill = env.workspace / ".soothe" / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("# tidy\nSort every list alphabetically.\n")
    brain.add(
        "PlanGeneration",
        {
            "steps": [
                {"id": "S-01", "description": "Read the notes"},
                {"id": "S-02", "description": "Sort them", "dependencies": ["S-01"]},
            ]
        },
    )
    brain.step("S-01", tool("read_file", path="notes.txt"), "two items")
    brain.step("S-02", "ship it; tidy the docs")
    brain.add("StatusAssessment", DONE)
    brain.add("complete", "Sorted: ship it, tidy the docs.")

    result = soothe("-p", "/skill:tidy the notes")

    assert (result.code, result.out) == (0, "Sorted: ship it, tidy the docs.\n")
    kinds = [kind for kind, _ in received(fake)]
    assert kinds == [
        "PlanGeneration",
        "step:S-01",
        "step:S-01",
        "step:S-02",
        "StatusAssessment",
        "complete",
    ]
    for kind, prompt in received(fake):
        assert "## Project instructions (AGENTS.md)" in prompt, kind
        assert "House rule: answer in exactly one sentence." in prompt, kind
        assert "## Skill instructions (tidy)" in prompt, kind
        assert "Sort every list alphabetically." in prompt, kind
        assert prompt.count("Sort every list alphabetically.") == 1, kind  # once, not twice


def test_instructions_file_under_dot_soothe(soothe, brain: Brain, env: Env, fake) -> None:
    (env.workspace / ".soothe").mkdir()
    (env.workspace / ".soothe" / "instructions.md").write_text("Prefer tabs.\n")
    brain.add("Classification", {"label": "complex"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Think"}]})
    brain.step("S-01", "thought")
    brain.add("StatusAssessment", DONE)
    brain.add("complete", "Done thinking.")

    result = soothe("-p", "Think about the meaning of tabs versus spaces")

    assert (result.code, result.out) == (0, "Done thinking.\n")
    for kind, prompt in received(fake):
        if kind != "Classification":
            assert "## Project instructions (.soothe/instructions.md)\nPrefer tabs." in prompt


def test_quiz_reply_echoing_trivial_is_rerouted(soothe, brain: Brain, fake) -> None:
    brain.add("Classification", {"label": "trivial", "answer": "trivial"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Greet back"}]})
    brain.step("S-01", "Hello! How can I help?")

    result = soothe("-p", "Hey there", "--json")

    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    (classified,) = [e for e in events if e["type"] == "classification"]
    assert classified["reason"] == "quiz answer rejected: the answer is the label word 'trivial'"
    assert [e["text"] for e in events if e["type"] == "answer.final"] == ["Hello! How can I help?"]
    assert [kind for kind, _ in received(fake)] == ["Classification", "PlanGeneration", "step:S-01"]


def test_a_plain_quiz_still_costs_one_call(soothe, brain: Brain, fake, stored) -> None:
    brain.add("Classification", {"label": "quiz", "answer": "Paris."})

    result = soothe("-p", "What is the capital of France?")

    assert (result.code, result.out) == (0, "Paris.\n")
    assert len(fake.chat_requests()) == 1
    assert stored().goals == []


def test_task_flag_and_prefix_force_the_task_path(soothe, brain: Brain, fake, stored) -> None:
    for args in (("-p", "What is 2+2?", "--task"), ("-p", "/task What is 2+2?")):
        brain.add("Classification", {"label": "quiz", "answer": "4"})
        brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Add"}]})
        brain.step("S-01", "2 + 2 = 4, checked.")

        result = soothe(*args)

        assert (result.code, result.out) == (0, "2 + 2 = 4, checked.\n"), args
    db = stored()
    assert [g.description for g in db.goals] == ["What is 2+2?", "What is 2+2?"]
    assert [t.title for t in db.threads] == ["What is 2+2?", "What is 2+2?"]
    assert [k for k, _ in received(fake)].count("PlanGeneration") == 2


def test_echo_problem_catches_labels_fields_and_schema() -> None:
    for junk in (
        "trivial",
        "Quiz.",
        '"simple"',
        "label",
        "{ { enum=",
        '"type": "string"',
        "properties",
        "answer: 4",
        "label=quiz",
    ):
        assert echo_problem(junk), junk
    for fine in ("4", "Paris.", "2 + 2 = 4.", "It is a simple idea, really.", "Hello!"):
        assert echo_problem(fine) is None, fine


async def test_bundle_summarises_the_whole_goal_dag() -> None:
    from soothe.engine.context import ContextEngine

    engine = await ContextEngine.open(":memory:")
    try:
        root = await engine.create_goal("Ship the release")
        parts = [await engine.create_goal(f"part {i}", parent_id=root.id) for i in range(1, 9)]
        far = await engine.create_goal("check the changelog", depends_on=[parts[7].id])
        loner = await engine.create_goal("an unrelated goal")
        for done in parts[:3]:
            await engine.activate_goal(done.id, loop_id="L")
            await engine.complete_goal(done.id, findings="ok")

        bundle = engine.project(parts[0].id)
    finally:
        await engine.close()

    assert bundle.dag.size == 10  # root, 8 parts, the changelog check; not the loner
    assert bundle.dag.counts == {"completed": 3, "pending": 7}
    listed = {g.id for g in bundle.goals}
    nearest = {g.id: g.relation for g in bundle.dag.nearest}
    assert not listed & set(nearest) and loner.id not in nearest
    assert len(nearest) <= 5 and all(r == "2 links away" for r in nearest.values())
    text = bundle.render()
    assert "## Goal DAG (10 connected goals: completed 3, pending 7)" in text
    assert far.id not in nearest  # three links away, behind nearer siblings


async def test_a_single_goal_has_no_dag_section() -> None:
    from soothe.engine.context import ContextEngine

    engine = await ContextEngine.open(":memory:")
    try:
        goal = await engine.create_goal("alone")
        text = engine.project(goal.id).render()
    finally:
        await engine.close()
    assert "Goal DAG" not in text and "Workspace facts" not in text


def test_summarize_readme_reads_the_readme(soothe, brain: Brain, env: Env, fake) -> None:
    workspace(env)
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Summarise"}]})
    brain.step("S-01", "A demo project for the loader.")

    result = soothe("-p", "Summarize README")

    assert (result.code, result.out) == (0, "A demo project for the loader.\n")
    (step,) = of_kind(fake, "step")
    assert "file: README.md (" in step and "A demo project for the loader." in step


def test_the_bootstrap_listing_counts_as_list_dir_does(tmp_path: Path) -> None:
    """The listing's summary names the root's entries as list_dir counts them, and the
    tree's paths apart (it had '60 entries' where list_dir said '15 entries')."""
    from soothe.engine.agent.fs_tools import list_dir
    from soothe.engine.agent.workspace import Workspace
    from soothe.engine.loader import MAX_LISTING, ground

    for n in range(3):
        (tmp_path / f"f{n}.txt").write_text("x")
    ws = Workspace(tmp_path)
    flat = dict(ground("list the files in this folder", ws, forced=True).facts())
    assert list_dir(ws, ".").splitlines()[0] == ".: 3 entries"
    assert [s for s in flat if s.startswith("listing")] == ["listing: . (3 entries)"]
    deep = tmp_path / "deep"
    deep.mkdir()
    for n in range(MAX_LISTING + 5):
        (deep / f"d{n:03}.txt").write_text("x")
    summaries = [s for s, _ in ground("list the files", ws, forced=True).facts()]
    assert f"listing: . (4 entries; the first {MAX_LISTING} paths of the tree)" in summaries
