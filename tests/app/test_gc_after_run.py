"""A run's garbage is collected when the run ends (issue 32 item 12), on the real Session.

The real process runs the full collections itself (``boot.resume_gc``: none automatic,
``idle_gc`` on a 2 s tick when no run goes on). With requests one after another the tick
rarely finds the app idle: 20 demo requests sent back to back left 104,000 unreachable
objects waiting (``bench/bench_memory_process.py --dump``: ``gc_found``), and the process
kept the memory they had taken. Now the end of a run collects (``collect_after_run``) when
a few younger collections ran since the last full one (``boot.RUN_END_DUE``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tests.app.real_harness import Rig, ready, send, settle, until


@pytest.fixture
def app_runs_the_collections() -> Iterator[None]:
    """The collector as ``soothe`` leaves it to the app: off until the engine is up, then
    no automatic full collection (``resume_gc``); put back afterwards."""
    threshold = gc.get_threshold()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
        gc.enable()
        gc.collect()


def full_collections() -> int:
    return gc.get_stats()[2]["collections"]


async def test_each_run_s_garbage_is_collected_when_it_ends(
    rig: Rig, app_runs_the_collections: None
) -> None:
    rig.configure(model={"provider": "demo"})
    requests = ["Summarise README.md in one line", "What is 2+2?", "List the files here"] * 2
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await until(lambda: app.gc_managed, pilot)
        start = full_collections()
        for text in requests:
            await send(app, pilot, text)
            await settle(app, pilot)
            await pilot.pause()  # the collection follows the run's last frame
        ran = full_collections() - start
        left = gc.collect()
        # (each run here allocates enough for boot.RUN_END_DUE most times: 5 of 6 ran)
        assert ran >= len(requests) // 2, f"{ran} full collections in {len(requests)} runs"
        assert left < 10_000, f"{left} unreachable objects waiting for a full collection"
