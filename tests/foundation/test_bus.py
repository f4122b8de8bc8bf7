"""EventBus: order, topic fan-out, coalescing under back-pressure, cancellation, close."""

from __future__ import annotations

import asyncio
from itertools import pairwise

import pytest

from soothe.engine.bus import EventBus, Subscription, topics_of
from soothe.engine.events import (
    EventBase,
    GoalCreated,
    RunFinished,
    RunStarted,
    StepCompleted,
    StepStarted,
    StepToken,
    ToolCalled,
)

StreamKey = tuple[str, str | None, str | None, str | None]


def _key(event: EventBase) -> StreamKey:
    return (event.thread_id, event.loop_id, event.goal_id, event.step_id)


def merged_view(events: list[EventBase]) -> list[tuple[str, StreamKey, str]]:
    """Events with runs of adjacent tokens of one stream joined: what coalescing must keep."""
    out: list[tuple[str, StreamKey, str]] = []
    for event in events:
        if isinstance(event, StepToken):
            if out and out[-1][0] == "tokens" and out[-1][1] == _key(event):
                out[-1] = ("tokens", out[-1][1], out[-1][2] + event.text)
            else:
                out.append(("tokens", _key(event), event.text))
        else:
            out.append((event.type, _key(event), str(event.seq)))
    return out


def _texts_by_stream(events: list[EventBase]) -> dict[StreamKey, str]:
    out: dict[StreamKey, str] = {}
    for event in events:
        if isinstance(event, StepToken):
            out[_key(event)] = out.get(_key(event), "") + event.text
    return out


def test_each_subscriber_sees_publish_order(bus: EventBus) -> None:
    subs = [bus.subscribe(), bus.subscribe("thread:t"), bus.subscribe()]
    published = [
        bus.publish(RunStarted(text=str(i), thread_id="t") if i % 3 else StepToken(text=str(i)))
        for i in range(300)
    ]
    on_thread = [e for e in published if e.thread_id == "t"]
    assert subs[0].drain() == published
    assert subs[2].drain() == published
    assert subs[1].drain() == on_thread
    assert all(a.seq < b.seq for a, b in pairwise(published))


def test_fan_out_by_topic(bus: EventBus) -> None:
    topics = ["*", "thread:X", "loop:Y", "goal:Z", "thread:other", "loop:other", "goal:other"]
    subs = {topic: bus.subscribe(topic) for topic in topics}
    full = bus.publish(StepStarted(description="d", thread_id="X", loop_id="Y", goal_id="Z"))
    thread_only = bus.publish(RunStarted(text="hi", thread_id="X"))
    goal_elsewhere = bus.publish(GoalCreated(description="g", thread_id="other", goal_id="Z"))
    bare = bus.publish(RunFinished())

    assert subs["*"].drain() == [full, thread_only, goal_elsewhere, bare]
    assert subs["thread:X"].drain() == [full, thread_only]
    assert subs["loop:Y"].drain() == [full]
    assert subs["goal:Z"].drain() == [full, goal_elsewhere]
    assert subs["thread:other"].drain() == [goal_elsewhere]
    assert subs["loop:other"].drain() == []
    assert subs["goal:other"].drain() == []


def test_topics_of_names_every_id() -> None:
    event = StepToken(text="x", thread_id="a", loop_id="b", goal_id="c", step_id="d")
    assert topics_of(event) == ["*", "thread:a", "loop:b", "goal:c"]
    assert topics_of(StepToken(text="x")) == ["*"]


def test_slow_subscriber_coalesces_tokens_but_keeps_lifecycle(bus: EventBus) -> None:
    slow = bus.subscribe(maxsize=4)
    fast = bus.subscribe(maxsize=100_000)
    published: list[EventBase] = []

    def pub(event: EventBase) -> None:
        published.append(bus.publish(event))

    pub(RunStarted(text="go", thread_id="t"))
    for step in ("s1", "s2"):
        pub(StepStarted(description=step, thread_id="t", step_id=step))
        for i in range(50):
            pub(StepToken(text=f"{step}:{i} ", thread_id="t", step_id=step))
            if i == 20:
                pub(ToolCalled(call_id=f"c-{step}", tool="read_file", thread_id="t", step_id=step))
        pub(StepCompleted(summary=step, thread_id="t", step_id=step))
    pub(RunFinished(thread_id="t"))

    received = slow.drain()
    assert slow.coalesced > 0
    assert len(received) < len(published)
    lifecycle = [e for e in published if not e.is_token]
    assert [e for e in received if not e.is_token] == lifecycle
    assert merged_view(received) == merged_view(published)
    assert _texts_by_stream(received) == _texts_by_stream(published)
    assert fast.drain() == published, "a slow subscriber must not affect a fast one"
    assert all(isinstance(e, StepToken) for e in published if e.is_token)


def test_coalescing_never_merges_tokens_of_different_streams(bus: EventBus) -> None:
    """Steps of parallel threads/goals often share an id ("1", or none at all)."""
    slow = bus.subscribe(maxsize=2)
    published: list[EventBase] = []
    for i in range(40):
        for thread, goal, step in (("a", None, None), ("b", None, None), ("a", "g1", "1")):
            published.append(
                bus.publish(StepToken(text=f"{i},", thread_id=thread, goal_id=goal, step_id=step))
            )
        published.append(
            bus.publish(StepToken(text=f"g2-{i},", thread_id="a", goal_id="g2", step_id="1"))
        )
    received = slow.drain()
    assert _texts_by_stream(received) == _texts_by_stream(published)
    assert merged_view(received) == merged_view(published)


def test_coalescing_keeps_text_when_reader_interleaves(bus: EventBus) -> None:
    sub = bus.subscribe(maxsize=3)
    published: list[EventBase] = []
    received: list[EventBase] = []
    for i in range(2000):
        published.append(bus.publish(StepToken(text=f"{i};", step_id="s")))
        if i % 7 == 0:
            event = sub.get_nowait()
            assert event is not None
            received.append(event)
    received.extend(sub.drain())
    assert sub.coalesced > 0
    assert "".join(e.text for e in received) == "".join(e.text for e in published)


def test_publish_never_waits_for_a_subscriber_that_never_reads(bus: EventBus) -> None:
    stuck = bus.subscribe(maxsize=64)
    stuck_thread = bus.subscribe("thread:t")
    start, end = StepStarted(description="d", thread_id="t"), StepCompleted(thread_id="t")
    token = StepToken(text="tok ", thread_id="t", step_id="s")
    bus.publish(start)
    for _ in range(100_000):
        bus.publish(token)
    bus.publish(end)
    assert bus.published == 100_002
    for sub in (stuck, stuck_thread):
        events = sub.drain()
        assert [e for e in events if not e.is_token] == [start, end]
        assert "".join(e.text for e in events if isinstance(e, StepToken)) == "tok " * 100_000


def test_get_nowait_and_drain_limit(bus: EventBus) -> None:
    sub = bus.subscribe()
    assert sub.get_nowait() is None
    published = [bus.publish(RunStarted(text=str(i))) for i in range(5)]
    assert sub.get_nowait() == published[0]
    assert sub.drain(limit=2) == published[1:3]
    assert len(sub) == 2
    assert sub.drain() == published[3:]
    assert sub.drain() == []


def test_listener_sees_everything_and_can_be_removed(bus: EventBus) -> None:
    seen: list[EventBase] = []
    remove = bus.add_listener(seen.append)
    first = bus.publish(RunStarted(text="a", thread_id="x"))
    remove()
    remove()
    bus.publish(RunStarted(text="b"))
    assert seen == [first]


async def _next(sub: Subscription) -> EventBase:
    return await asyncio.wait_for(sub.get(), timeout=2)


async def test_async_iteration_wakes_on_publish(bus: EventBus) -> None:
    sub = bus.subscribe("thread:t")
    got: list[EventBase] = []
    arrived = asyncio.Event()

    async def consume() -> None:
        async for event in sub:
            got.append(event)
            arrived.set()

    task = asyncio.create_task(consume())
    published = [bus.publish(RunStarted(text="0", thread_id="t"))]
    await asyncio.wait_for(arrived.wait(), timeout=2)
    # The consumer is now parked on an empty queue; later events must wake it.
    for i in (1, 2):
        arrived.clear()
        published.append(bus.publish(RunStarted(text=str(i), thread_id="t")))
        await asyncio.wait_for(arrived.wait(), timeout=2)
    assert got == published
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelling_the_iterating_task_unsubscribes(bus: EventBus) -> None:
    sub = bus.subscribe("thread:t")
    other = bus.subscribe()
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in sub:
            first.set()

    task = asyncio.create_task(consume())
    bus.publish(RunStarted(text="x", thread_id="t"))
    await asyncio.wait_for(first.wait(), timeout=2)
    assert bus.subscriber_count("thread:t") == 1
    assert bus.subscriber_count() == 2

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sub.closed
    assert bus.subscriber_count("thread:t") == 0
    assert bus.subscriber_count() == 1
    bus.publish(RunStarted(text="later", thread_id="t"))
    assert len(sub) == 0
    assert len(other.drain()) == 2


async def test_subscription_context_manager_unsubscribes(bus: EventBus) -> None:
    async with bus.subscribe("goal:g") as sub:
        bus.publish(GoalCreated(description="d", goal_id="g"))
        assert (await _next(sub)).type == "goal.created"
        assert bus.subscriber_count("goal:g") == 1
    assert sub.closed
    assert bus.subscriber_count() == 0


async def test_close_ends_iteration_after_queued_events(bus: EventBus) -> None:
    a = bus.subscribe()
    b = bus.subscribe("thread:t")
    waiting = bus.subscribe("loop:l")
    parked_got: list[EventBase] = []
    arrived = asyncio.Event()

    async def park() -> int:
        async for event in waiting:
            parked_got.append(event)
            arrived.set()
        return len(parked_got)

    parked = asyncio.create_task(park())
    bus.publish(StepStarted(description="d", loop_id="l"))
    await asyncio.wait_for(arrived.wait(), timeout=2)  # parked now waits on an empty queue
    queued = [bus.publish(RunStarted(text=str(i), thread_id="t")) for i in range(3)]

    bus.close()
    assert bus.subscriber_count() == 0
    assert a.closed and b.closed and waiting.closed
    assert await asyncio.wait_for(parked, timeout=2) == 1

    async def collect(sub: Subscription) -> list[EventBase]:
        return [event async for event in sub]

    assert (await asyncio.wait_for(collect(a), timeout=2))[1:] == queued
    assert await asyncio.wait_for(collect(b), timeout=2) == queued
    bus.publish(RunStarted(text="after close", thread_id="t"))
    assert len(a) == 0 and len(b) == 0
    with pytest.raises(StopAsyncIteration):
        await a.get()


async def test_a_pause_ends_when_an_urgent_event_is_queued() -> None:
    bus = EventBus()
    sub = bus.subscribe("*", urgent=(RunFinished,))
    pausing = asyncio.create_task(sub.pause(60))
    await asyncio.sleep(0.01)
    bus.publish(StepToken(text="a"))  # not urgent: the pause goes on
    await asyncio.sleep(0.01)
    assert not pausing.done()
    bus.publish(RunFinished())
    assert await asyncio.wait_for(pausing, 5) is True
    assert [e.type for e in sub.drain()] == ["step.token", "run.finished"]


async def test_a_pause_runs_its_time_when_nothing_urgent_waits() -> None:
    bus = EventBus()
    sub = bus.subscribe("*", urgent=(RunFinished,))
    bus.publish(RunFinished())
    assert await sub.pause(60) is True  # queued before the pause: at once
    bus.publish(RunFinished())
    sub.drain()  # read already: nothing waits to be acted on
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await sub.pause(0.05) is False
    assert loop.time() - started >= 0.04
    plain = bus.subscribe("*")  # no urgent kinds: a plain sleep
    bus.publish(RunFinished())
    assert await plain.pause(0.01) is False


async def test_an_urgent_event_read_no_longer_cuts_a_pause_short() -> None:
    """Urgent means queued and unread: once read (here by get, with a token behind it),
    the next pause runs its time."""
    bus = EventBus()
    sub = bus.subscribe("*", urgent=(RunFinished,))
    bus.publish(RunFinished())
    bus.publish(StepToken(text="a"))
    assert (await sub.get()).type == "run.finished"
    assert len(sub) == 1
    assert await sub.pause(0.02) is False


async def test_a_pause_cancelled_as_the_urgent_event_comes_is_cancelled() -> None:
    """3.11's ``asyncio.wait_for`` returns the result of a wait that completes in the
    loop turn its task is cancelled in, and the cancellation is lost."""
    for turns in range(4):
        bus = EventBus()
        sub = bus.subscribe("*", urgent=(RunFinished,))
        pausing = asyncio.create_task(sub.pause(60))
        await asyncio.sleep(0)
        bus.publish(RunFinished())
        for _ in range(turns):
            await asyncio.sleep(0)
        pausing.cancel()
        try:
            result = await pausing
        except asyncio.CancelledError:
            continue
        # finished before the cancel reached it: only then may it return
        assert turns > 0 and result is True, turns
