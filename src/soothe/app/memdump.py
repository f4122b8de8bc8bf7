"""A memory probe for the real process, off unless asked for in the environment.

``SOOTHE_MEMDUMP=DIR``: each SIGUSR1 makes ``soothe`` run a full collection and write a
census of the live objects by type to ``DIR/census-NNN.txt`` (count and type, most
numerous first). ``SOOTHE_TRACEMALLOC=DIR`` does the same and also traces allocations
from the start, writing a tracemalloc snapshot to ``DIR/snapshot-NNN.pickle`` (several
times slower). ``bench/bench_memory_process.py --dump DIR`` diffs the last two."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import FrameType

CENSUS_ENV = "SOOTHE_MEMDUMP"
TRACE_ENV = "SOOTHE_TRACEMALLOC"
FRAMES = 30


def census() -> list[tuple[int, str]]:
    """(count, module.type) of every object the collector tracks, most numerous first."""
    import gc
    from collections import Counter

    gc.collect()
    counts = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())
    return [(n, name) for name, n in counts.most_common()]


def install() -> bool:
    """Set up the SIGUSR1 dump when one of the variables names a directory; True when it
    did."""
    traced = os.environ.get(TRACE_ENV, "").strip()
    target = traced or os.environ.get(CENSUS_ENV, "").strip()
    if not target or not hasattr(signal, "SIGUSR1"):
        return False
    import tracemalloc

    folder = Path(target)
    folder.mkdir(parents=True, exist_ok=True)
    if traced:
        tracemalloc.start(FRAMES)
    taken = [0]

    def dump(signum: int, frame: FrameType | None) -> None:
        taken[0] += 1
        lines = [f"{n} {name}" for n, name in census()]
        if tracemalloc.is_tracing():  # written first: the census says the dump is done
            snapshot = tracemalloc.take_snapshot()
            snapshot.dump(str(folder / f"snapshot-{taken[0]:03d}.pickle"))
        (folder / f"census-{taken[0]:03d}.txt").write_text("\n".join(lines) + "\n")

    signal.signal(signal.SIGUSR1, dump)
    return True
