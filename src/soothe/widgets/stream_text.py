"""StreamText: append-only wrapped text for streamed tokens, with a line cap.

Appending re-wraps only the open last row, so a long stream costs O(new text) per batch
instead of re-rendering everything (Static.update) or never wrapping (Log). Rows past
``max_lines`` are dropped from the top.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

from soothe.widgets.wrap import clean, wrap_line

STRIP_CACHE = 400
"""Drawn rows kept per widget (a screen shows ~40; a scroll back draws others again)."""


class StreamText(Widget):
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

    def append(self, text: str) -> None:
        text = clean(text)
        if not text:
            return
        before = self.line_count
        rows_before = len(self._rows)
        dropped = self.dropped_rows
        self._ingest(text)
        if self.line_count == before and dropped == self.dropped_rows and self._wrap_width:
            # the same height: only the rows from the old open row on changed (the others
            # keep the lines Textual cached for them)
            self.refresh(Region(0, rows_before, self._wrap_width, before - rows_before))
        else:
            self.refresh(layout=self.line_count != before)

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
        return self.line_count

    def on_resize(self, event: events.Resize) -> None:
        if self.size.width and self.size.width != self._wrap_width:
            self._rewrap(self.size.width)
            self.refresh(layout=True)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        style = self.rich_style
        rows = self._rows
        if y < len(rows):
            if self._strips_for != (width, style) or len(self._strips) > STRIP_CACHE:
                self._strips.clear()
                self._strips_for = (width, style)
            strip = self._strips.get(y)
            if strip is None:
                strip = self._strips[y] = self._strip(rows[y], width, style)
            return strip
        row = self._tail if y == len(rows) else ""
        return self._strip(row, width, style)

    @staticmethod
    def _strip(row: str, width: int, style: Style) -> Strip:
        if not row:
            return Strip.blank(width, style)
        return Strip([Segment(row, style)]).adjust_cell_length(width, style)
