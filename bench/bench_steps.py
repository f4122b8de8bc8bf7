"""Figures for the checkpointed step graph (issue 14): overhead per tool round with a
zero-latency scripted model, checkpoint database growth per step, and its pruning when
a thread is deleted. Prints figures; asserts nothing about speed.

    .venv/bin/python bench/bench_steps.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROUNDS = 8
STEPS = 20


async def main() -> None:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from soothe.engine.agent.core import CoreAgent
    from soothe.engine.agent.journal import prune_thread
    from soothe.engine.agent.tools import ToolContextFactory
    from soothe.engine.bus import EventBus
    from soothe.engine.config import Settings
    from soothe.engine.llm.hub import ModelHub
    from soothe.engine.llm.scripted import ScriptedChatModel, ScriptedReply
    from soothe.engine.scope import Scope

    tmp = Path(tempfile.mkdtemp())
    ws = tmp / "ws"
    ws.mkdir()
    for i in range(ROUNDS):
        (ws / f"f{i}.txt").write_text(f"file {i}\n" * 20)

    def respond(messages: list, info: dict) -> object:
        n = sum(1 for m in messages if m.type == "tool")
        if info["tool_names"] and n < ROUNDS:
            call = {"name": "read_file", "args": {"path": f"f{n}.txt"}, "id": f"c{n}"}
            return ScriptedReply(tool_calls=[call])
        return "read every file"

    async def steps(saver: object, label: str, thread: str) -> float:
        settings = Settings()
        settings.tools.workspace = ws
        settings.loop.step_tool_budget = ROUNDS + 2
        bus = EventBus()
        hub = ModelHub(
            settings.model, bus, models={"default": ScriptedChatModel(responder=respond)}
        )
        factory = ToolContextFactory(settings, broker=None, bus=bus)
        agent = CoreAgent(hub, factory, settings, bus, checkpointer=saver)
        started = time.perf_counter()
        for s in range(STEPS):
            out = await agent.run_step(
                goal="read",
                step_id=f"S{s}",
                description="read the files",
                expected_output="",
                context_text="",
                evidence_text="",
                scope=Scope(thread, loop_id="G1-L1", goal_id="G1"),
            )
            assert out.ok and len(out.tool_outcomes) == ROUNDS, out
        took = time.perf_counter() - started
        per_round = took / (STEPS * (ROUNDS + 1)) * 1000
        print(
            f"{label:34} {took / STEPS * 1000:7.1f} ms/step  {per_round:5.2f} ms/model+tool round"
        )
        return per_round

    from langgraph.checkpoint.memory import InMemorySaver

    await steps(InMemorySaver(), "in-memory saver", "warm")  # warm-up (imports)
    mem = await steps(InMemorySaver(), "in-memory saver", "t-mem")
    db = tmp / "checkpoints.db"
    conn = await aiosqlite.connect(str(db))
    await conn.execute("PRAGMA journal_mode=WAL")
    if len(sys.argv) > 1:  # e.g. NORMAL: what an fsync per commit costs here
        await conn.execute(f"PRAGMA synchronous={sys.argv[1]}")
    saver = AsyncSqliteSaver(conn)
    await saver.setup()
    await conn.commit()
    await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    empty = db.stat().st_size
    disk = await steps(saver, "AsyncSqliteSaver, durability sync", "t-disk")
    await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (count,) = await (await conn.execute("SELECT count(*) FROM checkpoints")).fetchone()
    size = db.stat().st_size
    print(f"sqlite overhead vs in-memory: {disk - mem:+.2f} ms per round")
    print(
        f"checkpoint db: {(size - empty) / STEPS / 1024:.1f} KiB per step of {ROUNDS} tool rounds "
        f"({count // STEPS} checkpoints per step)"
    )
    await conn.close()
    prune_thread(db, tmp, "t-disk")
    conn = await aiosqlite.connect(str(db))
    (left,) = await (await conn.execute("SELECT count(*) FROM checkpoints")).fetchone()
    await conn.close()
    print(f"after deleting the thread: {left} checkpoints left (from {count})")


if __name__ == "__main__":
    asyncio.run(main())
