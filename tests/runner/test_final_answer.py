"""The goal's final answer is judged before the user gets it (``loop.answer_check``):
shape checks always, grounding in the workspace facts under the small profile, one
compact facts re-ask, then the facts themselves (marked) or an honest failure. Black box
through ``soothe -p`` against the fake Ollama server, plus the rules themselves."""

from __future__ import annotations

import json
import sqlite3

import pytest

from soothe.engine.agent.judge import RAW_MARK, no_answer_reason
from soothe.engine.context.models import EvidenceEntry
from soothe.engine.loop.answer_check import (
    facts_text,
    final_answer_problem,
    grounds_text,
    unwrap_json,
)
from soothe.engine.loop.planner import off_topic, plan_problems, repair_plan
from soothe.engine.loop.schemas import PlanGeneration
from soothe.engine.words import content_words
from tests.fakes.brain import Brain, prompt_text, route
from tests.fakes.cli_harness import Env

NOTES = "- tidy the docs\n- fix the build\n- ship it\n"
FACTS = f"listing: . (2 entries):\nREADME.md\nnotes.txt\n\nfile: notes.txt (42 chars):\n{NOTES}"
GOAL = "Read notes.txt and tell me the first item"


# --- the rules ---------------------------------------------------------------------------


def test_content_words_keep_subjects_and_drop_our_vocabulary() -> None:
    assert content_words("The first item is: tidy the docs (3 entries)") == {"tidy", "docs", "3"}
    assert content_words("see ./README.md and src/app.py") >= {"readme.md", "readme", "app"}
    assert content_words("List the files in this folder") == set()


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("", "empty answer"),
        ('{ "answer" : ", a nc-b6g8rgba" ,"tool" :"answer"}', "JSON instead of an answer"),
        ('{"tool": "read_file", "arguments": {"path": "notes.txt"}}', "a tool call written"),
        ("trivial", "the label or field name 'trivial'"),
        ('The answer has {"type": "string", "maxLength": 40}', "a fragment of our JSON schema"),
        ("### Step 1\n- [completed] Listing the files.\n- [execution_mode] plan", "context"),
    ],
)
def test_shapes_that_are_not_answers(answer: str, why: str) -> None:
    problem = final_answer_problem(answer, goal=GOAL, grounds=FACTS)
    assert problem is not None and why in problem


def test_grounding_applies_to_read_only_requests_under_the_small_profile() -> None:
    def check(answer: str, goal: str = GOAL, small: bool = True) -> str | None:
        return final_answer_problem(answer, goal=goal, grounds=FACTS, require_grounding=small)

    assert check("The first item is: tidy the docs.") is None
    assert check("There are 2 entries.", goal="How many entries are in this folder?") is None
    assert check("There are 3 entries.", goal="How many entries are in this folder?")
    ungrounded = "The goal is to read notes.txt. The plan was made by the plan assistant."
    assert check(ungrounded) == "it shares nothing with the workspace facts"
    assert check(ungrounded, small=False) is None  # a bigger model's prose is trusted
    assert check("Done.", goal="Create hello.py") is None  # a change reports an action
    assert final_answer_problem("No idea.", goal=GOAL, grounds="", require_grounding=True) is None


def test_an_answer_rests_on_the_files_the_request_named() -> None:
    def entry(n: int, kind: str, summary: str, content: str) -> EvidenceEntry:
        return EvidenceEntry(
            id=f"E-G1-{n}", goal_id="G1", n=n, kind=kind, summary=summary, content=content
        )  # type: ignore[arg-type]

    listing = entry(1, "bootstrap", "listing: . (2 entries)", "README.md\nnotes.txt")
    notes = entry(2, "bootstrap", "file: notes.txt (42 chars)", NOTES)
    rules = entry(3, "bootstrap", "instructions: AGENTS.md", "Always answer in French.")
    step = entry(4, "ledger", "S-01: junk", "junk")
    assert grounds_text([listing, rules, step]) == "README.md\nnotes.txt"
    assert grounds_text([listing, notes, rules, step]) == NOTES
    assert "French" not in facts_text([listing, notes, rules, step])
    # SmolLM2-135M's answer to GOAL: it names a listed file, not the named file's content.
    wrong = "The first item in the list is: README.md"
    grounds = grounds_text([listing, notes])
    assert final_answer_problem(wrong, goal=GOAL, grounds=grounds, require_grounding=True)


def test_a_wrapped_answer_is_unwrapped() -> None:
    assert unwrap_json('{"answer": "tidy the docs", "tool": "answer"}') == "tidy the docs"
    assert unwrap_json('```json\n{"text": "two files"}\n```') == "two files"
    assert unwrap_json('{"tool": "answer", "answer": "cut') == '{"tool": "answer", "answer": "cut'
    assert unwrap_json("plain") == "plain"


def test_off_topic_plan_steps_are_a_plan_problem_and_the_fallback_drops_them() -> None:
    topic = f"Read notes.txt, then say how many files there are\n{FACTS}"
    junk = "Write a function that takes a list of strings and returns the longest string."
    assert off_topic(junk, topic)
    for fine in ("Read notes.txt", "Count the entries and report the number", "Think"):
        assert not off_topic(fine, topic)
    wordless = PlanGeneration.model_validate({"steps": [{"id": "1", "description": "1. 2. 3."}]})
    assert plan_problems(wordless) == ["step 1 has no description"]
    assert no_answer_reason("][", []) == "no words"  # what the 135M step answered
    assert no_answer_reason("42", []) is None
    plan = PlanGeneration.model_validate({"steps": [{"id": "write_longest", "description": junk}]})
    assert plan_problems(plan, topic=topic) == [
        "step write_longest has nothing to do with the goal"
    ]
    assert plan_problems(plan) == []  # no topic (a bigger model's plan), no judgement
    asking = PlanGeneration.model_validate(
        {
            "steps": [
                {
                    "id": "S-01",
                    "description": "Ask about dates and budget",
                    "kind": "ask_user",
                    "questions": ["Which dates?"],
                }
            ]
        }
    )
    assert plan_problems(asking, topic="Plan a weekend in Lisbon") == []  # a question may be off it
    fixed, notes = repair_plan(plan, "Read notes.txt", topic=topic)
    assert [(s.id, s.description) for s in fixed.steps] == [("S-01", "Read notes.txt")]
    assert notes == [
        "dropped 1 step(s) off the goal's topic",
        "replaced the plan by one step that does the goal",
    ]


# --- end to end --------------------------------------------------------------------------

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": True}


def _notes(env: Env) -> None:
    (env.workspace / "notes.txt").write_text(NOTES)


def _kinds(fake: object) -> list[str]:
    return [route(body)[0] for body in fake.chat_requests()]  # type: ignore[attr-defined]


def _script(brain: Brain, step_answer: str = '{"tool": "answer"}') -> None:
    brain.add("Classification", {"label": "complex"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Read notes.txt"}]})
    brain.step("S-01", step_answer)
    brain.add("StatusAssessment", DONE)


def test_a_json_echo_final_answer_is_reasked_with_the_facts(
    soothe, brain: Brain, env: Env, fake
) -> None:
    _notes(env)
    _script(brain)
    # What SmolLM2-135M wrote (make test-real): the shim's tool-mode JSON, broken.
    brain.add("complete", '{ "answer" : ", a nc-b6g8\n}\n[E-G1-1] list: .\n{ " ,"tool" :"answer"}')
    brain.add("text", "The first item is: tidy the docs.")

    result = soothe("-p", GOAL, "--json")

    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    assert events[-1]["type"] == "answer.final"
    assert events[-1]["text"] == "The first item is: tidy the docs."
    assert _kinds(fake)[-2:] == ["complete", "text"]
    reask = prompt_text(fake.chat_requests()[-1])
    assert "Facts:" in reask and "tidy the docs" in reask and f"Request: {GOAL}" in reask
    assert not brain.leftover() and not brain.unscripted


def test_a_rejected_final_answer_falls_back_to_the_last_steps_answer(
    soothe, brain: Brain, env: Env, fake
) -> None:
    _notes(env)
    _script(brain, step_answer="The first item is: tidy the docs.")
    brain.add("complete", "trivial")

    result = soothe("-p", GOAL)

    assert (result.code, result.out) == (0, "The first item is: tidy the docs.\n"), result.err
    assert _kinds(fake)[-1] == "complete"  # no re-ask: the step had said it
    assert not brain.leftover() and not brain.unscripted


def test_no_answer_twice_gives_the_facts_marked_raw(
    soothe, brain: Brain, env: Env, fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOOTHE_MODEL__PROFILE", "small")
    _notes(env)
    _script(brain)
    brain.add("complete", "The goal is to read notes.txt. The plan was made by the planner.")
    brain.add("text", '{"tool": "answer"}')

    result = soothe("-p", GOAL)

    assert result.code == 0, result.err
    assert result.out.startswith(RAW_MARK)
    assert "- tidy the docs" in result.out  # what the loader read, shown as it is
    with sqlite3.connect(env.db_path) as db:
        (note,) = db.execute("SELECT content FROM ledger WHERE phase = 'verify'").fetchone()
    assert note.startswith("final answer rejected (it shares nothing with the workspace facts)")
    assert note.endswith("rejected (JSON instead of an answer); the facts are the answer")


def test_no_answer_and_no_facts_is_an_honest_failure(
    soothe, brain: Brain, env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOOTHE_LOOP__AGENTIC_MAX_ITERATIONS", "1")  # one round: no retry
    brain.add("Classification", {"label": "complex"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Think it over"}]})
    brain.step("S-01", "complex")
    brain.add("complete", "trivial")  # one iteration: no assessment, straight to the answer
    brain.add("text", "")

    result = soothe("-p", "Think about tabs versus spaces", "--json", "--max-iterations", "1")

    assert result.code == 1
    events = [json.loads(line) for line in result.out.splitlines()]
    assert events[-1]["type"] == "run.failed"
    assert "no answer" in events[-1]["error"], events[-1]
    assert not [e for e in events if e["type"] == "answer.final"]
    assert not brain.leftover() and not brain.unscripted
