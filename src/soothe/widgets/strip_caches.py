"""A ``Strip`` makes its seven caches when it first uses one, not when it is made.

Textual (8.2.8, ``strip.py``) gives every ``Strip`` seven ``FIFOCache``s in ``__init__``
(crops, divisions, styled copies, filters, padded lengths, offsets): seven cache objects
and seven dicts, about 1.1 KB per strip before it holds a character. Most strips never use
one: a line a widget rendered is cropped or divided once per frame at most, and the pieces
cut from it (each a new ``Strip`` with seven caches again) are used once and dropped. In
the real process (``bench/bench_memory_process.py --dump``) 4,000-7,000 strips and
30,000-51,000 of their caches were alive between two idle releases
(``widgets/offscreen``), and each burst of them was new memory that Python's allocator
keeps once it has it.

``apply()`` puts a descriptor in front of each cache slot that makes the cache on first
use (the same size Textual gives it), and an ``__init__`` that makes none; a strip that
crops once gets one cache, not seven. ``caches(strip)`` gives the ones a strip has made
(without making the others). Nothing is done when Textual's ``Strip`` is no longer of
that shape."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from rich.segment import Segment
from textual.cache import FIFOCache
from textual.strip import Strip

__all__ = ["CACHE_SIZES", "applied", "apply", "caches"]

CACHE_SIZES = {
    "_divide_cache": 4,
    "_crop_cache": 16,
    "_style_cache": 16,
    "_filter_cache": 4,
    "_line_length_cache": 4,
    "_crop_extend_cache": 4,
    "_offsets_cache": 4,
}
"""Each cache slot of ``Strip`` and the size Textual's ``__init__`` gives it."""
OTHER_SLOTS = ("_segments", "_cell_length", "_render_cache", "_link_ids", "_cell_count")
_SLOTS: dict[str, Any] = {}
"""Slot name -> Textual's member descriptor (the storage the lazy descriptor reads)."""


class LazyCache:
    """In place of a ``Strip`` cache slot: reads the slot, and makes the cache on the
    first read that finds it empty."""

    __slots__ = ("size", "slot")

    def __init__(self, slot: Any, size: int) -> None:
        self.slot = slot
        self.size = size

    def __get__(self, strip: Strip | None, owner: type | None = None) -> Any:
        if strip is None:
            return self
        try:
            return self.slot.__get__(strip, owner)
        except AttributeError:
            cache: FIFOCache[Any, Any] = FIFOCache(self.size)
            self.slot.__set__(strip, cache)
            return cache

    def __set__(self, strip: Strip, value: Any) -> None:
        self.slot.__set__(strip, value)

    def __delete__(self, strip: Strip) -> None:
        self.slot.__delete__(strip)


def _init(self: Strip, segments: Iterable[Segment], cell_length: int | None = None) -> None:
    """Textual's ``Strip.__init__`` less the seven caches (made on first use)."""
    self._segments = list(segments)
    self._cell_length = cell_length
    self._render_cache = None
    self._link_ids = None
    self._cell_count = None


def caches(strip: Strip) -> Iterator[FIFOCache[Any, Any]]:
    """The caches ``strip`` has (made by use, or all seven when the fix is not applied)."""
    for name in CACHE_SIZES:
        slot = _SLOTS.get(name)
        if slot is None:
            yield getattr(strip, name)
            continue
        try:
            yield slot.__get__(strip, Strip)
        except AttributeError:
            continue


def _shape_is_known() -> bool:
    """Textual's ``Strip`` has exactly the slots and ``__init__`` this replaces."""
    slots = set(getattr(Strip, "__slots__", ()))
    if slots != set(CACHE_SIZES) | set(OTHER_SLOTS):
        return False
    if not all(type(Strip.__dict__.get(name)).__name__ == "member_descriptor" for name in slots):
        return False
    names = set(Strip.__init__.__code__.co_names)
    return "FIFOCache" in names and set(CACHE_SIZES) | set(OTHER_SLOTS) <= names


def applied() -> bool:
    return bool(_SLOTS)


def apply() -> bool:
    """Make the caches lazy (once); True when it is in force."""
    if _SLOTS:
        return True
    if not _shape_is_known():
        return False
    for name, size in CACHE_SIZES.items():
        slot = Strip.__dict__[name]
        _SLOTS[name] = slot
        setattr(Strip, name, LazyCache(slot, size))
    Strip.__init__ = _init  # type: ignore[method-assign]
    return True
