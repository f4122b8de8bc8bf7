"""SteadyFooter: Textual's Footer, recomposed only when the keys it shows changed.

Textual's Footer rebuilds all its keys (a dozen widgets, so a layout of the whole screen)
whenever anything calls ``refresh_bindings`` - a run starting or ending, a goal updated,
the tree cursor moving - most often with the same keys as before. On a full screen that
layout costs a tenth of a second of the loop the run shares.

Keys that do not fit whole are left out from the right (F1 lists every key) instead of
the last one cut mid-word ("^l Promp"); quit and help are kept at any width. What fits
is decided in the layout that places the keys (``WholeKeysLayout``): a pass after a
refresh could run before the new keys were placed (a batch open elsewhere holds the
layout back, not the callbacks), find nothing to leave out, and leave "f" of "f1 Help"
drawn at 80 columns once 'esc Interrupt' appeared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import events
from textual.layouts.horizontal import HorizontalLayout
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup

if TYPE_CHECKING:
    from textual.geometry import Size
    from textual.layout import ArrangeResult, Layout
    from textual.screen import Screen
    from textual.widget import Widget

PALETTE = "-command-palette"


ALWAYS = ("quit", "help")
"""The actions whose keys the footer keeps at any width (how to leave, where every key is
listed); the others are left out from the right to make room for them."""


def _always(widget: Widget) -> bool:
    return isinstance(widget, FooterKey) and widget.action.rsplit(".", 1)[-1] in ALWAYS


class WholeKeysLayout(HorizontalLayout):
    """Textual's horizontal layout, without the keys that do not fit whole: keys are left
    unplaced, so never drawn, from the right until the rest fit (the palette key, docked
    right, is outside the width), except quit and help (``ALWAYS``), which stay; a key
    group goes with the label after it (its keys mean nothing without it). ``left_out``
    hears which keys were left out."""

    def __init__(self, left_out: Callable[[list[Widget]], None]) -> None:
        super().__init__()
        self._left_out = left_out

    def arrange(
        self, parent: Widget, children: list[Widget], size: Size, greedy: bool = True
    ) -> ArrangeResult:
        placements = super().arrange(parent, children, size, greedy)
        if all(placement.region.right <= size.width for placement in placements):
            return placements
        units: list[list[Widget]] = []  # a key, or a key group with its label
        for child in children:
            if isinstance(child, FooterLabel) and units and isinstance(units[-1][-1], KeyGroup):
                units[-1].append(child)
            else:
                units.append([child])
        kept = list(units)
        for unit in reversed(units):
            if any(_always(widget) for widget in unit):
                continue
            kept.remove(unit)
            shown = [widget for part in kept for widget in part]
            placements = super().arrange(parent, shown, size, greedy)
            if all(placement.region.right <= size.width for placement in placements):
                break
        placed = {placement.widget for placement in placements}
        self._left_out([child for child in children if child not in placed])
        return placements


class SteadyFooter(Footer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: tuple[object, ...] | None = None
        self._width = 0
        self._whole_keys = WholeKeysLayout(self._leave_out)

    @property
    def layout(self) -> Layout:
        """Always the keys in a row, whole ones only (Footer's CSS sets 'horizontal')."""
        return self._whole_keys

    def _keys(self) -> tuple[object, ...]:
        """What the footer draws: the shown bindings only. (Two hidden bindings of one key,
        e.g. ctrl+d for the demo model and the prompt's delete-right, take turns in
        ``active_bindings``; counting them recomposed a footer that looked the same.)"""
        return tuple(
            (key, binding.key, binding.description, enabled, tooltip)
            for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show
        )

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        if not self.is_attached:
            return
        keys = self._keys()
        if keys == self._shown:
            return
        self._shown = keys
        await self.recompose()
        # Each FooterKey binds ``compact`` to the footer (a watcher on it); Textual drops a
        # closed widget's watcher only when the value changes, which ``compact`` never
        # does: without this every recompose kept a dozen removed keys alive.
        for watchers in getattr(self, "__watchers", {}).values():
            watchers[:] = [(node, cb) for node, cb in watchers if not node._closing]

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width == self._width:
            return  # a key left out changes the virtual size only
        self._width = event.size.width
        for item in self._items():
            item.display = True  # placed again at the new width, left out if need be

    def _items(self) -> list[Widget]:
        return [child for child in self.children if not child.has_class(PALETTE)]

    def _leave_out(self, items: list[Widget]) -> None:
        """Keys the layout left unplaced: hidden too (already not drawn), so they count as
        left out until the next resize places them all again."""
        self.call_later(self._hide, items)

    def _hide(self, items: list[Widget]) -> None:
        for item in items:
            if item.parent is self:
                item.display = False
