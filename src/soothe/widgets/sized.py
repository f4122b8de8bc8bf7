"""Mixins for Textual widgets that are redrawn while steps stream.

PlacedOnce: a widget that does not scroll is placed by the layout that sized it.

Textual's screen hands every widget its new size after a layout (``_size_updated``) and
sets ``virtual_size``, a reactive declared with ``layout=True``: each widget whose size
changed asks for a second layout of the whole screen, one frame later. For a widget that
does not scroll, its virtual size is only its size, which the first layout has already
placed; the second layout moves nothing and costs a full layout (20-40 ms of a streaming
screen: a card that grows, or a step that starts, was two layouts). A widget that mixes
this in keeps the size and skips the second layout. (Textual's private hook; textual is
pinned exactly.)

StyledPerFrame: ``rich_style`` walks every ancestor's styles, and Textual asks
``render_line`` for each row of a frame; a widget that mixes this in reads it once per
frame as ``frame_style`` (it was ~40% of a live box's repaint, ~30% of a tree line's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.style import Style
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widgets import Static

if TYPE_CHECKING:
    from textual.widget import Widget

    _Mixin = Widget
else:
    # not a DOMNode at run time: Textual takes a class's CSS (and its type name in
    # selectors) from its first DOMNode base only, which must stay the real widget class
    _Mixin = object


class PlacedOnce(_Mixin):
    """Mix in before the widget class: ``class Card(PlacedOnce, Vertical)``."""

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        return super()._size_updated(size, virtual_size, container_size, layout=False)


class Line(PlacedOnce, Static):
    """A Static that does not scroll (a card's header, a note)."""


class StyledPerFrame(_Mixin):
    """Mix in before the widget class; ``render_line`` reads ``self.frame_style``."""

    _frame_style: Style | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        self._frame_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = None

    @property
    def frame_style(self) -> Style:
        """The widget's rich style, taken once in this frame (or now, outside one)."""
        return self._frame_style if self._frame_style is not None else self.rich_style
