"""Done-when criteria and the verifier (issue 33 item 1), black box through ``soothe -p
--done-when`` against the fake Ollama server: what the server received (the verifier's
own request, its prompt) and what the run left in the store and printed.

* every criterion met: the goal goes validated, then completed;
* a criterion unmet: the goal is sent back with the verifier's reasons, which the next
  round's assessment reads; met the second time, it completes;
* unmet every time: the goal fails (exit 1) and its error names the criterion;
* evidence ids the model invented are dropped from the verdicts;
* a goal without criteria makes no verifier request (the same requests as before).
"""

from __future__ import annotations

from typing import Any

from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain, prompt_text, route
from tests.fakes.cli_harness import Env

NOTES = "- tidy the docs\n- ship it\n"
REQUEST = "Read notes.txt and list its items"
CRITERION = "the answer lists 'ship it'"
SECOND = "notes.txt was read"
DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": True}
ANSWER = "The items are: tidy the docs, ship it."


def tool(name: str, **args: object) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "args": args}])


def kinds(fake: Any) -> list[str]:
    return [route(body)[0] for body in fake.chat_requests()]


def of_kind(fake: Any, kind: str) -> list[str]:
    return [prompt_text(b) for b in fake.chat_requests() if route(b)[0] == kind]


def verdict(number: int, said: str, reason: str, *ids: str) -> dict[str, Any]:
    return {"number": number, "verdict": said, "reason": reason, "evidence": list(ids)}


def script(brain: Brain, *verifications: dict[str, Any]) -> None:
    """One goal that reads notes.txt and says it is done each round; the verifier's
    replies in order."""
    brain.add("Classification", {"label": "complex"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Read notes.txt"}]})
    brain.step("S-01", tool("read_file", path="notes.txt"), ANSWER)
    brain.always["StatusAssessment"] = DONE
    brain.always["complete"] = ANSWER
    brain.add("Verification", *verifications)


def moves(events: list[dict[str, Any]]) -> list[str]:
    return [e["to_status"] for e in events if e["type"] == "goal.status_changed"]


def test_every_criterion_met_validates_then_completes_and_invented_ids_are_dropped(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    (env.workspace / "notes.txt").write_text(NOTES)
    script(
        brain,
        {
            "criteria": [
                verdict(1, "met", "the answer names ship it", "E-G1-2", "E-G7-9"),
                verdict(2, "met", "read_file returned it", "[E-G1-2]", "E-G1-99"),
            ]
        },
    )

    result = soothe("-p", REQUEST, "--done-when", CRITERION, "--done-when", SECOND, "--json")

    assert result.code == 0, result.err
    events = result.json_lines()
    assert moves(events) == ["active", "validated", "completed"]
    (verified,) = [e for e in events if e["type"] == "goal.verified"]
    assert verified["met"] is True and verified["goal_id"] == "G1"
    (goal,) = stored().goals
    ids = [e.id for e in stored().evidence["G1"]]
    assert "E-G1-2" in ids and "E-G7-9" not in ids and "E-G1-99" not in ids
    assert [(c["text"], c["verdict"], c["evidence"]) for c in verified["criteria"]] == [
        (CRITERION, "met", ["E-G1-2"]),
        (SECOND, "met", ["E-G1-2"]),
    ]
    assert [(c.text, c.verdict, c.evidence) for c in goal.criteria] == [
        (CRITERION, "met", ("E-G1-2",)),
        (SECOND, "met", ("E-G1-2",)),
    ]
    assert goal.status == "completed"
    # one verifier request, after the completion; its prompt holds each criterion
    # (numbered) and the goal's evidence with its ids
    assert kinds(fake)[-2:] == ["complete", "Verification"]
    (asked,) = of_kind(fake, "Verification")
    assert f"1. {CRITERION}\n2. {SECOND}" in asked
    assert "## Done when (every one of these must hold)" in asked
    assert "[E-G1-2] bootstrap: file: notes.txt (26 chars)\n    - tidy the docs\n" in asked
    assert "[E-G1-3] tool @S-01: read_file(path=notes.txt" in asked
    assert ANSWER in asked
    # the planner's prompts carry the criteria too
    (assess,) = of_kind(fake, "StatusAssessment")
    assert f"1. {CRITERION}" in assess
    assert not brain.unscripted


def test_an_unmet_criterion_sends_the_goal_back_with_the_reason_then_it_completes(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    (env.workspace / "notes.txt").write_text(NOTES)
    script(
        brain,
        {"criteria": [verdict(1, "unmet", "the answer leaves out ship it")]},
        {"criteria": [verdict(1, "met", "now it names ship it", "E-G1-2")]},
    )

    result = soothe("-p", REQUEST, "--done-when", CRITERION, "--json")

    assert result.code == 0, result.err
    events = result.json_lines()
    assert moves(events) == ["active", "pending", "active", "validated", "completed"]
    sent_back = [e for e in events if e["type"] == "goal.status_changed"][1]
    assert "done-when not met" in sent_back["reason"] and CRITERION in sent_back["reason"]
    verified = [e for e in events if e["type"] == "goal.verified"]
    assert [e["met"] for e in verified] == [False, True]
    # the next round's assessment reads the verifier's reasons
    assessments = of_kind(fake, "StatusAssessment")
    assert len(assessments) == 2
    assert "[last check: unmet: the answer leaves out ship it]" in assessments[1]
    assert "done-when not met" in assessments[1]
    assert kinds(fake).count("Verification") == 2
    (goal,) = stored().goals
    assert goal.status == "completed" and goal.send_back_count == 1
    assert goal.criteria[0].verdict == "met"


def test_unmet_every_round_fails_the_goal_naming_the_criterion(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    (env.workspace / "notes.txt").write_text(NOTES)
    unmet = {"criteria": [verdict(1, "unmet", "ship it is missing")]}
    script(brain, *[unmet] * 3)

    result = soothe("-p", REQUEST, "--done-when", CRITERION)

    assert result.code == 1
    (line,) = result.error_lines()[-1:]
    assert line.startswith("error: ") and CRITERION in line, line
    assert kinds(fake).count("Verification") == 3  # one per round (3 rounds)
    (goal,) = stored().goals
    assert goal.status == "failed"
    assert goal.error.startswith("done-when not met: ") and CRITERION in goal.error
    assert "unmet: ship it is missing" in goal.error
    assert goal.criteria[0].verdict == "unmet"
    got = soothe("threads", "show", goal.thread_id)
    assert got.code == 0, got.err
    shown = got.out
    assert f"✗ {CRITERION}" in shown


def test_when_the_send_backs_run_out_the_goal_fails_naming_the_criterion(
    soothe, brain: Brain, env: Env, fake, stored, monkeypatch
) -> None:
    """With more rounds than send-backs (max_send_backs 3), the fourth unmet verdict finds
    none left: send_back_goal fails the goal, its error naming the criterion."""
    monkeypatch.setenv("SOOTHE_LOOP__AGENTIC_MAX_ITERATIONS", "6")
    (env.workspace / "notes.txt").write_text(NOTES)
    unmet = {"criteria": [verdict(1, "unmet", "ship it is missing")]}
    script(brain, *[unmet] * 4)

    result = soothe("-p", REQUEST, "--done-when", CRITERION, "--json")

    assert result.code == 1
    events = result.json_lines()
    assert moves(events) == ["active", "pending"] * 3 + ["active", "failed"]
    assert kinds(fake).count("Verification") == 4
    (goal,) = stored().goals
    assert goal.status == "failed" and goal.send_back_count == 3
    assert goal.error.startswith(f'sent back 3 times; done-when not met: "{CRITERION}"')
    assert result.json_lines()[-1]["type"] == "run.failed"
    assert CRITERION in result.json_lines()[-1]["error"]


def test_a_goal_without_criteria_makes_no_verifier_request(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    (env.workspace / "notes.txt").write_text(NOTES)
    script(brain)

    result = soothe("-p", REQUEST, "--json")

    assert result.code == 0, result.err
    assert kinds(fake) == [
        "Classification",
        "PlanGeneration",
        "step:S-01",
        "step:S-01",
        "StatusAssessment",
        "complete",
    ]
    events = result.json_lines()
    assert not [e for e in events if e["type"] == "goal.verified"]
    assert moves(events) == ["active", "validated", "completed"]
    (goal,) = stored().goals
    assert goal.criteria == () and goal.status == "completed"


def test_done_when_with_autonomous_is_refused_before_any_model_call(soothe, fake) -> None:
    result = soothe("-p", REQUEST, "--autonomous", "--done-when", CRITERION)
    assert result.code == 1
    assert result.error_lines()[-1] == (
        "error: done-when criteria go on one goal: not with --autonomous"
    )
    assert fake.chat_requests() == []


def test_done_when_without_p_is_refused(soothe) -> None:
    result = soothe("--done-when", "x")
    assert result.code == 2
    assert result.err.strip() == (
        "error: --done-when goes with -p TEXT (in the app: /goal TEXT --done-when ...)"
    )


def test_the_progress_line_of_a_verification() -> None:
    from soothe.engine.events import GoalVerified
    from soothe.engine.goal_contract import Criterion
    from soothe.frontends.headless import progress_line

    event = GoalVerified(
        goal_id="G1",
        criteria=[
            Criterion(text="a", verdict="met", evidence=("E-G1-2",)),
            Criterion(text="b\x1b[2J", verdict="unknown"),
        ],
    )
    assert progress_line(event) == "✓? G1 1 of 2 done-when criteria met"


def test_goals_add_takes_done_when_criteria(soothe, stored) -> None:
    result = soothe(
        "goals", "add", "Tidy the docs", "--done-when", "no TODO left", "--done-when", "it builds"
    )
    assert result.code == 0, result.err
    (goal,) = stored().goals
    assert [(c.text, c.verdict) for c in goal.criteria] == [
        ("no TODO left", None),
        ("it builds", None),
    ]
