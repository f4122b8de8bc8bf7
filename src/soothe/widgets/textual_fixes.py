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

Partial updates: ``Compositor.render_partial_update`` paints the regions that changed in
a frame, but has every widget that overlaps their bounding box render all of its visible
rows (``_get_renders`` with the box as crop, and each widget's whole region). While steps
stream, a frame changes a live box in the middle, the tree's spinner at the top and the
prompt at the bottom: the box spans the screen, so the evidence panel, the footer, the
status line and every container rendered every row in every frame, to paint a few. The
fix has a widget render only the rows of the changed regions that overlap it, and no row
when none does; the cells painted are the same (only changed regions are written).

Frames: a repeating ``Timer`` (``timer.py``, ``Timer._run``) that fell behind skips to
``start + (count + 1) * interval`` with ``count = int((now - start) / interval + 1)``: the
second tick of its grid after now, not the first. The screen's update timer (60/s) falls
behind at every frame: it pauses between frames, and a frame takes 9-30 ms while steps
stream. So the frame after a frame came 17-33 ms late on top of the frame itself: a key
typed during a frame waited up to 80 ms for its echo. The fix skips to the first tick
after now, as Textual's ``skip`` promises ("skip callbacks that couldn't be sent in
time"); every interval timer of the app gets it.

Strips: each ``Strip`` makes its seven caches when it first uses one (``strip_caches``):
an unused strip costs ~0.2 KB instead of ~1.1 KB, and most never use one.

Page keys in a list: ``OptionList._move_page`` reads ``_index_to_line[highlighted]``, which
is empty until the list has been laid out (``_update_lines`` returns early while its
content region is empty). The command palette highlights its first result before the
list's first layout: a pageup in that moment, as the palette opens (tests/app/
test_every_key.py hit it at 120x40), raised KeyError(0) and the app exited with a
traceback. The fix moves no page until the lines are placed (the next page key does).
"""

from __future__ import annotations

from functools import lru_cache, wraps
from typing import Any

from textual import _time
from textual._compositor import Compositor
from textual._styles_cache import StylesCache
from textual.color import Color
from textual.geometry import Region
from textual.style import Style
from textual.timer import EventTargetGone, Timer
from textual.widgets import OptionList

from soothe.widgets import strip_caches

__all__ = ["applied", "apply"]

_APPLIED: set[str] = set()
"""The fixes ``apply()`` put in place ("styles cache", "scroll repaint", "changed rows",
"timer skip")."""
_DONE = False
TEXTUAL_TIMER_RUN = Timer._run
"""Textual's own loop (tests compare the fix with it)."""


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


_UPDATE = "_soothe_update_regions"
"""The regions the partial update being rendered paints (None outside one)."""


def _merged_columns(regions: Any) -> list[Region]:
    """The same cells in fewer regions: regions of the same columns whose rows touch are
    one (a live box's changed rows come one region a row)."""
    merged: list[Region] = []
    for x, y, width, height in sorted(regions, key=lambda r: (r.x, r.width, r.y)):
        last = merged[-1] if merged else None
        if last is not None and last.x == x and last.width == width and y <= last.bottom:
            bottom = max(last.bottom, y + height)
            merged[-1] = Region(x, last.y, width, bottom - last.y)
        else:
            merged.append(Region(x, y, width, height))
    return merged


def _partial_update_noting_regions(render_partial_update: Any) -> Any:
    @wraps(render_partial_update)
    def partial(self: Compositor) -> Any:
        setattr(self, _UPDATE, _merged_columns(self._dirty_regions))
        try:
            return render_partial_update(self)
        finally:
            setattr(self, _UPDATE, None)

    return partial


def _renders_of_changed_rows(get_renders: Any) -> Any:
    @wraps(get_renders)
    def renders(self: Compositor, crop: Region | None = None) -> Any:
        regions: list[Region] | None = getattr(self, _UPDATE, None)
        if not regions or crop is None:
            yield from get_renders(self, crop)
            return
        crop_overlaps = crop.overlaps
        for widget, (region, clip) in self.visible_widgets.items():
            if not crop_overlaps(clip):
                continue
            shown = region.intersection(clip)  # (clip: what its container shows)
            top = bottom = -1
            for changed in regions:
                if changed.overlaps(shown):
                    if top < 0 or changed.y < top:
                        top = changed.y
                    if changed.bottom > bottom:
                        bottom = changed.bottom
            if top < 0:
                continue  # nothing it shows changed: its cells are not written
            band = clip.intersection(Region(clip.x, top, clip.width, bottom - top))
            x, y, width, height = shown.intersection(band)
            if width and height:
                yield (
                    region,
                    band,
                    widget.render_lines(Region(x - region.x, y - region.y, width, height)),
                )

    return renders


async def _run_timer_on_grid(self: Timer) -> None:
    """``Timer._run`` with a late timer's next tick the first one of its grid after now.

    The same loop otherwise: wait until active, tick at ``start + n * interval``, honour
    ``repeat``, ``pause()`` (tick when active again), ``reset()`` and ``skip``.
    """
    count = 0
    repeat = self._repeat
    interval = self._interval
    await self._active.wait()
    start = _time.get_time()
    while repeat is None or count <= repeat:
        due = start + (count + 1) * interval
        now = _time.get_time()
        if self._skip and due < now:
            count = int((now - start) / interval)  # the tick at or before now: next is after
            while start + (count + 1) * interval < now:  # a float one ulp short
                count += 1
            continue
        await _time.sleep(max(0.0, due - now))
        count += 1
        await self._active.wait()
        if self._reset:
            start = _time.get_time()
            count = 0
            self._reset = False
            continue
        try:
            await self._tick(next_timer=due, count=count)
        except EventTargetGone:
            break


def _move_page_once_placed(move_page: Any) -> Any:
    @wraps(move_page)
    def move(self: OptionList, direction: int) -> None:
        if self._options and (self.highlighted or 0) not in self._index_to_line:
            return  # not laid out yet: no line to move from
        move_page(self, direction)

    return move


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
    # (tests/app/test_scroll_repaint.py checks the partial update still renders the widgets
    # of its regions' bounding box)
    if "_get_renders" in Compositor._render_chops.__code__.co_names:
        Compositor.render_partial_update = _partial_update_noting_regions(  # type: ignore[method-assign]
            Compositor.render_partial_update
        )
        Compositor._get_renders = _renders_of_changed_rows(Compositor._get_renders)  # type: ignore[method-assign]
        _APPLIED.add("changed rows")
    # (tests/app/test_timer_skip.py checks Textual's loop still skips one tick too many)
    if {"_skip", "_reset", "_tick"} <= set(Timer._run.__code__.co_names):
        Timer._run = _run_timer_on_grid  # type: ignore[method-assign]
        _APPLIED.add("timer skip")
    # (tests/app/test_every_key.py presses page keys in the palette as it opens)
    if strip_caches.apply():  # a strip makes its caches when it uses one
        _APPLIED.add("strip caches")
    if "_index_to_line" in OptionList._move_page.__code__.co_names:
        OptionList._move_page = _move_page_once_placed(OptionList._move_page)  # type: ignore[method-assign]
        _APPLIED.add("option page")
