"""Work-arounds for Textual bugs that cost this app memory or whole-screen repaints
(textual is pinned exactly). ``apply()`` runs once, on import of the widgets that need
them; each does nothing when Textual's code is no longer the faulty kind.

Memory: ``StylesCache.get_inner_outer`` (textual 8.2.8, ``_styles_cache.py``) is an instance method
under ``functools.lru_cache(1024)``: the cache key holds ``self``, so the style cache of
every widget that ever painted - with all the strips it had rendered - stays alive until
1,024 newer (widget, colour) pairs push it out (Textualize/textual#6665, open). The stream
releases old blocks as it goes, so in one session of 100 requests that kept tens of
megabytes of strips of widgets long removed. The fix keys the cache on the colours only,
which is all the result depends on.

Repaints: ``Compositor.reflow_visible`` (the scroll-only layout) finds what to repaint by
comparing the widgets' new places with ``_visible_map``, which every full layout resets to
None; with nothing to compare against it repaints the whole screen. A stream that follows
its newest rows scrolls right after each layout that grew it (a step's card mounted, a box
grew): every such scroll repainted all 120x40 cells, 20-40 ms that the keys and the tokens
waited for. The fix compares with the places the last layout or scroll gave (what the
screen shows), so a scroll repaints what moved.
"""

from __future__ import annotations

from functools import lru_cache, wraps
from typing import Any

from textual._compositor import Compositor
from textual._styles_cache import StylesCache
from textual.color import Color
from textual.style import Style

__all__ = ["applied", "apply"]

_APPLIED: set[str] = set()
"""The fixes ``apply()`` put in place ("styles cache", "scroll repaint")."""
_DONE = False


@lru_cache(1024)
def _inner_outer(base_background: Color, background: Color) -> tuple[Style, Style]:
    """Inner and outer background styles (what Textual's method returns)."""
    return (
        Style(background=base_background + background),
        Style(background=base_background),
    )


def _get_inner_outer(self: Any, base_background: Color, background: Color) -> tuple[Style, Style]:
    return _inner_outer(base_background, background)


_SHOWN = "_soothe_shown_map"
"""The compositor's map as of its last layout or scroll: the places the screen shows."""


def _reflow_keeping_shown(reflow: Any) -> Any:
    @wraps(reflow)
    def full(self: Compositor, parent: Any, size: Any) -> Any:
        result = reflow(self, parent, size)
        setattr(self, _SHOWN, self._full_map)
        return result

    return full


def _reflow_visible_against_shown(reflow_visible: Any) -> Any:
    @wraps(reflow_visible)
    def visible(self: Compositor, parent: Any, size: Any) -> Any:
        if self._visible_map is None:  # a full layout reset it: compare with what is shown
            self._visible_map = getattr(self, _SHOWN, None)
        result = reflow_visible(self, parent, size)
        setattr(self, _SHOWN, self._visible_map)
        return result

    return visible


def applied() -> frozenset[str]:
    return frozenset(_APPLIED)


def apply() -> None:
    global _DONE
    if _DONE:
        return
    _DONE = True
    current = StylesCache.__dict__.get("get_inner_outer")
    if hasattr(current, "cache_info"):  # still Textual's lru_cache on the instance method
        StylesCache.get_inner_outer = _get_inner_outer  # type: ignore[method-assign,assignment]
        current.cache_clear()  # type: ignore[union-attr]
        _APPLIED.add("styles cache")
    # (tests/app/test_scroll_repaint.py checks Textual's method still compares with
    # ``self._visible_map or {}``; reading its source here would cost the first frame 6 ms)
    if "_visible_map" in Compositor.reflow_visible.__code__.co_names:
        Compositor.reflow = _reflow_keeping_shown(Compositor.reflow)  # type: ignore[method-assign]
        Compositor.reflow_visible = _reflow_visible_against_shown(  # type: ignore[method-assign]
            Compositor.reflow_visible
        )
        _APPLIED.add("scroll repaint")
