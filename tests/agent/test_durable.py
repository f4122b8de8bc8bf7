"""Durable, reversible steps: resume from the step checkpoint, approvals that survive a
restart, the journal and undo (issue 14)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiosqlite
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from soothe.engine.agent.core import CoreAgent
from soothe.engine.agent.journal import CallKey, Journal
from soothe.engine.agent.tools import ToolContextFactory
from soothe.engine.agent.undo import apply_undo, plan_undo
from soothe.engine.bus import EventBus
from soothe.engine.config import Settings
from soothe.engine.events import ApprovalRequested, ToolCalled
from soothe.engine.interact import InteractBroker
from soothe.engine.llm.hub import ModelHub
from soothe.engine.llm.scripted import ScriptedChatModel
from tests.agent.helpers import IDS, Recorder, approver
from tests.agent.test_core import run, tool_reply


@contextlib.asynccontextmanager
async def agent_on(
    ws: Path, db: Path, model: ScriptedChatModel, *, approval: str = "auto"
) -> AsyncIterator[tuple[CoreAgent, EventBus, InteractBroker]]:
    """A CoreAgent on the checkpoint file ``db`` (one 'process'), closed on exit."""
    settings = Settings()
    settings.tools.workspace = ws
    settings.tools.approval = approval  # type: ignore[assignment]
    bus = EventBus()
    broker = InteractBroker(bus)
    hub = ModelHub(settings.model, bus, models={"default": model})
    factory = ToolContextFactory(settings, broker=broker, bus=bus, approval_timeout=30)
    conn = await aiosqlite.connect(str(db))
    saver = AsyncSqliteSaver(conn)
    await saver.setup()
    journal = Journal(db.with_name("journal.db"))
    try:
        yield (
            CoreAgent(hub, factory, settings, bus, checkpointer=saver, journal=journal),
            bus,
            broker,
        )
    finally:
        journal.close()
        await conn.close()


def stall_after(n: int, replies: list[Any]) -> tuple[ScriptedChatModel, asyncio.Event]:
    """A model that gives ``replies`` and then never answers call ``n`` (0-based)."""
    reached = asyncio.Event()

    def respond(messages: list[Any], info: dict[str, Any]) -> Any:
        return replies[info["index"]]

    model = ScriptedChatModel(responder=respond)
    original = model._astream

    async def stalling(*args: Any, **kwargs: Any) -> Any:
        if len(model.calls) >= n:
            reached.set()
            await asyncio.Event().wait()
        async for chunk in original(*args, **kwargs):
            yield chunk

    object.__setattr__(model, "_astream", stalling)
    return model, reached


async def test_a_step_killed_between_tool_calls_resumes_from_its_checkpoint(
    ws: Path, tmp_path: Path
) -> None:
    db = tmp_path / "checkpoints.db"
    replies = [
        tool_reply("list_dir", {"path": "."}, call_id="a"),
        tool_reply("read_file", {"path": "README.md"}, call_id="b"),
    ]
    model, reached = stall_after(2, replies)
    async with agent_on(ws, db, model) as (agent, bus, _):
        rec = Recorder(bus)
        task = asyncio.create_task(run(agent))
        await asyncio.wait_for(reached.wait(), 10)
        task.cancel()  # the process dies while the 3rd model request is out
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert len(rec.of(ToolCalled)) == 2
    model2 = ScriptedChatModel(script=["A small demo project with docs and src."])
    async with agent_on(ws, db, model2) as (agent, bus, _):
        rec = Recorder(bus)
        out = await run(agent)
    assert out.ok and out.answer.startswith("A small demo project")
    assert rec.of(ToolCalled) == []  # no completed tool call ran again
    first = model2.calls[0].messages
    results = [m for m in first if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results] == ["a", "b"]
    assert "README.md" in results[0].content and "A small project." in results[1].content
    assert [o.call_id for o in out.tool_outcomes] == ["a", "b"]


async def test_a_finished_step_runs_again_as_a_new_attempt(ws: Path, tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.db"
    model = ScriptedChatModel(script=["first", "second"])
    async with agent_on(ws, db, model) as (agent, _, _):
        assert (await run(agent)).answer == "first"
        assert (await run(agent)).answer == "second"
        assert len(model.calls[1].messages) == 2  # a fresh start, not the old history


async def test_a_pending_approval_survives_a_restart(ws: Path, tmp_path: Path) -> None:
    db = tmp_path / "checkpoints.db"
    write = tool_reply("write_file", {"path": "new.txt", "content": "hi\n"}, call_id="w")
    model = ScriptedChatModel(script=[write])
    async with agent_on(ws, db, model, approval="ask") as (agent, bus, _):
        rec = Recorder(bus)
        task = asyncio.create_task(run(agent))
        while not rec.of(ApprovalRequested):
            await asyncio.sleep(0.01)
        task.cancel()  # quit with the dialog open
        with contextlib.suppress(asyncio.CancelledError):
            await task
        [first] = rec.of(ApprovalRequested)
    assert not (ws / "new.txt").exists()
    model2 = ScriptedChatModel(script=["wrote new.txt"])
    async with agent_on(ws, db, model2, approval="ask") as (agent, bus, broker):  # noqa: SIM117
        async with approver(bus, broker, "approve_once") as seen:
            out = await run(agent)
    [again] = seen
    assert (again.tool, again.path) == (first.tool, first.path) == ("write_file", "new.txt")
    assert out.ok and (ws / "new.txt").read_text() == "hi\n"
    [result] = [m for m in model2.calls[0].messages if isinstance(m, ToolMessage)]
    assert result.tool_call_id == "w" and "wrote 3 bytes" in result.content


async def test_a_write_interrupted_by_a_crash_is_reported_not_reapplied(
    ws: Path, tmp_path: Path
) -> None:
    db = tmp_path / "checkpoints.db"
    key = CallKey(IDS["thread_id"], IDS["loop_id"], IDS["goal_id"], IDS["step_id"], "w")
    journal = Journal(tmp_path / "journal.db")
    journal.begin(key, "write_file", path=ws / "README.md")  # started, never finished
    journal.close()
    write = tool_reply("write_file", {"path": "README.md", "content": "x"}, call_id="w")
    model = ScriptedChatModel(script=[write, "could not write"])
    async with agent_on(ws, db, model) as (agent, _, _):
        out = await run(agent)
    [tool] = out.tool_outcomes
    assert not tool.ok and "interrupted by a crash" in tool.output
    assert (ws / "README.md").read_text().startswith("# Demo")


async def test_undo_restores_bytes_and_mode_and_refuses_a_file_changed_since(
    ws: Path, tmp_path: Path
) -> None:
    db = tmp_path / "checkpoints.db"
    guide = ws / "docs" / "guide.md"
    os.chmod(guide, 0o640)
    before = {p: p.read_bytes() for p in (ws / "README.md", guide, ws / "src/pkg/core.py")}
    calls = [
        tool_reply("write_file", {"path": "new.txt", "content": "new\n"}, call_id="1"),
        tool_reply(
            "edit_file", {"path": "README.md", "old": "A small", "new": "A big"}, call_id="2"
        ),
        tool_reply("write_file", {"path": "docs/guide.md", "content": "rewritten\n"}, call_id="3"),
        tool_reply("run_shell", {"command": "echo hi > shell.txt"}, call_id="4"),
        "done",
    ]
    async with agent_on(ws, db, ScriptedChatModel(script=calls)) as (agent, _, _):
        assert (await run(agent)).ok
    assert (ws / "README.md").read_text().startswith("# Demo\nA big")
    core_stat = (ws / "src/pkg/core.py").stat()
    (ws / "README.md").write_text("edited by hand\n")  # someone else changed it since

    journal = Journal(tmp_path / "journal.db")
    try:
        report = apply_undo(journal, plan_undo(journal, IDS["thread_id"]))
        assert report.refused == [
            (str(ws / "README.md"), "changed by someone else since the agent wrote it")
        ]
        assert report.commands == ["echo hi > shell.txt"]
        assert not (ws / "new.txt").exists()
        assert guide.read_bytes() == before[guide] and (guide.stat().st_mode & 0o777) == 0o640
        assert (ws / "README.md").read_text() == "edited by hand\n"
        assert (ws / "src/pkg/core.py").stat().st_mtime_ns == core_stat.st_mtime_ns
        forced = apply_undo(journal, plan_undo(journal, IDS["thread_id"]), force=True)
        assert forced.restored == [str(ws / "README.md")]
        assert (ws / "README.md").read_bytes() == before[ws / "README.md"]
        assert plan_undo(journal, IDS["thread_id"])[0].tool == "run_shell"  # only it is left
    finally:
        journal.close()
