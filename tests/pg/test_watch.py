"""A TUI's engine follows the goals other workers run: two engines on one PostgreSQL
database, a change by one shows up as the usual goal events on the other's bus after a
poll (context/watch.py), once each, and not in the watcher's transcript."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from soothe.engine.bus import EventBus
from soothe.engine.context import ContextEngine
from soothe.engine.context.store_pg import PgStore
from soothe.engine.context.transcript import TranscriptRecorder
from soothe.engine.context.watch import poll, watch_store


async def test_other_engines_changes_arrive_as_events(pg_dsn: str) -> None:
    worker = await ContextEngine.open(await PgStore.open(pg_dsn))
    bus = EventBus()
    seen: list[Any] = []
    bus.add_listener(seen.append)
    tui = await ContextEngine.open(await PgStore.open(pg_dsn), bus=bus)
    try:
        thread = await worker.create_thread("queue")
        a = await worker.create_goal("a", thread_id=thread.id)
        b = await worker.create_goal("b", depends_on=[a.id], thread_id=thread.id)
        assert await poll(tui, bus) and [e.type for e in seen] == ["goal.created"] * 2
        assert [e.goal_id for e in seen] == [a.id, b.id]
        assert seen[1].depends_on == [a.id] and seen[1].thread_id == thread.id
        seen.clear()
        assert await poll(tui, bus) == [], "nothing changed: no events"

        await worker.activate_goal(a.id)
        await worker.complete_goal(a.id, findings="found it")
        await worker.set_priority(b.id, 90)
        await poll(tui, bus)
        moves = [(e.type, e.goal_id, getattr(e, "to_status", None)) for e in seen]
        assert moves == [
            ("goal.status_changed", a.id, "completed"),
            ("goal.updated", b.id, None),
        ]
        assert seen[0].from_status == "pending" and seen[0].findings == "found it"
        assert seen[1].priority == 90
        assert tui.get_goal(a.id).status == "completed"
        assert [g.id for g in tui.ready_goals()] == [b.id]
        seen.clear()

        await worker.remove_goal(b.id)
        await poll(tui, bus)
        assert [(e.type, e.goal_id) for e in seen] == [("goal.removed", b.id)]
    finally:
        await worker.close()
        await tui.close()


async def test_own_changes_not_replayed_and_replays_not_recorded(pg_dsn: str) -> None:
    worker = await ContextEngine.open(await PgStore.open(pg_dsn))
    bus = EventBus()
    seen: list[Any] = []
    bus.add_listener(seen.append)
    tui = await ContextEngine.open(await PgStore.open(pg_dsn), bus=bus)
    recorder = TranscriptRecorder(tui)
    bus.add_listener(recorder.observe)
    try:
        thread = await tui.create_thread("mine")
        mine = await tui.create_goal("mine", thread_id=thread.id)
        theirs = await worker.create_goal("theirs", thread_id=thread.id)
        seen.clear()
        task = asyncio.ensure_future(watch_store(tui, bus, interval_s=0.05))
        try:
            await tui.activate_goal(mine.id)  # published by our own write, once
            for _ in range(100):
                if any(e.goal_id == theirs.id for e in seen):
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)  # a few more polls: nothing again
        finally:
            task.cancel()
        assert [(e.type, e.goal_id) for e in seen] == [
            ("goal.status_changed", mine.id),
            ("goal.created", theirs.id),
        ]
        await recorder.close()
        records = [json.loads(data)["event"] for _, data in await tui.transcript(thread.id)]
        assert [(r["type"], r["goal_id"]) for r in records] == [
            ("goal.created", mine.id),  # our own changes only: theirs is the worker's to keep
            ("goal.status_changed", mine.id),
        ]
    finally:
        await worker.close()
        await tui.close()
