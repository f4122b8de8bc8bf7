"""Consistent flags (issue 33 item 4): every subcommand takes the common flags of
``soothe -p`` it can honour, and refuses the others with one line naming the reason
(exit 2), never argparse's usage. One table-driven test over every (command, flag) pair,
and the flags newly honoured, each doing what it says: ``worker --workspace``, ``undo
--workspace``, ``threads --json``, ``skills --json``, ``worker --json``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from soothe.cli import COMMANDS, COMMON_FLAGS, FLAG_REFUSALS, build_sub_parser, flag_refusal
from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, Result

Soothe = Callable[..., Result]

# What each command refuses; every other common flag it takes. The reasons are in cli.py.
REFUSED = {
    "threads": "--workspace --provider --model --base-url --yes --clarify --max-iterations",
    "goals": "--provider --model --base-url --yes --clarify --max-iterations",
    "worker": "",
    "undo": "--provider --model --base-url --yes --clarify --max-iterations --json",
    "mcp": "--data-dir --workspace --provider --model --base-url --yes --clarify "
    "--max-iterations --json",
    "skills": "--data-dir --provider --model --base-url --yes --clarify --max-iterations",
    "doctor": "--workspace --yes --clarify --max-iterations --json",
    "config": "",
    "acp": "--workspace --json",
}

VALUES = {
    "--config": ["CONFIG"],
    "--data-dir": ["DATA"],
    "--provider": ["demo"],
    "--model": ["m"],
    "--base-url": ["http://127.0.0.1:9"],
    "--workspace": ["WS"],
    "--json": [],
    "--yes": [],
    "--clarify": ["auto"],
    "--max-iterations": ["3"],
    "--debug": [],
}


def test_the_table_covers_every_command_and_flag() -> None:
    assert set(FLAG_REFUSALS) == set(COMMANDS) == set(REFUSED)
    assert set(VALUES) == set(COMMON_FLAGS)


@pytest.mark.parametrize("flag", COMMON_FLAGS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_takes_or_refuses_each_common_flag(
    command: str, flag: str, soothe: Soothe, env: Env
) -> None:
    stand_in = {"CONFIG": str(env.home / "none.toml"), "DATA": str(env.data_dir)}
    stand_in["WS"] = str(env.workspace)
    value = [stand_in.get(v, v) for v in VALUES[flag]]
    refusal = flag_refusal(command, flag)
    assert (refusal is not None) == (flag in REFUSED[command].split()), (command, flag)
    if refusal is None:  # parsed as the command's own option, with its value
        args = build_sub_parser(command).parse_args([flag, *value])
        got = getattr(args, flag[2:].replace("-", "_"))
        assert got == (True if not value else type(got)(value[0])), (command, flag)
        return
    r = soothe(command, flag, *value, raw=True)
    assert (r.code, r.out) == (2, ""), r
    assert r.one_error() == f"error: {refusal}"
    assert refusal.startswith(f"soothe {command} does not take {flag}: ")
    assert "usage:" not in r.err


def test_a_refusal_reads_as_the_issue_says(soothe: Soothe) -> None:
    r = soothe("threads", "--workspace", ".", raw=True)
    assert r.one_error() == (
        "error: soothe threads does not take --workspace: threads are not tied to a folder"
    )
    assert r.code == 2
    before = soothe("--yes", "threads", raw=True)  # before the command: the same answer
    assert (before.code, before.one_error()) == (
        2,
        "error: soothe threads does not take --yes: it runs no request",
    )


def test_worker_workspace_is_the_tools_root(brain: Brain, env: Env, soothe: Soothe) -> None:
    """``soothe worker --workspace DIR``: the goal's tools read DIR, not the cwd (the
    harness's cwd is another folder); ``--json`` prints one object per goal and a summary."""
    elsewhere = env.home / "project"
    elsewhere.mkdir()
    (elsewhere / "note.txt").write_text("the note in the project folder\n")
    assert soothe("goals", "add", "read note.txt").out == "added G1\n"
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "read note.txt"}]})
    brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "note.txt"}}]),
        "note.txt holds one line.",
    )
    brain.add(
        "StatusAssessment",
        {"status": "done", "goal_progress": "complete", "require_goal_completion": True},
    )
    brain.always["complete"] = "The note is in the project folder."
    model = ["--provider", "ollama", "--base-url", env.url, "--model", "llama3.2"]
    r = soothe(
        "worker",
        "--workspace",
        str(elsewhere),
        "--idle-exit",
        "0",
        "--json",
        *model,
        "--data-dir",
        str(env.data_dir),
        raw=True,
    )
    assert r.code == 0, r
    lines = r.json_lines()
    assert lines[0] == {"goal": "G1", "status": "completed"}, (lines, brain.unscripted)
    assert set(lines[-1]) == {"worker", "goals", "calls"} and lines[-1]["goals"] == 1
    tool_results = [
        m["content"] for c in brain.calls for m in c.body["messages"] if m["role"] == "tool"
    ]
    assert any("the note in the project folder" in t for t in tool_results), tool_results


def _journal_change(env: Env, path: Path, thread: str, before: str, after: str) -> None:
    from soothe.engine.agent.journal import CallKey, Journal

    path.write_text(before)
    journal = Journal(env.data_dir / "journal.db")
    try:
        key = CallKey(thread, f"{thread}-L1", "G1", "S-01", call_id=path.name)
        entry = journal.begin(key, "write_file", path=path)
        path.write_text(after)
        journal.finish(entry, ok=True)
    finally:
        journal.close()


def test_undo_workspace_undoes_only_that_folders_files(env: Env, soothe: Soothe) -> None:
    inside, outside = env.home / "inside", env.home / "outside"
    inside.mkdir()
    outside.mkdir()
    env.data_dir.mkdir(parents=True, exist_ok=True)
    _journal_change(env, inside / "a.txt", "T-inside", "old a", "new a")
    _journal_change(env, outside / "b.txt", "T-outside", "old b", "new b")  # the latest

    listed = soothe("undo", "--list", "--workspace", str(inside))
    assert listed.code == 0, listed
    assert "a.txt" in listed.out and "b.txt" not in listed.out
    done = soothe("undo", "--workspace", str(inside))
    assert (done.code, done.out) == (0, f"restored {inside / 'a.txt'}\n")
    assert (inside / "a.txt").read_text() == "old a"
    assert (outside / "b.txt").read_text() == "new b"  # not in the folder: left alone
    again = soothe("undo", "--workspace", str(inside))
    assert again.out == f"thread T-inside: nothing to undo in {inside}\n"
    missing = soothe("undo", "--workspace", str(env.home / "nope"))
    assert (missing.code, missing.one_error()) == (
        2,
        f"error: --workspace {env.home / 'nope'}: no such directory",
    )


def test_threads_and_skills_json(env: Env, soothe: Soothe) -> None:
    assert soothe("goals", "add", "one").code == 0
    (row,) = soothe("threads", "--json").json_lines()
    assert set(row) == {"id", "title", "last_active", "goals"}
    assert (row["title"], row["goals"]) == ("goal queue", 1)
    shown = json.loads(soothe("threads", "show", row["id"], "--json").out)
    assert shown["id"] == row["id"] and "markdown" in shown
    skill = env.workspace / ".soothe" / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("Tidy the \x1b[2Jfolder.\n")
    (listed,) = soothe("skills", "--json").json_lines()
    assert (listed["name"], listed["summary"]) == ("tidy", "Tidy the \x1b[2Jfolder.")
    assert "\x1b" not in soothe("skills", "--json").out  # escaped by JSON: \u001b


def test_goals_workspace_ties_a_goal_to_a_folder(env: Env, soothe: Soothe) -> None:
    """``goals add --workspace DIR``: the goal is DIR's; ``list --workspace DIR`` shows
    DIR's goals; a worker working elsewhere leaves it, a worker in DIR runs it."""
    project = env.home / "project"
    project.mkdir()
    tied = soothe("goals", "add", "tidy the project", "--workspace", str(project), "--json")
    assert json.loads(tied.out)["workspace"] == str(project.resolve())
    assert soothe("goals", "add", "anywhere").out == "added G2\n"
    assert soothe("goals", "list").out.splitlines() == [
        f"G1     pending    p50  tidy the project (in {project.resolve()})",
        "G2     pending    p50  anywhere",
    ]
    mine = soothe("goals", "list", "--workspace", str(project))
    assert mine.out == "G1     pending    p50  tidy the project\n"
    shown = soothe("goals", "show", "G1").out
    assert f"  workspace: {project.resolve()}" in shown
    refused = soothe("goals", "cancel", "G1", "--workspace", str(project))
    assert (refused.code, refused.one_error()) == (
        2,
        "error: --workspace goes with `soothe goals add` and `soothe goals list`, "
        "not `soothe goals cancel`",
    )

    def worker(*where: str) -> list[str]:
        args = ["worker", "--provider", "demo", "--idle-exit", "0", "--data-dir"]
        r = soothe(*args, str(env.data_dir), *where, raw=True)
        assert r.code == 0, r
        return [line for line in r.out.splitlines() if line.startswith("G")]

    assert worker() == ["G2 completed"]  # the cwd is another folder: G1 is not its
    assert "G1     pending" in soothe("goals", "list").out
    assert worker("--workspace", str(project)) == ["G1 completed"]
