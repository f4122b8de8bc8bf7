"""TranscriptRecorder: keeps what a thread showed, so reopening it shows the same.

A bus listener: every event of a thread becomes one record in the store's ``transcript``
table, in the order published, except the model calls' usage counts: those are summed per
thread into one ``usage`` record written just before the run's end (RunFinished or
RunFailed), so a reopened thread shows its token totals without a record per call. A
step's tokens are coalesced into one record (with how many pieces it stands for) that is
written just before that step's next event, or before any event outside a step, so the
order of a step's text and tool calls is kept and parallel steps never split each other's
text. Writes are batched on the event loop; ``flush()`` writes what is pending (before a
thread is read back, at close)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from soothe.engine.context.watch import replayed
from soothe.engine.events import (
    EventBase,
    ModelProfileResolved,
    RunFailed,
    RunFinished,
    StepToken,
    Usage,
)

if TYPE_CHECKING:
    from soothe.engine.context.engine import ContextEngine

log = logging.getLogger(__name__)

MAX_BUFFER_CHARS = 8000
FLUSH_DELAY = 0.2
"""Seconds a burst of events waits before it is written in one batch (one store write
per burst instead of one per event: ~26 writes per 3-step run before, each a round trip
to the database thread). A crash loses at most this much of the transcript; reading a
thread back (``flush()``) and closing write what is pending first."""
StreamKey = tuple[str, str | None, str | None, str | None]


@dataclass
class _Tokens:
    first: StepToken
    parts: list[str] = field(default_factory=list)
    chars: int = 0

    def record(self) -> tuple[str, str]:
        event = self.first.model_dump(mode="json")
        event["text"] = "".join(self.parts)
        return self.first.thread_id, json.dumps({"event": event, "tokens": len(self.parts)})


def decode(data: str) -> dict[str, Any]:
    return dict(json.loads(data))


class TranscriptRecorder:
    def __init__(
        self, context: ContextEngine, current_thread: Callable[[], str] = lambda: ""
    ) -> None:
        self.context = context
        self.current_thread = current_thread
        self._tokens: dict[StreamKey, _Tokens] = {}
        self._pending: list[tuple[str, str]] = []
        self._usage: dict[str, Usage] = {}
        """Each thread's model calls since its last usage record, summed."""
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.written = 0

    def observe(self, event: EventBase) -> None:
        if isinstance(event, ModelProfileResolved):  # not a thread's history
            return
        if replayed(event):  # another process's change, recorded by that process
            return
        thread = event.thread_id or self.current_thread()
        if not thread:
            return
        if isinstance(event, Usage):
            self._count(thread, event)
            return
        if not event.thread_id:
            event = event.model_copy(update={"thread_id": thread})
        if isinstance(event, RunFinished | RunFailed):
            self._seal_usage(thread)
        if isinstance(event, StepToken):
            key: StreamKey = (thread, event.loop_id, event.goal_id, event.step_id)
            buffer = self._tokens.get(key)
            if buffer is None:
                buffer = self._tokens[key] = _Tokens(event)
            buffer.parts.append(event.text)
            buffer.chars += len(event.text)
            if buffer.chars >= MAX_BUFFER_CHARS:
                self._seal(key)
                self._schedule()
            return
        for key in list(self._tokens):
            same_step = key[2] == event.goal_id and key[3] == event.step_id
            if key[0] == thread and (event.step_id is None or same_step):
                self._seal(key)
        self._pending.append((thread, json.dumps({"event": event.model_dump(mode="json")})))
        self._schedule()

    def _count(self, thread: str, event: Usage) -> None:
        """Add a model call's counts to the thread's sum (no window: a sum is no call's
        prompt against it)."""
        total = self._usage.get(thread)
        if total is None:
            total = Usage(thread_id=thread, model=event.model, role=event.role)
        self._usage[thread] = total.model_copy(
            update={
                "input_tokens": total.input_tokens + event.input_tokens,
                "output_tokens": total.output_tokens + event.output_tokens,
                "duration_s": round(total.duration_s + event.duration_s, 6),
                "prompt_chars": total.prompt_chars + event.prompt_chars,
            }
        )

    def _seal_usage(self, thread: str) -> None:
        total = self._usage.pop(thread, None)
        if total is not None and total.answered:
            self._pending.append((thread, json.dumps({"event": total.model_dump(mode="json")})))

    def _seal(self, key: StreamKey) -> None:
        buffer = self._tokens.pop(key)
        self._pending.append(buffer.record())

    def _schedule(self) -> None:
        if self._task is not None and not self._task.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._task = loop.create_task(self._flush_soon())

    async def _flush_soon(self) -> None:
        await asyncio.sleep(FLUSH_DELAY)
        await self.flush(seal=False)

    async def flush(self, *, seal: bool = True) -> None:
        """Write what is pending (``seal``: the steps' buffered tokens too)."""
        if seal:
            for key in list(self._tokens):
                self._seal(key)
            for thread in list(self._usage):
                self._seal_usage(thread)
        async with self._lock:
            while self._pending:
                batch, self._pending = self._pending, []
                by_thread: dict[str, list[str]] = {}
                order: list[str] = []
                for thread, record in batch:
                    if thread not in by_thread:
                        order.append(thread)
                    by_thread.setdefault(thread, []).append(record)
                for thread in order:
                    try:
                        await self.context.append_transcript(thread, by_thread[thread])
                        self.written += len(by_thread[thread])
                    except Exception:  # the transcript must never stop a run
                        log.exception("could not store the transcript of %s", thread)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.flush()
        task, self._task = self._task, None
        if task is not None and not task.done():  # asleep: what it would write is written
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
