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
MALLINFO_FIELDS = (
    "arena",
    "ordblks",
    "smblks",
    "hblks",
    "hblkhd",
    "usmblks",
    "fsmblks",
    "uordblks",
    "fordblks",
    "keepcost",
)
"""glibc's ``struct mallinfo2``, in order (each a ``size_t``)."""


def census() -> list[tuple[int, str]]:
    """(count, module.type) of every object the collector tracks, most numerous first."""
    import gc
    from collections import Counter

    gc.collect()
    counts = Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())
    return [(n, name) for name, n in counts.most_common()]


def heap() -> list[str]:
    """Where the process's memory is: its RSS, the blocks Python has allocated, and
    glibc's heap (``mallinfo2``: bytes in use, free but kept in the heap, mmapped),
    one ``name value`` a line; empty figures are left out where there is no glibc."""
    import sys

    lines = [f"pyblocks {sys.getallocatedblocks()}"]
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith(("VmRSS:", "RssAnon:", "RssFile:", "Threads:")):
                name, value = line.split(":", 1)
                lines.append(f"{name} {value.split()[0]}")
    lines.extend(f"{k} {v}" for k, v in mallinfo().items())
    return lines


def mallinfo() -> dict[str, int]:
    """glibc's ``mallinfo2`` over all arenas (bytes): ``arena`` (heap from sbrk and
    arenas), ``hblkhd`` (mmapped blocks), ``uordblks`` (in use), ``fordblks`` (free, kept);
    empty without glibc 2.33+."""
    import ctypes

    names = MALLINFO_FIELDS

    class Info(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in names]

    try:
        libc = ctypes.CDLL("libc.so.6")
        call = libc.mallinfo2
    except (OSError, AttributeError):
        return {}
    call.restype = Info
    info = call()
    return {name: int(getattr(info, name)) for name in names}


def _time_full_collections() -> list[float]:
    """The duration (ms) of each full collection from now on, in the list returned."""
    import gc
    import time

    durations: list[float] = []
    started = [0.0]

    def timer(phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            durations.append((time.perf_counter() - started[0]) * 1000)

    gc.callbacks.append(timer)
    return durations


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
    full_ms = _time_full_collections()

    def dump(signum: int, frame: FrameType | None) -> None:
        import gc

        taken[0] += 1
        before = heap()  # before the census's collection: what garbage it found
        pending = gc.get_count()
        ran = list(full_ms)  # the app's own full collections since the last dump
        full_ms.clear()
        found = gc.collect()
        before += [f"gc_pending {pending[0]} {pending[1]} {pending[2]}", f"gc_found {found}"]
        before += [f"gc_full_runs {gc.get_stats()[2]['collections']}"]
        if ran:
            before += [
                f"gc_full_ms_max {max(ran):.1f}",
                f"gc_full_ms_mean {sum(ran) / len(ran):.1f}",
            ]
        lines = [f"{n} {name}" for n, name in census()]
        if tracemalloc.is_tracing():  # written first: the census says the dump is done
            snapshot = tracemalloc.take_snapshot()
            snapshot.dump(str(folder / f"snapshot-{taken[0]:03d}.pickle"))
        after = [f"after_gc_{line}" for line in heap()]
        (folder / f"heap-{taken[0]:03d}.txt").write_text("\n".join(before + after) + "\n")
        (folder / f"census-{taken[0]:03d}.txt").write_text("\n".join(lines) + "\n")

    signal.signal(signal.SIGUSR1, dump)
    return True
