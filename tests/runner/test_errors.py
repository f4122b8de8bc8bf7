"""Failures a user meets: one ``error:`` line that says what to do, state kept for later."""

from __future__ import annotations

import json
import re
import threading

from soothe.engine.events import parse_event
from tests.fakes._base import FakeHTTPError
from tests.fakes.brain import Brain, prompt_text
from tests.fakes.cli_harness import Env

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": False}


def assert_one_error_line(err: str, *needles: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_server_down_names_the_url_and_the_fix(soothe, fake, env: Env, stored) -> None:
    fake.stop()

    result = soothe("-p", "What is 2+2?")

    assert result.code == 1 and result.out == ""
    assert_one_error_line(result.err, f"cannot reach Ollama at {env.url}", "ollama serve")
    db = stored()
    # the request never reached a model: no thread is left to list (issue 32 item 10)
    assert db.goals == [] and db.threads == [] and db.messages == {}


def test_server_down_with_json_ends_with_run_failed(soothe, fake, env: Env) -> None:
    fake.stop()

    result = soothe("-p", "What is 2+2?", "--json")

    assert result.code == 1
    events = [parse_event(line) for line in result.out.splitlines()]
    assert events[-1].type == "run.failed" and env.url in events[-1].error
    assert events[-1].kind == "unreachable"
    assert_one_error_line(result.err, "ollama serve")


def test_missing_model_says_ollama_pull(soothe, fake) -> None:
    result = soothe("-p", "What is 2+2?", "--model", "qwen9:7b")

    assert result.code == 1 and result.out == ""
    assert_one_error_line(result.err, "model 'qwen9:7b'", "ollama pull qwen9:7b")
    assert fake.chat_requests()[0]["model"] == "qwen9:7b"


def test_unknown_thread_fails_cleanly(soothe, brain: Brain) -> None:
    before = {t for t in threading.enumerate() if not t.daemon}

    result = soothe("-p", "hi", "--thread", "nope")
    as_json = soothe("-p", "hi", "--thread", "nope", "--json")

    assert result.code == 1 and result.out == ""
    assert_one_error_line(result.err, "no thread 'nope'", "soothe threads")
    assert as_json.code == 1
    assert json.loads(as_json.out.splitlines()[-1])["type"] == "run.failed"
    assert brain.calls == []
    # The database was closed: no aiosqlite thread is left to keep the process alive
    # (a closed connection's worker thread ends within its queue poll interval).
    leftover = {t for t in threading.enumerate() if not t.daemon} - before
    for t in leftover:
        t.join(timeout=2)
    assert [t.name for t in leftover if t.is_alive()] == []


def test_resuming_a_finished_thread_says_what_to_do(soothe, brain: Brain) -> None:
    brain.add("Classification", {"label": "quiz", "answer": "4"})
    assert soothe("-p", "What is 2+2?").code == 0
    thread = soothe("threads").out.split()[0]

    result = soothe("-p", "", "--thread", thread)

    assert result.code == 1
    assert_one_error_line(result.err, f"thread {thread} has nothing to resume", "-p TEXT")
    assert len(brain.calls) == 1


def test_model_failure_mid_run_suspends_the_goal_for_a_resume(soothe, brain: Brain, stored) -> None:
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Count the files"}]})
    brain.step("S-01", FakeHTTPError(500, "out of memory"))
    brain.add("StatusAssessment", FakeHTTPError(500, "out of memory"))

    failed = soothe("-p", "How many files are here?")

    assert failed.code == 1 and failed.out == ""
    assert_one_error_line(failed.err, "HTTP 500", "out of memory")
    db = stored()
    (goal,) = db.goals
    assert goal.status == "suspended"  # not left "active" with nothing running it
    assert db.step_status(goal.id) == {"S-01": "failed"}
    thread = goal.thread_id
    shown = soothe("threads", "show", thread).out
    assert "status: suspended" in shown

    def assess(body: dict) -> dict:
        finished = re.search(r"\[completed\]", prompt_text(body))
        return DONE if finished else {"status": "replan", "goal_progress": "low"}

    brain.add("StatusAssessment", assess, assess)
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Count again"}]})
    brain.add("step", "There are no files.")
    calls_before = len(brain.calls)

    resumed = soothe("-p", "", "--thread", thread)

    assert (resumed.code, resumed.out, resumed.err) == (0, "There are no files.\n", "")
    assert "Classification" not in brain.kinds()[calls_before:]
    db = stored()
    (goal,) = db.goals
    assert goal.status == "completed" and goal.findings == "There are no files."
    statuses = db.step_status(goal.id)
    assert list(statuses.values()) == ["completed"]  # the failed plan was replaced
