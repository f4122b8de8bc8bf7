"""SteadyFooter: Textual's Footer, recomposed only when the keys it shows changed.

Textual's Footer rebuilds all its keys (a dozen widgets, so a layout of the whole screen)
whenever anything calls ``refresh_bindings`` - a run starting or ending, a goal updated,
the tree cursor moving - most often with the same keys as before. On a full screen that
layout costs a tenth of a second of the loop the run shares.

Keys that do not fit whole are left out from the right (F1 lists every key) instead of
the last one cut mid-word ("^l Promp").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events
from textual.widgets import Footer
from textual.widgets._footer import FooterLabel, KeyGroup

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.widget import Widget

PALETTE = "-command-palette"


class SteadyFooter(Footer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: tuple[object, ...] | None = None

    def _keys(self) -> tuple[object, ...]:
        return tuple(
            (key, binding.key, binding.description, binding.show, enabled, tooltip)
            for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items()
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
        self.call_after_refresh(self._leave_out_what_does_not_fit)
        # Each FooterKey binds ``compact`` to the footer (a watcher on it); Textual drops a
        # closed widget's watcher only when the value changes, which ``compact`` never
        # does: without this every recompose kept a dozen removed keys alive.
        for watchers in getattr(self, "__watchers", {}).values():
            watchers[:] = [(node, cb) for node, cb in watchers if not node._closing]

    def on_resize(self, event: events.Resize) -> None:
        for item in self._items():
            item.display = True  # placed again at the new width, then left out if need be
        self.call_after_refresh(self._leave_out_what_does_not_fit)

    def _items(self) -> list[Widget]:
        return [child for child in self.children if not child.has_class(PALETTE)]

    def _leave_out_what_does_not_fit(self) -> None:
        if not self.is_attached:
            return
        palette = [child for child in self.children if child.has_class(PALETTE)]
        limit = palette[0].region.x if palette else self.content_region.right
        items = self._items()
        past = False
        for index, item in enumerate(items):
            right = item.region.right
            following = items[index + 1] if index + 1 < len(items) else None
            if isinstance(item, KeyGroup) and isinstance(following, FooterLabel):
                right = following.region.right  # a group's keys mean nothing without it
            past = past or right > limit
            if past:
                item.display = False
