"""Finished runs leave their graphs behind on the event loop's schedule no longer (issue
32 item 12), on the real Session with the demo model (as bench_memory_process runs it).

A run arms timers with long deadlines (a model call's 600 s timeout) and cancels them;
asyncio keeps a cancelled timer in its heap until its deadline (or until more than 100
are cancelled and over half the heap), and each keeps the context it was armed in, which
holds the step's LangGraph loop. After 4 demo requests 59 cancelled timers (most due in
597-599 s) kept 16 finished ``AsyncPregelLoop``s alive; the app's idle tick
(``SootheApp.release_offscreen`` -> ``loop_timers.purge_cancelled``) takes them off."""

from __future__ import annotations

import gc

from langgraph.pregel._loop import AsyncPregelLoop

from tests.app.real_harness import Rig, ready, send, settle, until


def graph_loops() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, AsyncPregelLoop))


async def test_finished_runs_keep_no_graph_loop_alive(rig: Rig) -> None:
    rig.configure(model={"provider": "demo"})
    requests = ["Summarise README.md in one line", "List the files here"] * 2
    app = rig.app()
    ticks: list[int] = []
    tick = app.release_offscreen
    app.release_offscreen = lambda: ticks.append(1) or tick()  # type: ignore[method-assign]
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        for text in requests:
            await send(app, pilot, text)
            await settle(app, pilot)
        assert [g.status for g in app.handler.goals.values()] == ["completed"] * len(requests)
        seen = len(ticks)
        await until(lambda: len(ticks) > seen, pilot, timeout=10)  # one idle tick
        # (one or two loops of the last run are at times still referenced, by what is not
        # yet known; without the purge all 16 stay)
        assert graph_loops() <= 2
