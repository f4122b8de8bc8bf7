"""A real `soothe -p` process SIGKILLed in the middle of a step, between its tool calls,
then resumed with `soothe --thread ID -p ''` (issue 14): the step continues from its
checkpoint, the first request after the resume holds both earlier tool results, and no
tool call runs twice (the journal saw one write)."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable

from soothe.engine.agent.journal import Journal
from tests.fakes._base import FakeReply
from tests.fakes.ollama_server import FakeOllamaServer
from tests.faults.harness import SIMPLE, Brain, Env, Result, check_persisted, spawn, wait_for

Soothe = Callable[..., Result]
ONE_STEP = {"steps": [{"id": "S-01", "description": "read the notes, write out.txt"}]}


def test_sigkill_after_two_of_three_tool_calls_then_resume(
    soothe: Soothe, brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    (env.workspace / "notes.txt").write_text("hello\n")
    brain.add("Classification", SIMPLE)
    brain.add("PlanGeneration", ONE_STEP)
    brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "notes.txt"}}]),
        FakeReply(
            tool_calls=[{"name": "write_file", "args": {"path": "out.txt", "content": "one\n"}}]
        ),
        FakeReply(hang=True),  # the 3rd request of the step: the process dies waiting
    )
    third = threading.Event()
    count = [0]

    def on_step() -> None:
        count[0] += 1
        if count[0] == 3:
            third.set()

    brain.on("step:S-01", on_step)
    proc = spawn(env, "-p", "read the notes and write out.txt", "--yes")
    wait_for(third, proc)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(10) == -signal.SIGKILL
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    assert (env.workspace / "out.txt").read_text() == "one\n"
    crashed = check_persisted(env.data_dir, idle=False)
    (thread,) = crashed.threads
    (goal,) = crashed.goals.values()
    assert crashed.steps[goal.id] == {"S-01": "active"}
    before = len(brain.calls)

    brain.step("S-01", "notes.txt says hello; out.txt holds one line.")
    r = soothe("-p", "", "--thread", thread, "--json")
    assert r.code == 0, r.err
    events = [json.loads(line) for line in r.out.splitlines()]
    # Continued, not restarted: one more request of the same step, nothing planned again.
    assert brain.kinds()[before:] == ["step:S-01"]
    sent = brain.calls[before].body["messages"]
    results = [m["content"] for m in sent if m["role"] == "tool"]
    assert len(results) == 2
    assert "hello" in results[0] and "wrote 4 bytes to out.txt" in results[1]
    assert [e for e in events if e["type"] == "step.tool_call"] == []  # nothing ran again
    assert events[-1]["type"] == "answer.final"
    assert events[-1]["text"] == "notes.txt says hello; out.txt holds one line."
    journal = Journal(env.data_dir / "journal.db")
    try:
        writes = [e for e in journal.entries(thread) if e.tool == "write_file"]
    finally:
        journal.close()
    assert [(w.call_id != "", w.state) for w in writes] == [(True, "finished")]  # once
    resumed = check_persisted(env.data_dir)
    assert resumed.goals[goal.id].status == "completed"
    assert resumed.steps[goal.id] == {"S-01": "completed"}
