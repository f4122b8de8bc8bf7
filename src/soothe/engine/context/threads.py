"""Threads (a conversation and its goals) and their chat messages."""

from __future__ import annotations

import uuid

from soothe.engine.context.edges import EdgeOps
from soothe.engine.context.errors import GoalInUse, ThreadNotFound
from soothe.engine.context.models import ThreadMessage, ThreadRecord
from soothe.engine.context.store import (
    insert_message_op,
    insert_thread_op,
    thread_removal_ops,
    touch_thread_op,
)
from soothe.engine.context.unit import Change, UnitOfWork


class ThreadOps:
    def __init__(self, uow: UnitOfWork, edges: EdgeOps) -> None:
        self._uow = uow
        self._edges = edges

    async def create(self, title: str) -> ThreadRecord:
        threads = self._uow.state.threads
        async with self._uow.write() as change:
            record = ThreadRecord(
                id=uuid.uuid4().hex[:12], title=title, created_at=change.now, last_active=change.now
            )
            change.ops.append(insert_thread_op(record))
            change.after.append(lambda: threads.__setitem__(record.id, record))
        return record

    def _touch(self, change: Change, thread_id: str, title: str | None = None) -> ThreadRecord:
        threads = self._uow.state.threads
        old = threads.get(thread_id)
        if old is None:
            raise ThreadNotFound(thread_id)
        new = old.model_copy(
            update={"last_active": change.now, "title": old.title if title is None else title}
        )
        change.ops.append(touch_thread_op(new))
        change.after.append(lambda: threads.__setitem__(thread_id, new))
        return new

    async def touch(self, thread_id: str, title: str | None) -> ThreadRecord:
        async with self._uow.write() as change:
            record = self._touch(change, thread_id, title)
        return record

    async def delete(self, thread_id: str) -> None:
        state = self._uow.state
        graph = state.graph
        async with self._uow.write() as change:
            if thread_id not in state.threads:
                raise ThreadNotFound(thread_id)
            mine = [g for g in graph.goals.values() if g.thread_id == thread_id]
            leaving = {g.id for g in mine}
            for goal in mine:
                if goal.status == "active":
                    raise GoalInUse(goal.id, f"thread {thread_id} is deleted while it is active")
                outside = [
                    d
                    for d in (*graph.dependents.get(goal.id, {}), *graph.children.get(goal.id, {}))
                    if d not in leaving
                ]
                if outside:
                    raise GoalInUse(goal.id, f"goal {outside[0]} of another thread relies on it")
            for goal in sorted(mine, key=lambda g: -g.seq):
                self._edges.stage_removal(change, goal.id, leaving)
            change.ops += thread_removal_ops(thread_id)

            def forget() -> None:
                state.threads.pop(thread_id, None)
                state.ledger.drop_thread(thread_id)

            change.after.append(forget)

    async def add_message(self, thread_id: str, role: str, content: str) -> ThreadMessage:
        state = self._uow.state
        async with self._uow.write() as change:
            self._touch(change, thread_id)
            message = ThreadMessage(
                id=state.next_message_id,
                thread_id=thread_id,
                role=role,
                content=content,
                created_at=change.now,
            )
            change.ops.append(insert_message_op(message))
            change.after.append(lambda: setattr(state, "next_message_id", message.id + 1))
        return message

    async def messages(self, thread_id: str, limit: int | None) -> list[ThreadMessage]:
        if thread_id not in self._uow.state.threads:
            raise ThreadNotFound(thread_id)
        return await self._uow.store.messages(thread_id, limit)
