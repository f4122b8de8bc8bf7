"""Freed memory goes back to the system when the app is idle (issue 32 item 12).

glibc keeps what ``free`` gave back in its heaps (6-7 MB after 30-100 demo requests in the
real process: ``bench/bench_memory_process.py --dump``, ``fordblks``) and returns only the
free space at a heap's top. The app's idle full collection (``boot.idle_gc``) now ends
with ``heap_trim.trim()`` (``malloc_trim(0)``), which returns every free page."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from soothe.app import boot, heap_trim


def rss_anon_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon in /proc/self/status")


@pytest.mark.skipif(heap_trim._malloc_trim() is None, reason="no glibc malloc_trim")
def test_trim_gives_freed_heap_pages_back() -> None:
    blocks = [bytearray(2000) for _ in range(20_000)]  # ~40 MB from malloc's heap
    keep = bytearray(2000)  # in use above them: free won't shrink the heap's top
    del blocks
    before = rss_anon_kb()
    assert heap_trim.trim()
    after = rss_anon_kb()
    assert before - after > 20_000, (before, after)  # most of the 40 MB, in kB
    del keep


def test_the_idle_collection_trims_and_a_collection_mid_run_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trims: list[int] = []
    monkeypatch.setattr(heap_trim, "trim", lambda: trims.append(1) or True)
    monkeypatch.setattr(gc, "get_count", lambda: (0, 0, boot.FULL_GC_OVERDUE))
    assert boot.idle_gc(running=True)  # long overdue: collected even mid-run...
    assert trims == []  # ...but the heap is left as it is while a run allocates
    assert boot.idle_gc(running=False)
    assert trims == [1]
