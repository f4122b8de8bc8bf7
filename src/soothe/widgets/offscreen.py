"""Drawn lines that can be drawn again are let go while the app is idle.

Textual keeps, per widget, every line it last drew: the widget's own render (all of its
rows, ``Widget._render_cache``) and the lines with borders and padding applied
(``StylesCache``). Each line is a ``Strip`` with seven small caches of its own (about
1.2 KB before any text) that fill with the pieces the compositor cut from it for each
frame (crops, divisions at other widgets' edges, styled copies), each piece a ``Strip``
with seven caches again; list widgets add their own line caches (the tree's keeps up to
1,024 lines, stale ones included after each change; an option list 2,048 renders). In the
real process after 30 demo requests that was some 8,000 strips and 56,000 of their caches
(``bench/bench_memory_process.py --dump``), about a tenth of them lines a widget held and
the rest pieces cut from those.

``release_offscreen`` drops the lines of every widget of a screen that the compositor
does not show (the stream's blocks scrolled out of view) and marks it to be drawn anew
(the next frame that shows it renders it, as after a resize); of the widgets in view it
keeps the lines and drops only the pieces cut from them and the list widgets' line
caches, which the next frame cuts and renders again where it needs them."""

from __future__ import annotations

from collections.abc import Iterable

from textual.cache import LRUCache
from textual.geometry import NULL_SIZE
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget, _RenderCache

from soothe.widgets.strip_caches import caches

__all__ = ["release_offscreen", "rendered_lines"]

LINE_CACHES = ("_line_cache", "_option_render_cache", "_render_line_cache")
"""Line caches of Textual's list widgets (Tree, TextArea, RichLog; OptionList; Log)."""


def rendered_lines(widget: Widget) -> int:
    """The lines ``widget`` holds from its last draw (both caches)."""
    return len(widget._styles_cache._cache) + len(widget._render_cache.lines)


def _forget_pieces(strips: Iterable[Strip]) -> None:
    for strip in strips:
        for cache in caches(strip):  # (those it made: strip_caches makes them on use)
            cache.clear()


def release_offscreen(screen: Screen[object]) -> int:
    """Drop the drawn lines of the widgets of ``screen`` that are not on it now and the
    pieces cut from the lines of those that are; the number of widgets out of view that
    held lines."""
    if not screen.is_mounted:
        return 0
    visible = screen._compositor.visible_widgets
    released = 0
    for widget in screen.walk_children(Widget, with_self=True):
        for name in LINE_CACHES:
            cache = getattr(widget, name, None)
            if isinstance(cache, LRUCache) and len(cache):
                cache.clear()
        if not rendered_lines(widget):
            continue
        if widget in visible:
            _forget_pieces(widget._styles_cache._cache.values())
            _forget_pieces(widget._render_cache.lines)
            continue
        widget._styles_cache.clear()
        widget._render_cache = _RenderCache(NULL_SIZE, [])
        widget._dirty_regions.add(widget.size.region)  # its next draw renders it again
        released += 1
    return released
