"""One request per test through ``soothe -p``, against the fake Ollama server."""

from __future__ import annotations

import io
import json

import pytest

from soothe.engine.events import parse_event
from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain, prompt_text
from tests.fakes.cli_harness import Env

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": False}


def tool(name: str, **args: object) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "args": args}])


def test_quiz_is_answered_in_one_model_call(soothe, brain: Brain, fake, stored) -> None:
    brain.add("Classification", {"label": "quiz", "answer": "4", "reason": "arithmetic"})

    result = soothe("-p", "What is 2+2?")

    assert (result.code, result.out, result.err) == (0, "4\n", "")
    assert len(fake.chat_requests()) == 1
    db = stored()
    assert [t.title for t in db.threads] == ["What is 2+2?"]
    assert db.goals == []  # a quiz creates no goal
    assert db.messages[db.threads[0].id] == [("user", "What is 2+2?"), ("assistant", "4")]


def test_simple_task_runs_one_tool_in_four_calls(soothe, brain: Brain, env: Env, stored) -> None:
    (env.workspace / "README.md").write_text("# Demo\n")
    brain.add("Classification", {"label": "simple", "reason": "one tool"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "List the files"}]})
    brain.step("S-01", tool("list_dir", path="."), "The workspace holds README.md.")

    result = soothe("-p", "Which files are in the workspace?")

    assert (result.code, result.out) == (0, "The workspace holds README.md.\n")
    assert brain.kinds() == ["Classification", "PlanGeneration", "step:S-01", "step:S-01"]
    tool_reply = brain.calls[3][1]["messages"][-1]
    assert tool_reply["role"] == "tool" and "README.md" in tool_reply["content"]
    db = stored()
    (goal,) = db.goals
    assert goal.status == "completed"
    assert goal.findings == "The workspace holds README.md."
    assert db.step_status(goal.id) == {"S-01": "completed"}
    kinds = [e.kind for e in db.evidence[goal.id]]
    assert kinds.count("tool") == 1 and "README.md" in db.evidence[goal.id][0].content


def test_multi_step_plan_runs_in_dependency_order(soothe, brain: Brain, env: Env, stored) -> None:
    (env.workspace / "README.md").write_text("Soothe says hello.\n")
    brain.add("Classification", {"label": "complex"})
    brain.add(
        "PlanGeneration",
        {
            "steps": [
                {"id": "S-01", "description": "List the files"},
                {"id": "S-02", "description": "Read the README", "dependencies": ["S-01"]},
                {"id": "S-03", "description": "Summarise", "dependencies": ["S-02"]},
            ]
        },
    )
    brain.step("S-01", tool("list_dir", path="."), "one file: README.md")
    brain.step("S-02", tool("read_file", path="README.md"), "it says hello")
    brain.step("S-03", "A README that greets.")
    brain.add("StatusAssessment", {**DONE, "require_goal_completion": True})
    brain.add("text", "The workspace has one README; it says hello.")

    result = soothe("-p", "List the files and summarise the README")

    assert (result.code, result.out) == (0, "The workspace has one README; it says hello.\n")
    steps = brain.prompts("step")
    order = [next(s for s in ("S-01", "S-02", "S-03") if f"Step {s}:" in p) for p in steps]
    assert order == ["S-01", "S-01", "S-02", "S-02", "S-03"]
    read_reply = brain.calls[5][1]["messages"][-1]  # S-02's second call carries the file
    assert read_reply["role"] == "tool" and "Soothe says hello." in read_reply["content"]
    # The completion call sees every step's result.
    completion = brain.prompts("text")[0]
    assert "one file: README.md" in completion and "A README that greets." in completion
    db = stored()
    (goal,) = db.goals
    assert goal.status == "completed"
    assert db.step_status(goal.id) == {
        "S-01": "completed",
        "S-02": "completed",
        "S-03": "completed",
    }


def test_autonomous_runs_dependent_goals_in_order(soothe, brain: Brain, stored) -> None:
    brain.add(
        "GoalDecomposition",
        {
            "subgoals": [
                {"key": "A", "description": "Find the version number"},
                {
                    "key": "B",
                    "description": "Write the changelog line",
                    "depends_on": ["A"],
                    "informs": ["A"],
                },
            ]
        },
    )
    brain.add(
        "PlanGeneration",
        {"steps": [{"id": "S-01", "description": "Look up the version"}]},
        {"steps": [{"id": "S-01", "description": "Write the line"}]},
    )
    brain.add("step", "The version is 7.4.1", "Changelog: release 7.4.1")
    brain.add("StatusAssessment", DONE, DONE)

    result = soothe("-p", "Prepare the release notes", "--autonomous", "--json")

    assert result.code == 0, result.err
    events = [parse_event(line) for line in result.out.splitlines()]
    assert events[-1].type == "answer.final"
    report = next(e for e in events if e.type == "report.final")
    assert [g["status"] for g in report.goals] == ["completed"] * 3
    created = {e.description: e.goal_id for e in events if e.type == "goal.created"}
    first, second = created["Find the version number"], created["Write the changelog line"]
    seq = {(e.goal_id, e.to_status): e.seq for e in events if e.type == "goal.status_changed"}
    assert seq[(first, "completed")] < seq[(second, "active")]
    # The second goal's planner reads the first goal's finding.
    assert "7.4.1" in brain.prompts("PlanGeneration")[1]
    db = stored()
    goals = {g.id: g for g in db.goals}
    assert goals[second].depends_on == (first,)
    assert goals[second].started_at >= goals[first].finished_at
    root = next(g for g in db.goals if g.parent_id is None)
    assert root.status == "completed" and "7.4.1" in root.findings


def test_clarification_auto_answers_without_asking(soothe, brain: Brain, stored) -> None:
    brain.add("Classification", {"label": "complex"})
    brain.add(
        "PlanGeneration",
        {
            "steps": [
                {
                    "id": "S-01",
                    "kind": "ask_user",
                    "description": "Ask for the language",
                    "questions": ["Which language?"],
                },
                {"id": "S-02", "description": "Write hello", "dependencies": ["S-01"]},
            ]
        },
    )
    brain.step("S-02", "print('hello')")
    brain.add("StatusAssessment", DONE)

    result = soothe("-p", "Write a hello world", "--clarify", "auto", "--json")

    assert result.code == 0, result.err
    types = [json.loads(line)["type"] for line in result.out.splitlines()]
    assert "clarification.requested" not in types
    assert json.loads(result.out.splitlines()[-1])["text"] == "print('hello')"
    assert "use your best judgement" in brain.prompts("step")[0]
    db = stored()
    (goal,) = db.goals
    assert goal.status == "completed"
    assert any("clarification auto" in e.summary for e in db.evidence[goal.id])


def test_clarification_ask_without_a_terminal_assumes(soothe, brain: Brain, stored) -> None:
    """--clarify ask (the default) with no TTY on stdin: the request is answered 'auto'."""
    brain.add("Classification", {"label": "complex"})
    brain.add(
        "PlanGeneration",
        {"steps": [{"id": "S-01", "kind": "ask_user", "description": "Ask", "questions": ["?"]}]},
    )
    brain.add("StatusAssessment", DONE)

    result = soothe("-p", "Do what I mean", "--json")

    assert result.code == 0, result.err
    events = [parse_event(line) for line in result.out.splitlines()]
    answered = [e for e in events if e.type == "clarification.answered"]
    assert [a.outcome for a in answered] == ["auto"]
    statuses = [e.to_status for e in events if e.type == "goal.status_changed"]
    assert "awaiting_clarification" in statuses
    assert stored().goals[0].status == "completed"


def test_clarification_fail_policy_fails_the_step(soothe, brain: Brain, stored) -> None:
    brain.add("Classification", {"label": "complex"})
    ask = {"steps": [{"id": "S-01", "kind": "ask_user", "description": "Ask", "questions": ["?"]}]}
    brain.always["PlanGeneration"] = ask
    brain.always["StatusAssessment"] = {"status": "done", "goal_progress": "none"}
    brain.always["Reflection"] = {"what_failed": "no answer", "try_next": "ask again"}
    brain.always["text"] = "Could not proceed without an answer."

    result = soothe("-p", "Do what I mean", "--clarify", "fail", "--max-iterations", "1")

    # Every step failed: the goal is not completed, whatever the model's "done" said.
    assert result.code == 1 and result.err.startswith("error: the goal could not be completed")
    db = stored()
    assert db.goals[0].status == "failed"
    assert set(db.step_status(db.goals[0].id).values()) == {"failed"}
    assert "policy is 'fail'" in db.steps[db.goals[0].id][0].error


@pytest.mark.parametrize("approve", [False, True])
def test_write_needs_yes_without_a_terminal(
    soothe, brain: Brain, env: Env, approve: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOOTHE_LOOP__AGENTIC_MAX_ITERATIONS", "1")  # one round: no retry
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Write notes.txt"}]})
    brain.step("S-01", tool("write_file", path="notes.txt", content="hi"), "done")
    brain.always["complete"] = "notes.txt was not written."

    yes = ["--yes"] if approve else []
    result = soothe("-p", "Create notes.txt", *yes, "--json", "--max-iterations", "1")

    events = [parse_event(line) for line in result.out.splitlines()]
    (tool_result,) = [e for e in events if e.type == "step.tool_result"]
    assert tool_result.ok is approve
    assert (env.workspace / "notes.txt").exists() is approve
    if approve:
        assert result.code == 0, result.err
        return
    assert "--yes" in prompt_text(brain.calls[3][1])  # the step's call after the refusal
    # The refused write is the step's only change, so the step, and the goal, failed
    # (issue 31: it used to complete on the model's "done", exit 0).
    assert result.code == 1
    (failed,) = [e for e in events if e.type == "run.failed"]
    assert "the change did not happen: write_file(notes.txt): " in failed.error
    assert "--yes" in failed.error
    assert not [e for e in events if e.type == "answer.final"]


def test_json_stream_parses_and_ends_with_the_answer(soothe, brain: Brain) -> None:
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "List"}]})
    brain.step("S-01", tool("list_dir", path="."), "empty")

    result = soothe("-p", "What is here?", "--json")

    assert result.code == 0 and result.err == ""
    events = [parse_event(line) for line in result.out.splitlines()]
    types = [e.type for e in events]
    for expected in ("run.started", "classification", "goal.created", "plan.created"):
        assert expected in types
    assert types.count("answer.final") == 1 and types[-1] == "answer.final"
    assert events[-1].text == "empty"
    seqs = [e.seq for e in events[:-1]]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    thread_ids = {e.thread_id for e in events}
    assert len(thread_ids) == 1 and "" not in thread_ids


def test_progress_lines_go_to_a_terminal_stderr(
    soothe, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "List the files"}]})
    brain.step("S-01", tool("list_dir", path="."), "nothing")
    err = Tty()
    monkeypatch.setattr("sys.stderr", err)

    result = soothe("-p", "What is here?")

    assert (result.code, result.out) == (0, "nothing\n")
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("goal G")
    assert "plan (parallel): S-01" in lines
    assert "▸ S-01 List the files" in lines
    assert "  S-01 list_dir(path=.)" in lines
    assert any(line.startswith("✓ S-01 done") for line in lines)
    assert not any(line.startswith("error") for line in lines)


def test_skill_text_reaches_the_planner(soothe, brain: Brain, env: Env, stored) -> None:
    skill_dir = env.workspace / ".soothe" / "skills" / "review"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("# Code review\nAlways look for ZEBRA-42 markers.\n")
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "grep markers"}]})
    brain.step("S-01", tool("grep", pattern="ZEBRA-42", path="."), "No markers found.")
    brain.add("StatusAssessment", DONE)

    result = soothe("-p", "/skill:review the src folder")

    assert (result.code, result.out) == (0, "No markers found.\n")
    assert "Classification" not in brain.kinds()  # a skill invocation skips routing
    planner = brain.prompts("PlanGeneration")[0]
    assert "## Skill instructions" in planner and "ZEBRA-42" in planner
    assert stored().goals[0].description == "the src folder"


def test_unknown_skill_lists_the_known_ones(soothe, brain: Brain, env: Env) -> None:
    for name in ("review", "deploy"):
        (env.workspace / ".soothe" / "skills" / name).mkdir(parents=True)
        (env.workspace / ".soothe" / "skills" / name / "SKILL.md").write_text(f"# {name}\n")

    result = soothe("-p", "/skill:nope do it")

    assert result.code == 1 and result.out == ""
    assert result.err == "error: unknown skill 'nope'; known skills: deploy, review\n"
    assert brain.calls == []


def test_skills_command_lists_skills(soothe, env: Env) -> None:
    assert soothe("skills").out == "no skills found (add .soothe/skills/NAME/SKILL.md)\n"
    skill_dir = env.workspace / ".soothe" / "skills" / "review"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("---\n# Review code carefully\nbody\n")

    result = soothe("skills")

    assert result.code == 0
    name, summary = result.out.split(None, 1)
    assert name == "review" and summary.startswith("Review code carefully  (")
    assert str(skill_dir / "SKILL.md") in result.out


def test_a_call_approved_at_the_terminal_is_one_progress_line(
    soothe, brain: Brain, env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call is published again once approved (its tool node runs again): the
    progress shows it once, before the question (a trial saw it before and after)."""

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Write notes"}]})
    brain.step("S-01", tool("write_file", path="notes.txt", content="hi\n"), "Wrote notes.")
    brain.add("StatusAssessment", DONE)
    err = Tty()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr("sys.stdin", Tty("y\n"))

    result = soothe("-p", "Write notes")

    assert (result.code, result.out) == (0, "Wrote notes.\n")
    assert (env.workspace / "notes.txt").read_text() == "hi\n"
    text = err.getvalue()
    assert text.count("S-01 write_file(") == 1, text
    assert text.index("S-01 write_file(") < text.index("? allow write_file(")


def test_calls_of_two_steps_with_the_same_id_are_both_shown(
    soothe, brain: Brain, env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server may number tool-call ids per reply (call_0 in each): the progress keys a
    call by goal, step and id, until its result, and shows each step's call (a review
    found the second step's call hidden)."""

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("langchain_ollama.chat_models.uuid4", lambda: "call_0")
    (env.workspace / "README.md").write_text("hello\n")
    brain.add("Classification", {"label": "complex"})
    steps = [
        {"id": "S-01", "description": "List the files"},
        {"id": "S-02", "description": "Read the README", "dependencies": ["S-01"]},
    ]
    brain.add("PlanGeneration", {"steps": steps})
    brain.step("S-01", tool("list_dir", path="."), "one file")
    brain.step("S-02", tool("read_file", path="README.md"), "it says hello")
    brain.add("StatusAssessment", DONE)
    err = Tty()
    monkeypatch.setattr("sys.stderr", err)

    result = soothe("-p", "List and read")

    assert result.code == 0
    text = err.getvalue()
    assert "S-01 list_dir(" in text and "S-02 read_file(" in text, text
