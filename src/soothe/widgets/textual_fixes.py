"""Work-arounds for Textual bugs that cost this app memory (textual is pinned exactly).

``StylesCache.get_inner_outer`` (textual 8.2.8, ``_styles_cache.py``) is an instance method
under ``functools.lru_cache(1024)``: the cache key holds ``self``, so the style cache of
every widget that ever painted - with all the strips it had rendered - stays alive until
1,024 newer (widget, colour) pairs push it out (Textualize/textual#6665, open). The stream
releases old blocks as it goes, so in one session of 100 requests that kept tens of
megabytes of strips of widgets long removed. The fix keys the cache on the colours only,
which is all the result depends on. ``apply()`` runs once, on import of the widgets that
need it; it does nothing when Textual's method is no longer the leaking kind.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from textual._styles_cache import StylesCache
from textual.color import Color
from textual.style import Style

__all__ = ["applied", "apply"]

_APPLIED = False


@lru_cache(1024)
def _inner_outer(base_background: Color, background: Color) -> tuple[Style, Style]:
    """Inner and outer background styles (what Textual's method returns)."""
    return (
        Style(background=base_background + background),
        Style(background=base_background),
    )


def _get_inner_outer(self: Any, base_background: Color, background: Color) -> tuple[Style, Style]:
    return _inner_outer(base_background, background)


def applied() -> bool:
    return _APPLIED


def apply() -> None:
    global _APPLIED
    if _APPLIED:
        return
    current = StylesCache.__dict__.get("get_inner_outer")
    if hasattr(current, "cache_info"):  # still Textual's lru_cache on the instance method
        StylesCache.get_inner_outer = _get_inner_outer  # type: ignore[method-assign,assignment]
        current.cache_clear()  # type: ignore[union-attr]
        _APPLIED = True
