"""``soothe goals VERB`` on SQLite, in-process (issue 33 item 3): every verb, its --json,
its one ``error:`` line (an unknown id, a move the state does not allow, a cycle) and the
data-dir lock. The same scenario runs on PostgreSQL in tests/pg/test_goals_cli_pg.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from soothe.engine.context import ContextEngine
from soothe.engine.goal_contract import GoalBudget
from tests.fakes.cli_harness import Env, Result

Soothe = Callable[..., Result]
Opener = Callable[[], Awaitable[ContextEngine]]


async def seed(open_engine: Opener) -> None:
    """G1 completed (two steps, evidence, a criterion, a budget); G2 (after G1) failed
    for good: the states the CLI cannot make on its own."""
    context = await open_engine()
    try:
        g1 = await context.create_goal(
            "survey the logs",
            criteria=["names every log file"],
            budget=GoalBudget(calls=40, tokens=200_000),
        )
        await context.set_plan(
            g1.id,
            [
                {"id": "S-01", "description": "list the logs"},
                {"id": "S-02", "description": "sum them up", "dependencies": ["S-01"]},
            ],
            1,
        )
        await context.activate_goal(g1.id, loop_id="G1-L1")
        for step in ("S-01", "S-02"):
            await context.start_step(g1.id, step)
            await context.add_evidence(
                g1.id, kind="tool", summary=f"{step}: glob *.log -> 3 files", step_id=step
            )
            await context.complete_step(g1.id, step, summary="three logs")
        await context.complete_goal(g1.id, findings="three logs: a, b, c")
        g2 = await context.create_goal("fix what it found", depends_on=[g1.id])
        await context.activate_goal(g2.id, loop_id="G2-L1")
        await context.fail_goal(g2.id, error="the tests failed", allow_retry=False)
    finally:
        await context.close()


def every_verb(soothe: Soothe) -> None:
    """Each verb once or more, with its exact output, on the seeded store."""

    def ok(*args: str) -> str:
        r = soothe("goals", *args)
        assert r.code == 0 and r.err == "", (args, r)
        return r.out

    def refused(code: int, *args: str) -> str:
        r = soothe("goals", *args)
        assert (r.code, r.out) == (code, ""), (args, r)
        return r.one_error()

    assert ok("list").splitlines() == [
        "G1     completed  p50  survey the logs",
        "G2     failed     p50  fix what it found after G1",
    ]
    shown = json.loads(ok("show", "G1", "--json"))
    assert [(s["id"], s["status"], s["result"]) for s in shown["steps"]] == [
        ("S-01", "completed", "three logs"),
        ("S-02", "completed", "three logs"),
    ]
    assert [(e["id"], e["step_id"]) for e in shown["evidence"]] == [
        ("E-G1-1", "S-01"),
        ("E-G1-2", "S-02"),
    ]
    assert shown["criteria"] == [
        {"text": "names every log file", "verdict": None, "reason": "", "evidence": []}
    ]
    assert shown["budget"] == {"calls": 40, "tokens": 200000, "time_s": None}
    assert {k: shown["spent"][k] for k in ("calls", "tokens")} == {"calls": 0, "tokens": 0}
    assert (shown["status"], shown["findings"]) == ("completed", "three logs: a, b, c")
    text = ok("show", "g1")  # g1 and 1 name G1 too
    assert text.splitlines()[0] == "G1  completed  p50  survey the logs"
    assert "    · names every log file" in text
    assert "  budget: calls=40,tokens=200k; spent calls 0, tokens 0, time " in text
    assert "    S-02     completed sum them up" in text
    assert "    E-G1-1   tool       S-01: glob *.log -> 3 files" in text

    assert refused(1, "cancel", "G1") == "error: G1 is completed: it cannot be cancelled"
    assert refused(1, "show", "G9") == "error: no goal G9 (see `soothe goals list`)"
    assert refused(1, "retry", "G7") == "error: no goal G7 (see `soothe goals list`)"
    assert ok("retry", "G2") == "G2 pending\n"
    assert refused(1, "retry", "G2") == (
        "error: G2 is pending: it cannot be retried (only failed goals retry)"
    )
    added = json.loads(ok("add", "write the report", "--after", "G2", "--priority", "70", "--json"))
    assert {k: added[k] for k in ("id", "status", "depends_on", "priority")} == {
        "id": "G3",
        "status": "pending",
        "depends_on": ["G2"],
        "priority": 70,
    }
    assert refused(1, "depend", "G2", "--on", "G3") == (
        "error: G2 cannot depend on G3: that closes the cycle G2 -> G3 -> G2"
    )
    assert json.loads(ok("undepend", "G3", "--on", "G2", "--json"))["depends_on"] == []
    assert ok("depend", "G3", "--on", "G1") == "G3 waits for G1\n"
    assert ok("priority", "G3", "90") == "G3 priority 90\n"
    assert refused(2, "priority", "G3", "101") == "error: priority 101 is outside 0-100"
    assert ok("suspend", "G3", "--reason", "after lunch") == "G3 suspended\n"
    assert refused(1, "suspend", "G1") == "error: G1 is completed: it cannot be suspended"
    assert ok("resume", "G3") == "G3 pending\n"
    assert json.loads(ok("cancel", "G3", "--json"))["status"] == "cancelled"
    assert ok("cancel", "G3") == "G3 cancelled (no change)\n"
    assert refused(1, "remove", "G1") == "error: G1 cannot be removed: depended on by G2, G3"
    assert json.loads(ok("remove", "G3", "--json")) == {"removed": "G3"}
    rows = [json.loads(line) for line in ok("list", "--json").splitlines()]
    assert [(r["id"], r["status"]) for r in rows] == [("G1", "completed"), ("G2", "pending")]
    assert set(rows[0]) == {
        "id",
        "status",
        "description",
        "depends_on",
        "priority",
        "thread_id",
        "loop_id",
        "workspace",
    }


def _sqlite(env: Env) -> Opener:
    async def open_engine() -> ContextEngine:
        env.data_dir.mkdir(parents=True, exist_ok=True)
        return await ContextEngine.open(env.db_path)

    return open_engine


def test_every_goals_verb_on_sqlite(soothe: Soothe, env: Env) -> None:
    asyncio.run(seed(_sqlite(env)))
    every_verb(soothe)


def test_resume_of_a_pending_goal_and_usage_errors(soothe: Soothe) -> None:
    assert soothe("goals", "add", "one").out == "added G1\n"
    r = soothe("goals", "resume", "G1")
    assert (r.code, r.out) == (0, "G1 pending (no change)\n")
    usage = {
        ("show",): "`soothe goals show` needs ID (soothe goals show ID)",
        ("cancel", "G1", "G2"): "`soothe goals cancel` takes one ID (soothe goals cancel ID)",
        ("add",): "`soothe goals add` needs the goal's text",
        ("add", "two", "words"): "`soothe goals add` takes one text; 'words' is extra (quote it)",
        ("depend", "G1"): "`soothe goals depend` needs --on ID (soothe goals depend G1 --on G1)",
        ("priority", "G1"): "`soothe goals priority` takes ID and N (0-100): "
        "soothe goals priority G3 80",
        ("cancel", "G1", "--after", "G2"): "--after goes with `soothe goals add`, "
        "not `soothe goals cancel`",
        ("show", "G1", "--on", "G2"): "--on goes with `soothe goals depend` and "
        "`soothe goals undepend`, not `soothe goals show`",
        ("add", "two", "--priority", "120"): "priority 120 is outside 0-100",
    }
    for args, line in usage.items():
        r = soothe("goals", *args)
        assert (r.code, r.out) == (2, ""), (args, r)
        assert r.one_error() == f"error: {line}"
    assert soothe("goals", "list").out == "G1     pending    p50  one\n"  # nothing changed
    # an unknown verb: one error line and the verbs, not argparse's usage
    r = soothe("goals", "cancle", "G1")
    assert r.code == 2 and r.out == ""
    assert r.err.splitlines()[0] == "error: unknown goals verb 'cancle' (did you mean 'cancel'?)"
    assert r.err.splitlines()[1].startswith("verbs: list, add, show, cancel,")
    assert "usage:" not in r.err


def test_a_change_while_another_process_holds_the_data_dir_says_so(
    soothe: Soothe, env: Env
) -> None:
    """On SQLite one process writes: with the data dir held (the app, a worker) a change
    is one line naming the holder; list and show still read."""
    from soothe.engine.datalock import DataDirLock

    assert soothe("goals", "add", "one").code == 0
    held = DataDirLock(env.data_dir)
    held.acquire()  # another open file: flock refuses it as it would another process
    try:
        r = soothe("goals", "cancel", "G1")
        assert (r.code, r.out) == (1, "")
        assert r.one_error().startswith(f"error: the data dir {env.data_dir} is in use by soothe")
        assert soothe("goals", "list").out == "G1     pending    p50  one\n"
        assert soothe("goals", "show", "G1", "--json").code == 0
    finally:
        held.release()
    assert soothe("goals", "cancel", "G1").out == "G1 cancelled\n"


def test_help_names_every_goals_verb(capsys: pytest.CaptureFixture[str]) -> None:
    from soothe.cli import GOAL_VERBS, main

    with pytest.raises(SystemExit):
        main(["goals", "--help"])
    text = capsys.readouterr().out
    verbs = text.split("verbs:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in verbs[: len(GOAL_VERBS)]] == list(GOAL_VERBS)
    assert list(GOAL_VERBS) == [
        "list",
        "add",
        "show",
        "cancel",
        "retry",
        "suspend",
        "resume",
        "priority",
        "depend",
        "undepend",
        "remove",
    ]
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    (line,) = [row for row in top.splitlines() if row.startswith("  goals ")]
    for verb in GOAL_VERBS:
        assert verb in line.replace("(un)depend", "depend undepend"), verb


async def test_a_session_runs_only_the_goals_of_its_folder(tmp_path: Path) -> None:
    """The thread's ready goals (the app's run of /goal): one tied to another folder
    (goals add --workspace) waits for a worker or a session there."""
    from soothe.engine.config import load_settings
    from soothe.engine.session import Session

    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    overrides = {
        "model": {"provider": "demo"},
        "storage": {"data_dir": str(tmp_path / "data")},
        "tools": {"workspace": str(here)},
    }
    session = Session(load_settings(None, overrides))
    await session.start()
    try:
        context = session.context
        thread = await context.create_thread("queue")
        tied = await context.create_goal(
            "tidy there", thread_id=thread.id, workspace=str(there.resolve())
        )
        free = await context.create_goal("list the files", thread_id=thread.id)
        mine = await context.create_goal(
            "read here", thread_id=thread.id, workspace=str(here.resolve())
        )
        outcome = await session.runner.run_goals(thread.id)
        assert set(outcome.goal_ids) == {free.id, mine.id}, outcome
        assert context.get_goal(tied.id).status == "pending"
        assert context.get_goal(free.id).status == "completed"
    finally:
        await session.close()
