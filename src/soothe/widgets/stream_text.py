"""StreamText: append-only wrapped text for streamed tokens, with a line cap.

Appending re-wraps only the open last row, so a long stream costs O(new text) per batch
instead of re-rendering everything (Static.update) or never wrapping (Log). Rows past
``max_lines`` are dropped from the top.

``set_tail(n)`` makes the widget a live box of at most ``n`` rows showing the newest
rows (the first says how many are above once they do not fit), the way a running step's
card shows its output. The box is TAIL_FIRST rows high until its text needs more, then
``n`` (``open_tail`` opens it before that): while the text streams a new row is a repaint
of the box, not a layout of the screen and a scroll of everything in it. Only the row
that opens the box is a layout.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

from soothe.widgets.sized import PlacedOnce, StyledPerFrame
from soothe.widgets.wrap import clean, wrap_line

STRIP_CACHE = 400
"""Drawn rows kept per widget (a screen shows ~40; a scroll back draws others again)."""
HINT_STYLE = Style(dim=True, italic=True)
TAIL_FIRST = 8
"""A live box is this many rows high until its text needs more: a short reply leaves few
blank rows below it, and a long one makes the box grow once (a layout of the screen)."""


class StreamText(PlacedOnce, StyledPerFrame, Widget):
    DEFAULT_CSS = """
    StreamText {
        height: auto;
        width: 1fr;
    }
    """

    def __init__(
        self,
        text: str = "",
        *,
        max_lines: int = 2000,
        placeholder: str = "",
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.max_lines = max_lines
        self.max_chars = max_lines * 160
        self._source: list[str] = []
        self._source_chars = 0
        self._rows: list[str] = []
        self._tail = ""
        self._wrap_width = 0
        self.seen = 0
        """Characters of the source segment already shown (kept by the StepStream)."""
        self.dropped_rows = 0
        self._strips: dict[int, Strip] = {}
        """Finished rows drawn (they never change until a rewrap or a trim)."""
        self._strips_for: tuple[int, Style] | None = None
        self._tail_rows: int | None = None
        self._opened = False
        self.placeholder = placeholder
        """Shown, dim, while there is no text."""
        if text:
            self._ingest(clean(text))

    @property
    def line_count(self) -> int:
        return len(self._rows) + (1 if self._tail else 0)

    @property
    def text(self) -> str:
        return "".join(self._source)

    def rows(self) -> list[str]:
        return [*self._rows, self._tail] if self._tail else list(self._rows)

    @property
    def tail_rows(self) -> int | None:
        return self._tail_rows

    @property
    def shown_count(self) -> int:
        """Rows the widget is high: every row; or, with a tail, TAIL_FIRST rows until the
        text needs more (or the box was opened), then the tail (blank below the text until
        it fills them), so the height changes once while the text streams."""
        tail = self._tail_rows
        if tail is None:
            return self.line_count
        return tail if self.opened else min(tail, TAIL_FIRST)

    @property
    def opened(self) -> bool:
        """The box is as high as its tail (its text needed more than TAIL_FIRST rows)."""
        return self._opened or self.line_count > TAIL_FIRST

    def open_tail(self) -> None:
        """Be as high as the tail now (the other live boxes in view opened: they grow in
        the same layout)."""
        if self._opened:
            return
        before = self.shown_count
        self._opened = True
        if self.shown_count != before:
            self._relayout()

    def _offset(self) -> int:
        """The index of the row the widget's row 0 stands for (the hint, in a full box)."""
        if self._tail_rows is None:
            return 0
        return max(0, self.line_count - self.shown_count)

    @property
    def hidden_count(self) -> int:
        """Rows above the tail (its first row says how many, so it hides one too)."""
        offset = self._offset()
        return offset + 1 if offset else 0

    def set_tail(self, rows: int | None) -> None:
        """Be ``rows`` rows high and show the newest of them (``None``: every row)."""
        rows = None if rows is None else max(2, rows)
        if rows == self._tail_rows:
            return
        before = self.shown_count
        self._tail_rows = rows
        if self.shown_count != before:
            self._relayout()
        else:
            self.refresh()

    def append(self, text: str) -> None:
        text = clean(text)
        if not text:
            return
        shown = self.shown_count
        offset = self._offset()
        rows_before = len(self._rows)
        dropped = self.dropped_rows
        self._ingest(text)
        if not self._wrap_width or self.shown_count != shown:
            self._relayout()
        elif self._offset() == offset and dropped == self.dropped_rows:
            # the same rows on screen: only those from the old open row on changed (the
            # others keep the lines Textual cached for them)
            top = max(0, rows_before - offset)
            self.refresh(Region(0, top, self._wrap_width, shown - top))
        else:  # the same height, every row moved up (a tail, or rows dropped at the cap)
            self.refresh()

    def _relayout(self) -> None:
        """Ask for a layout of the screen, once mounted: the first layout sizes a widget that
        is not mounted yet anyway, and Textual holds a layout asked for before the mount
        until the widget's next message (a Resize after that first layout: a second one)."""
        if self.is_mounted:
            self.refresh(layout=True)
        else:
            self.refresh()

    def _ingest(self, text: str) -> None:
        self._source.append(text)
        self._source_chars += len(text)
        if self._source_chars > self.max_chars:
            self._trim_source()
        if self._wrap_width:
            self._wrap_in(text)

    def _trim_source(self) -> None:
        joined = "".join(self._source)
        cut = len(joined) - self.max_chars * 3 // 4
        newline = joined.find("\n", cut, cut + 400)
        if newline != -1:
            cut = newline + 1
        self._source = [joined[cut:]]
        self._source_chars = len(self._source[0])

    def _wrap_in(self, text: str) -> None:
        width = self._wrap_width
        rows = self._rows
        for index, part in enumerate(text.split("\n")):
            if index:
                rows.append(self._tail)
                self._tail = ""
            if part:
                wrapped = wrap_line(self._tail + part, width)
                rows.extend(wrapped[:-1])
                self._tail = wrapped[-1]
        excess = len(rows) + (1 if self._tail else 0) - self.max_lines
        if excess > 0:
            del rows[:excess]
            self.dropped_rows += excess
            self._strips.clear()

    def _rewrap(self, width: int) -> None:
        self._wrap_width = max(1, width)
        self._strips.clear()
        self._rows = []
        self._tail = ""
        self._wrap_in("".join(self._source))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if width != self._wrap_width:
            self._rewrap(width)
        return self.shown_count

    def on_resize(self, event: events.Resize) -> None:
        if self.size.width and self.size.width != self._wrap_width:
            self._rewrap(self.size.width)
            self.refresh(layout=True)

    def render_lines(self, crop: Region) -> list[Strip]:
        width = self.size.width
        if width and width != self._wrap_width:
            # Placed at another width than the layout last asked its height for (the
            # layout asks for a trial width, e.g. beside a scrollbar it then drops, and
            # keeps the place it had): the rows must be wrapped at the width they show at.
            self._rewrap(width)
            # every row: this frame's from the cleared cache, the rest in the next frame;
            # a layout only when the rows now need another height than the one placed
            self.refresh(layout=self.shown_count != self.size.height)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        style = self.frame_style
        offset = self._offset()
        if offset and y == 0:
            hidden = self.hidden_count
            hint = f"⋮ {hidden} earlier row{'' if hidden == 1 else 's'} · pgup shows them"
            return self._strip(hint, width, style + HINT_STYLE)
        if y == 0 and self.placeholder and not self.line_count:
            return self._strip(self.placeholder, width, style + HINT_STYLE)
        index = offset + y
        rows = self._rows
        if index < len(rows):
            if self._strips_for != (width, style) or len(self._strips) > STRIP_CACHE:
                self._strips.clear()
                self._strips_for = (width, style)
            strip = self._strips.get(index)
            if strip is None:
                strip = self._strips[index] = self._strip(rows[index], width, style)
            return strip
        row = self._tail if index == len(rows) else ""
        return self._strip(row, width, style)

    @staticmethod
    def _strip(row: str, width: int, style: Style) -> Strip:
        if not row:
            return Strip.blank(width, style)
        return Strip([Segment(row, style)]).adjust_cell_length(width, style)
