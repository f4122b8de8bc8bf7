"""Memory the process freed goes back to the system while the app is idle.

glibc's ``free`` keeps freed memory in its heaps for the next ``malloc``; it gives back
only the free space at the top of a heap, above the last block in use. A run allocates
and frees in bursts (rendered lines, the engine's per-call objects), so after one the
heaps hold megabytes of free space between live blocks that count in the process's RSS
until something reuses them: 6-7 MB after 30-100 demo requests in the real process
(``bench/bench_memory_process.py --dump``: ``fordblks``). ``trim`` asks glibc to hand
every free page back (``malloc_trim(0)``: free pages anywhere in the heaps, not only at
the top); the app does it after its idle full collection (``boot.idle_gc``). Nothing
happens on a C library without ``malloc_trim``."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

__all__ = ["trim"]


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        function = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    return function


def trim() -> bool:
    """Give the heaps' free pages back to the system; False where there is no
    ``malloc_trim`` (not glibc)."""
    function = _malloc_trim()
    if function is None:
        return False
    function(0)
    return True
