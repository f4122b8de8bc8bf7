"""Per-goal budgets (issue 33, item 2), black box: ``soothe -p`` in-process against the
fake Ollama. A goal that reaches a cap (tokens, calls, time) is suspended with the cap
named, the run fails honestly (exit 1, run.failed), the goal's stored spend is what the
server counted (prompt_eval_count + eval_count of each of its calls), and a resume with
a raised cap completes it."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from soothe.engine.goal_contract import GoalBudget
from tests.fakes._base import FakeReply
from tests.fakes.cli_harness import Result, read_store, spawn
from tests.fakes.ollama_server import FakeOllamaServer
from tests.faults.harness import ONE_STEP, SIMPLE, Brain, Env, check_persisted, wait_for

Soothe = Callable[..., Result]
LOOPING = FakeReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}], usage=(3000, 20))
"""A step reply that calls a tool again and again, each call 3,020 tokens by the server."""


def events(r: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in r.out.splitlines() if line.strip()]


def goal_tokens(fake: FakeOllamaServer, brain: Brain) -> int:
    """What the server counted for the goal's calls: every answered call but the first,
    the routing call (the only one not made for the goal)."""
    kinds = brain.kinds()
    assert kinds[0] == "Classification" and kinds.count("Classification") == 1, kinds
    return sum(p + o for p, o in fake.counted[1:])


def finish_when_resumed(brain: Brain) -> None:
    brain.always.pop("step:S-01", None)
    brain.always["step"] = "a.txt"
    brain.always["StatusAssessment"] = {"status": "done", "goal_progress": "complete"}
    brain.always["complete"] = "The folder holds a.txt."


def test_a_goal_at_its_token_cap_is_suspended_naming_it_and_resumes_with_a_raised_cap(
    brain: Brain,
    fake: FakeOllamaServer,
    env: Env,
    soothe: Soothe,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (env.workspace / "a.txt").write_text("alpha\n", encoding="utf-8")
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.always["step:S-01"] = LOOPING
    monkeypatch.setenv("SOOTHE_GOALS__BUDGET", "tokens=10k")  # the default of each goal
    r = soothe("-p", "list the files", "--json")
    assert r.code == 1, r.err
    line = r.one_error()
    assert "G1 suspended at its budget: tokens 10k" in line, line
    # the raise it offers: the cap hit, doubled and at least the spend plus the cap
    assert "resume it with a raised cap, e.g. --budget tokens=" in line, line
    failed = events(r)[-1]
    assert failed["type"] == "run.failed" and failed["kind"] == "goal_budget"
    saved = check_persisted(env.data_dir)
    goal = saved.goals["G1"]
    assert goal.status == "suspended"
    assert goal.budget == GoalBudget(tokens=10_000)
    # Its spend is what the server counted for its calls; the call past the cap was
    # never sent (the cap is asked before each call).
    assert goal.spent.tokens == goal_tokens(fake, brain)
    assert goal.spent.tokens >= 10_000 and goal.spent.tokens - 3020 < 10_000
    assert goal.spent.calls == len(fake.counted) - 1
    assert goal.spent.time_s > 0
    moves = [e for e in events(r) if e["type"] == "goal.status_changed"]
    assert moves[-1]["to_status"] == "suspended"
    assert moves[-1]["reason"] == "budget: tokens 10k"
    spends = [e for e in events(r) if e["type"] == "goal.spent"]
    assert spends and spends[-1]["spent"]["tokens"] <= goal.spent.tokens

    # A plain resume of a goal still at its cap stops at once, saying so again.
    sent = len(fake.counted)
    again = soothe("-p", "", "--thread", goal.thread_id)
    assert again.code == 1
    assert "G1 suspended at its budget: tokens 10k" in again.one_error()
    assert len(fake.counted) == sent  # no call was made

    # soothe goals resume: plainly, refused in one line while at the cap (it would stop
    # at once); with a cap raised too little, the same; raised, it is resumed.
    plain = soothe("goals", "resume", "G1")
    assert plain.code == 1
    line = plain.one_error()
    assert "G1 is still at its budget: tokens 10k" in line, line
    assert "soothe goals resume G1 --budget tokens=" in line, line
    assert soothe("goals", "resume", "G1", "--budget", "tokens=11k").code == 1
    raised = soothe("goals", "resume", "G1", "--budget", "tokens=40k", "--json")
    assert raised.code == 0, raised.err
    assert raised.json_lines()[-1]["status"] == "pending"
    shown = soothe("goals", "show", "G1", "--json").json_lines()[-1]
    assert shown["budget"] == {"calls": None, "tokens": 40_000, "time_s": None}, shown

    # Raised, it runs to the end; the spend goes on from where it was.
    finish_when_resumed(brain)
    done = soothe("-p", "", "--thread", goal.thread_id)
    assert done.code == 0, done.err
    after = check_persisted(env.data_dir).goals["G1"]
    assert after.status == "completed"
    assert after.spent.tokens == goal_tokens(fake, brain)
    assert after.spent.calls == len(fake.counted) - 1


def test_a_calls_cap_suspends_the_goal_before_the_call_past_it(
    brain: Brain, fake: FakeOllamaServer, env: Env, soothe: Soothe, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.always["step:S-01"] = LOOPING
    monkeypatch.setenv("SOOTHE_GOALS__BUDGET", "calls=3")
    r = soothe("-p", "list the files", "--json")
    assert r.code == 1
    assert "G1 suspended at its budget: calls 3" in r.one_error()
    goal = read_store(env.db_path).goals[0]
    assert goal.status == "suspended" and goal.spent.calls == 3
    assert len(fake.counted) == 4  # routing + the goal's three


def test_a_time_cap_counts_the_time_the_goal_runs(
    brain: Brain, fake: FakeOllamaServer, env: Env, soothe: Soothe, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    slow = FakeReply(
        tool_calls=[{"name": "list_dir", "args": {"path": "."}}],
        stream_chunks=["."] * 4,
        chunk_delay=0.2,
    )
    brain.always["step:S-01"] = slow
    monkeypatch.setenv("SOOTHE_GOALS__BUDGET", "time=1s")
    r = soothe("-p", "list the files", "--json")
    assert r.code == 1
    assert "G1 suspended at its budget: time 1s" in r.one_error()
    goal = read_store(env.db_path).goals[0]
    assert goal.status == "suspended" and goal.spent.time_s >= 1.0
    moves = [e for e in events(r) if e["type"] == "goal.status_changed"]
    assert moves[-1]["reason"] == "budget: time 1s"


def test_goals_add_takes_a_budget_or_the_default(
    env: Env, soothe: Soothe, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = soothe("goals", "add", "Sum up the README", "--budget", "calls=40,tokens=200k,time=30m")
    assert own.code == 0, own.err
    monkeypatch.setenv("SOOTHE_GOALS__BUDGET", "tokens=50k")
    default = soothe("goals", "add", "Count the files")
    assert default.code == 0, default.err
    bad = soothe("goals", "add", "Other", "--budget", "tokens=lots")
    assert bad.code == 2
    assert "--budget: bad budget 'tokens=lots'" in bad.one_error()
    wrong = soothe("goals", "show", "G1", "--budget", "tokens=1k")
    assert wrong.code == 2 and "--budget goes with" in wrong.one_error()
    goals = {g.id: g for g in read_store(env.db_path).goals}
    assert goals["G1"].budget == GoalBudget(calls=40, tokens=200_000, time_s=1800)
    assert goals["G2"].budget == GoalBudget(tokens=50_000)
    assert set(goals) == {"G1", "G2"}
    shown = soothe("goals", "show", "G1")
    assert "budget: calls=40,tokens=200k,time=30m" in shown.out, shown.out


def test_a_kill_mid_goal_keeps_its_spend(
    brain: Brain, fake: FakeOllamaServer, env: Env, soothe: Soothe
) -> None:
    """SIGKILL while the goal's fourth call is at the server: the spend of the three
    before it is on disk (stored before each call); reopened, the goal goes on and its
    spend ends as the server's count of every call it made."""
    (env.workspace / "a.txt").write_text("alpha\n", encoding="utf-8")
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.step("S-01", LOOPING, LOOPING, FakeReply(hang=True))
    proc = spawn(env, "-p", "list the files", SOOTHE_GOALS__BUDGET="tokens=1m")
    wait_for(brain.seen("step:S-01"), proc)
    until_calls = 4  # the plan and two step calls answered, the third hangs
    deadline = time.monotonic() + 20
    while len(brain.kinds()) < until_calls + 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(10) == -signal.SIGKILL
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]

    crashed = check_persisted(env.data_dir, idle=False).goals["G1"]
    assert crashed.status == "active"
    assert crashed.spent.calls == 3  # the plan, two step calls: the one in flight not yet
    assert crashed.spent.tokens == goal_tokens(fake, brain) > 6000
    assert crashed.budget == GoalBudget(tokens=1_000_000)

    finish_when_resumed(brain)
    r = soothe("-p", "", "--thread", crashed.thread_id)
    assert r.code == 0, r.err
    done = check_persisted(env.data_dir).goals["G1"]
    assert done.status == "completed"
    assert done.spent.tokens == goal_tokens(fake, brain)
    assert done.spent.calls == len(fake.counted) - 1
    assert done.spent.time_s > crashed.spent.time_s
