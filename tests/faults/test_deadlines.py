"""Deadlines (issue 30, item 6): a model call, a run and a stalled server are bounded by
the client, whatever the server does. ``soothe -p`` runs as a subprocess against the
fake Ollama behaving as real servers do: streaming without end whatever ``num_predict``
asked, stalling after the headers or mid-stream, trickling a byte at a time.

Nothing here asserts on a duration: the subprocess gets a generous bound against a hang,
and the tests count what the server received and what the run reported.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from soothe.engine.llm.hub import CUT_NOTE, LIMIT_SLACK
from tests.fakes._base import FakeReply
from tests.fakes.cli_harness import Result, run_soothe
from tests.fakes.ollama_server import FakeOllamaServer
from tests.faults.harness import ONE_STEP, SIMPLE, TRACEBACK, Brain, Env, check_persisted

HANG_GUARD_S = 90.0
"""Longest a run may take before the test calls it a hang (never reached when fixed)."""


def run_cli(env: Env, *args: str, config: str = "", **variables: str) -> Result:
    """``soothe ARGS`` as a subprocess with a config file holding ``config`` and extra
    environment ``variables``, killed as a hang after HANG_GUARD_S."""
    return run_soothe(env, *args, config=config, timeout=HANG_GUARD_S, **variables)


def json_events(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def one_error(result: Result) -> str:
    assert TRACEBACK not in result.err + result.out, result.err
    lines = result.error_lines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, lines
    return errors[0]


def chat_kinds(brain: Brain) -> Counter[str]:
    return Counter(brain.kinds())


# --- the client stops a reply at its num_predict ------------------------------------------


def test_endless_stream_is_stopped_at_num_predict(
    brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    """A server that never sends ``done``: the step's reply is stopped by the client at
    its limit, read as cut (the note), and the run ends with that answer."""
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.step("S-01", FakeReply(text="The files: ", endless=True))
    r = run_cli(env, "-p", "list the files", config="[model.num_predict]\nstep = 40\n")
    assert r.code == 0, r.err
    answer = r.out.strip()
    assert answer.endswith(CUT_NOTE)
    assert 30 <= answer.count("tok") <= 40 + LIMIT_SLACK + 1
    assert chat_kinds(brain) == {"Classification": 1, "PlanGeneration": 1, "step:S-01": 1}
    assert fake.chat_requests()[-1]["options"]["num_predict"] == 40
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "completed"


def test_endless_thinking_is_counted_too(brain: Brain, fake: FakeOllamaServer, env: Env) -> None:
    """A thinking model that thinks for ever: its trace reaches the client as chunks
    without content (the field is dropped), and they count toward the limit all the
    same. The step call is stopped; the re-ask the step makes gets a real answer."""
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.step("S-01", FakeReply(endless=True, endless_thinking=True))
    brain.always["step"] = "a.txt and b.txt"
    r = run_cli(env, "-p", "list the files", "--json", config="[model.num_predict]\nstep = 30\n")
    assert r.code == 0, r.err
    events = json_events(r.out)
    assert events[-1]["type"] == "answer.final" and "a.txt" in events[-1]["text"]
    first_step = next(e for e in events if e["type"] == "usage" and e.get("step_id") == "S-01")
    assert 30 <= first_step["output_tokens"] <= 30 + LIMIT_SLACK + 1
    # Every call ended: no request was left streaming when the run finished.
    assert all(e["output_tokens"] <= 400 for e in events if e["type"] == "usage")


# --- a stalled server fails within one call's timeout -----------------------------------


@pytest.mark.parametrize(
    "stalled",
    [
        pytest.param(FakeReply(stall=True), id="after-the-headers"),
        pytest.param(FakeReply(stream_chunks=["Looking ", "at "], stall=True), id="mid-stream"),
        pytest.param(FakeReply(hang=True), id="before-the-headers"),
    ],
)
def test_stalled_server_fails_the_run_once(
    brain: Brain, fake: FakeOllamaServer, env: Env, stalled: FakeReply
) -> None:
    """Every step call stalls. The first one times out (no retry for a timeout) and the
    run fails there: no replanning whose steps would each wait the timeout again. The
    goal is suspended with its step pending, to resume once the server is back."""
    brain.always["Classification"] = SIMPLE
    brain.always["PlanGeneration"] = ONE_STEP
    brain.always["StatusAssessment"] = {"status": "continue", "goal_progress": "low"}
    brain.always["Reflection"] = {"what_failed": "the step", "try_next": "again"}
    brain.always["step"] = stalled
    brain.always["complete"] = "done"
    r = run_cli(env, "-p", "list the files", config="[model]\ntimeout = 1\n")
    assert r.code == 1
    line = one_error(r)
    assert "did not answer within 1s" in line and "model.timeout" in line
    assert chat_kinds(brain) == {"Classification": 1, "PlanGeneration": 1, "step:S-01": 1}
    assert len(fake.chat_requests()) == 3
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "suspended" and saved.steps[goal.id] == {"S-01": "pending"}


def test_trickling_server_hits_the_call_cap(brain: Brain, fake: FakeOllamaServer, env: Env) -> None:
    """A byte every 0.3 s never trips a 1 s read timeout; the call's wall-clock cap
    (model.call_timeout) ends it, once, and the run with it."""
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.always["step"] = FakeReply(text="a.txt", trickle=0.3)
    r = run_cli(env, "-p", "list the files", config="[model]\ntimeout = 1\ncall_timeout = 2\n")
    assert r.code == 1
    line = one_error(r)
    assert "did not finish its reply within 2s" in line and "model.call_timeout" in line
    assert chat_kinds(brain) == {"Classification": 1, "PlanGeneration": 1, "step:S-01": 1}
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "suspended"


# --- a run's deadline and its cap on model calls --------------------------------------------


def resume(env: Env, thread_id: str) -> Result:
    return run_cli(env, "-p", "", "--thread", thread_id)


def failed_on_a_run_limit(env: Env, r: Result, *named: str) -> tuple[Any, dict[str, Any]]:
    """The --json run failed on a run limit: exit 1, one ``error:`` line holding each of
    ``named``, run.failed of kind run_limit last, the goal suspended with S-01 pending.
    Returns (the goal, the run.failed event)."""
    assert r.code == 1
    line = one_error(r)
    assert all(part in line for part in named), line
    failed = json_events(r.out)[-1]
    assert failed["type"] == "run.failed" and failed["kind"] == "run_limit"
    saved = check_persisted(env.data_dir)
    (goal,) = saved.goals.values()
    assert goal.status == "suspended" and saved.steps[goal.id] == {"S-01": "pending"}
    return goal, failed


def test_run_deadline_fails_the_run_and_the_goal_resumes(
    brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    """A step that answers slowly (a chunk every 0.5 s, each one well within the read
    timeout) runs into the run's deadline: exit 1, run.failed saying so, the goal
    suspended; resumed with a higher deadline, it completes."""
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    slow = FakeReply(stream_chunks=[f"w{i} " for i in range(40)], chunk_delay=0.5)
    brain.step("S-01", slow, "a.txt and b.txt")
    r = run_cli(env, "-p", "list the files", "--json", SOOTHE_RUN__DEADLINE="3")
    goal, failed = failed_on_a_run_limit(env, r, "deadline of 3s", "run.deadline")
    assert "deadline of 3s" in failed["error"]
    shown = run_cli(env, "threads", "show", goal.thread_id)
    assert shown.code == 0, shown.err
    assert "suspended" in shown.out

    again = resume(env, goal.thread_id)
    assert again.code == 0, again.err
    assert "a.txt" in again.out
    saved = check_persisted(env.data_dir)
    assert saved.goals[goal.id].status == "completed"


def test_model_call_cap_fails_the_run_and_the_goal_resumes(
    brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    """A step that keeps calling tools runs into run.max_model_calls: the request that
    would pass the cap is never sent, the run fails honestly, the goal waits."""
    (env.workspace / "a.txt").write_text("alpha\n", encoding="utf-8")
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    looping = {"tool_calls": [{"name": "list_dir", "args": {"path": "."}}]}
    brain.step("S-01", looping)
    r = run_cli(env, "-p", "list the files", "--json", SOOTHE_RUN__MAX_MODEL_CALLS="3")
    goal, _ = failed_on_a_run_limit(env, r, "cap of 3 model calls", "run.max_model_calls")
    assert len(fake.chat_requests()) == 3  # the fourth was never sent

    brain.always["step"] = "a.txt"
    brain.always["StatusAssessment"] = {"status": "done", "goal_progress": "complete"}
    brain.always["complete"] = "The folder holds a.txt."
    again = resume(env, goal.thread_id)
    assert again.code == 0, again.err
    assert check_persisted(env.data_dir).goals[goal.id].status == "completed"


def test_token_cap_fails_the_run_and_the_goal_resumes(
    brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    """A step that keeps calling tools, each call ~3,000 tokens, runs into
    run.max_tokens (input + output of every call): exit 1, run.failed saying so, the
    goal suspended; resumed with the default cap, it completes."""
    (env.workspace / "a.txt").write_text("alpha\n", encoding="utf-8")
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    looping = FakeReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}], usage=(3000, 20))
    brain.always["step:S-01"] = looping
    r = run_cli(env, "-p", "list the files", "--json", SOOTHE_RUN__MAX_TOKENS="10000")
    goal, failed = failed_on_a_run_limit(env, r, "cap of 10,000 tokens", "run.max_tokens")
    assert "resume the thread" in failed["error"]
    # two calls of the plan, then steps until the charge passed 10,000: none after it
    charged = [u for u in json_events(r.out) if u["type"] == "usage"]
    spent = sum(u["input_tokens"] + u["output_tokens"] for u in charged)
    assert spent >= 10_000 and spent - 3020 < 10_000

    del brain.always["step:S-01"]
    brain.always["step"] = "a.txt"
    brain.always["StatusAssessment"] = {"status": "done", "goal_progress": "complete"}
    brain.always["complete"] = "The folder holds a.txt."
    again = resume(env, goal.thread_id)
    assert again.code == 0, again.err
    assert check_persisted(env.data_dir).goals[goal.id].status == "completed"


def test_run_settings_from_the_environment(env: Env) -> None:
    """The three run bounds are settings like the others (file, SOOTHE_RUN__* variables)."""
    r = run_cli(
        env,
        "config",
        "show",
        SOOTHE_RUN__DEADLINE="12.5",
        SOOTHE_RUN__MAX_MODEL_CALLS="7",
        SOOTHE_RUN__MAX_TOKENS="5000",
    )
    assert r.code == 0, r.err
    shown = json.loads(r.out)
    assert shown["run"] == {"deadline": 12.5, "max_model_calls": 7, "max_tokens": 5000}
    assert shown["model"]["call_timeout"] is None
