"""EventBus: in-process asyncio pub/sub with topics.

Topics are ``*`` (everything), ``thread:{id}``, ``loop:{id}`` and ``goal:{id}``; an event
goes to every topic it names. Publishing is synchronous and never waits on a subscriber,
so a stuck screen cannot stall the engine. Each subscription has a soft bound: past it,
a token delta is merged into the token delta at the tail of the queue when both belong to
the same step of the same goal, loop and thread, so text is never lost, reordered or
misattributed; lifecycle events are always queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from soothe.engine.events import EventBase, StepToken, next_seq

Listener = Callable[[EventBase], Any]


def topics_of(event: EventBase) -> list[str]:
    topics = ["*"]
    if event.thread_id:
        topics.append(f"thread:{event.thread_id}")
    if event.loop_id:
        topics.append(f"loop:{event.loop_id}")
    if event.goal_id:
        topics.append(f"goal:{event.goal_id}")
    return topics


def _same_stream(a: EventBase, b: EventBase) -> bool:
    """Step ids repeat across goals and threads ("1", or None), so compare every id."""
    return (
        a.step_id == b.step_id
        and a.goal_id == b.goal_id
        and a.loop_id == b.loop_id
        and a.thread_id == b.thread_id
    )


class Subscription:
    """An async iterator over the events of one topic."""

    def __init__(
        self,
        bus: EventBus,
        topic: str,
        maxsize: int,
        urgent: tuple[type[EventBase], ...] = (),
    ) -> None:
        self.bus = bus
        self.topic = topic
        self.maxsize = maxsize
        self.urgent = urgent
        """Kinds of event that end a ``pause`` early (queued like any other)."""
        self._queue: deque[EventBase] = deque()
        self._wakeup = asyncio.Event()
        self._urgent = asyncio.Event()
        """Set while an event of the urgent kinds is queued and unread (or it closed)."""
        self._unread_urgent = 0
        self._closed = False
        self._tail_text: list[str] = []
        self.coalesced = 0

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def closed(self) -> bool:
        return self._closed

    def _offer(self, event: EventBase) -> None:
        if self._closed:
            return
        queue = self._queue
        if len(queue) >= self.maxsize and isinstance(event, StepToken) and queue:
            tail = queue[-1]
            if isinstance(tail, StepToken) and _same_stream(tail, event):
                # Joined when the tail is read or passed: repeated ``a + b`` would make a
                # stalled subscriber cost O(text so far) per publish.
                self._tail_text.append(event.text)
                self.coalesced += 1
                return
        self._seal_tail()
        queue.append(event)
        self._wakeup.set()
        if self.urgent and isinstance(event, self.urgent):
            self._unread_urgent += 1
            self._urgent.set()

    def _seal_tail(self) -> None:
        if self._tail_text:
            tail = self._queue[-1]
            assert isinstance(tail, StepToken)
            text = tail.text + "".join(self._tail_text)
            self._queue[-1] = tail.model_copy(update={"text": text})
            self._tail_text.clear()

    def _read(self) -> EventBase:
        event = self._queue.popleft()
        if self._unread_urgent and isinstance(event, self.urgent):
            self._unread_urgent -= 1
            if not self._unread_urgent and not self._closed:
                self._urgent.clear()
        return event

    def get_nowait(self) -> EventBase | None:
        """The next queued event, or None; lets a UI drain a batch per frame."""
        if self._queue:
            self._seal_tail()
            return self._read()
        return None

    def drain(self, limit: int | None = None) -> list[EventBase]:
        out: list[EventBase] = []
        self._seal_tail()
        while self._queue and (limit is None or len(out) < limit):
            out.append(self._read())
        return out

    async def pause(self, seconds: float) -> bool:
        """Sleep ``seconds``, or less if an event of the ``urgent`` kinds is queued and
        unread (now or meanwhile); True if one is. A reader that batches events for a
        while uses it to act at once on the ones that must not wait. (``asyncio.timeout``,
        not ``wait_for``: 3.11's ``wait_for`` can swallow a cancellation that comes with
        the event.)"""
        urgent = self._urgent
        if not urgent.is_set() and seconds > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await urgent.wait()
        return urgent.is_set() and not self._closed

    async def get(self) -> EventBase:
        while not self._queue:
            if self._closed:
                raise StopAsyncIteration
            self._wakeup.clear()
            await self._wakeup.wait()
        self._seal_tail()
        return self._read()

    def __aiter__(self) -> AsyncIterator[EventBase]:
        return self

    async def __anext__(self) -> EventBase:
        try:
            return await self.get()
        except asyncio.CancelledError:
            self.close()
            raise

    def close(self) -> None:
        """Stop receiving. Events already queued can still be read."""
        if not self._closed:
            self._closed = True
            self.bus._remove(self)
            self._wakeup.set()
            self._urgent.set()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class EventBus:
    def __init__(self, default_maxsize: int = 2000) -> None:
        self.default_maxsize = default_maxsize
        self._subs: dict[str, list[Subscription]] = {}
        self._listeners: list[Listener] = []
        self.published = 0

    def subscribe(
        self,
        topic: str = "*",
        maxsize: int | None = None,
        urgent: tuple[type[EventBase], ...] = (),
    ) -> Subscription:
        sub = Subscription(self, topic, maxsize or self.default_maxsize, urgent)
        self._subs.setdefault(topic, []).append(sub)
        return sub

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """A synchronous callback for every event (recorders, counters). Returns remover."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _remove(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.topic)
        if subs and sub in subs:
            subs.remove(sub)
            if not subs:
                del self._subs[sub.topic]

    def publish(self, event: EventBase) -> EventBase:
        # Stamped here, not at construction, so seq and ts follow the order subscribers see.
        event.seq = next_seq()
        event.ts = time.time()
        self.published += 1
        for topic in topics_of(event):
            for sub in self._subs.get(topic, ()):
                sub._offer(event)
        for listener in list(self._listeners):
            listener(event)
        return event

    def subscriber_count(self, topic: str | None = None) -> int:
        if topic is None:
            return sum(len(v) for v in self._subs.values())
        return len(self._subs.get(topic, ()))

    def close(self) -> None:
        for subs in list(self._subs.values()):
            for sub in list(subs):
                sub.close()
