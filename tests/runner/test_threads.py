"""Threads across runs: continuing one, recalling another's findings, and `soothe threads`."""

from __future__ import annotations

from pathlib import Path

from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": False}


def only_thread(soothe) -> str:
    listing = soothe("threads")
    assert listing.code == 0
    (line,) = listing.out.splitlines()
    return line.split()[0]


def port_task(brain: Brain) -> None:
    """Script one simple request whose finding mentions port 8731."""
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Read the config"}]})
    brain.add(
        "step",
        FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "server.toml"}}]),
        "The server listens on port 8731.",
    )


def test_continuing_a_thread_shows_the_first_exchange(soothe, brain: Brain, stored) -> None:
    brain.add(
        "Classification",
        {"label": "quiz", "answer": "Paris."},
        {"label": "quiz", "answer": "About 2.1 million people."},
    )
    assert soothe("-p", "What is the capital of France?").out == "Paris.\n"
    thread = only_thread(soothe)

    result = soothe("-p", "And its population?", "--thread", thread)

    assert (result.code, result.out) == (0, "About 2.1 million people.\n")
    second = brain.prompts("Classification")[1]
    assert "user: What is the capital of France?\nassistant: Paris." in second
    assert second.rstrip().endswith("And its population?")
    db = stored()
    assert len(db.threads) == 1
    assert [role for role, _ in db.messages[thread]] == ["user", "assistant"] * 2


def test_memory_recalls_a_finding_of_another_thread(soothe, brain: Brain, env: Env, stored) -> None:
    (env.workspace / "server.toml").write_text("port = 8731\n")
    port_task(brain)
    assert soothe("-p", "Which port does the server config use?").code == 0
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Connect"}]})
    brain.add("step", "Connected to 8731.")

    result = soothe("-p", "Open a connection to the server port")

    assert result.code == 0
    planner = brain.prompts("PlanGeneration")[1]
    assert "## Recalled from earlier work" in planner
    assert "The server listens on port 8731." in planner
    db = stored()
    assert len(db.threads) == 2
    first, second = db.goals
    assert first.thread_id != second.thread_id
    recalled = [e for e in db.evidence[second.id] if e.summary.startswith("recalled")]
    (boot,) = [e for e in recalled if e.kind == "bootstrap"]
    assert boot.content == "The server listens on port 8731."
    assert first.thread_id in boot.summary


def test_threads_list_show_export_and_delete(
    soothe, brain: Brain, env: Env, tmp_path: Path, stored
) -> None:
    assert soothe("threads").out == "no threads yet\n"
    (env.workspace / "server.toml").write_text("port = 8731\n")
    port_task(brain)
    assert soothe("-p", "Which port does the server use?").code == 0
    brain.add("Classification", {"label": "quiz", "answer": "Hi!"})
    assert soothe("-p", "Hello there").code == 0

    listing = soothe("threads")
    assert listing.code == 0
    # id, date, time, goal count, title (no header when stdout is not a terminal)
    rows = [line.split(None, 4) for line in listing.out.splitlines()]
    assert len(rows) == 2
    by_title = {row[4]: row for row in rows}
    assert set(by_title) == {"Which port does the server use?", "Hello there"}
    port_thread = by_title["Which port does the server use?"][0]
    assert by_title["Which port does the server use?"][3] == "1"
    assert by_title["Hello there"][3] == "0"

    shown = soothe("threads", "show", port_thread)
    assert shown.code == 0
    text = shown.out
    assert text.startswith("# Which port does the server use?\n")
    assert "### ✓ G1 — Which port does the server use?" in text
    assert "| S-01 | completed | Read the config | The server listens on port 8731. |" in text
    assert "(tool, S-01) read_file(path=server.toml" in text
    assert "-> port = 8731" in text
    assert "Answer:\n\nThe server listens on port 8731." in text
    assert soothe("threads", "show", port_thread[:5]).out == text  # a unique prefix will do

    target = tmp_path / "report.md"
    exported = soothe("threads", "export", port_thread, "-o", str(target))
    assert (exported.code, exported.out) == (0, f"wrote {target}\n")
    assert target.read_text(encoding="utf-8") == text

    deleted = soothe("threads", "delete", port_thread)
    assert (deleted.code, deleted.out) == (0, f"deleted {port_thread}\n")
    assert port_thread not in soothe("threads").out
    db = stored()
    assert [t.title for t in db.threads] == ["Hello there"]
    assert db.goals == []
    # Its findings are gone from memory too: a new task recalls nothing.
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Connect"}]})
    brain.add("step", "ok")
    assert soothe("-p", "Connect to the server port").code == 0
    assert "8731" not in brain.prompts("PlanGeneration")[-1]


def test_threads_errors_are_one_line(soothe) -> None:
    missing = soothe("threads", "show", "nope")
    assert (missing.code, missing.out) == (1, "")
    assert missing.err == "error: no thread 'nope' (see `soothe threads`)\n"
    no_id = soothe("threads", "export")
    assert no_id.code == 2 and no_id.err == "error: `soothe threads export` needs a thread id\n"
