"""A terminal's cells, fed what an app writes to its driver: what the user sees.

``Cells.watch(app)`` wraps ``App._display`` and plays each update the way a terminal
applies it: the update's ``render_segments`` (the escape sequences the driver writes:
cursor moves, SGR styles, text) onto a grid of (character, style) cells; an update the app
drops (``App._display`` draws nothing while a batch holds the screen) is dropped here too.
``whole`` counts whole-screen updates. ``Cells.of_screen(app)`` is the screen rendered
afresh; a grid that differs from it shows cells an update should have repainted and did
not.
"""

from __future__ import annotations

import re
from typing import Any

from rich.cells import cell_len
from textual.app import App

Cell = tuple[str, str]

ESCAPE = re.compile(r"\x1b\[([0-9;?<=>]*)([A-Za-z])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


class Cells:
    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.rows: list[list[Cell]] = [[(" ", "")] * width for _ in range(height)]
        self.whole = 0
        self.partial = 0

    def play(self, update: Any, console: Any) -> None:
        """Apply one update as a terminal applies what the driver writes for it."""
        if hasattr(update, "strips"):
            self.whole += 1
        else:
            self.partial += 1
        self.write(update.render_segments(console))

    def write(self, data: str) -> None:
        x = y = 0
        style = ""
        at = 0
        for found in ESCAPE.finditer(data):
            self._text(data[at : found.start()], x, y, style)
            x += cell_len(data[at : found.start()])
            at = found.end()
            params, command = found.group(1), found.group(2)
            if command == "H":  # cursor to row;col, 1-based
                row, _, col = (params or "1;1").partition(";")
                y, x = int(row or 1) - 1, int(col or 1) - 1
            elif command == "m":
                style = "" if params in ("", "0") else f"{style};{params}"
        self._text(data[at:], x, y, style)

    def _text(self, text: str, x: int, y: int, style: str) -> None:
        for char in text:
            if char == "\n":  # a full update's next line starts with its own move
                continue
            width = cell_len(char)
            if width == 0:
                continue
            if 0 <= y < self.height and 0 <= x < self.width:
                self.rows[y][x] = (char, style)
                for extra in range(1, width):
                    if x + extra < self.width:
                        self.rows[y][x + extra] = ("", style)
            x += width

    def text(self) -> list[str]:
        return ["".join(char for char, _ in row) for row in self.rows]

    def differences(self, other: Cells) -> list[str]:
        """The rows that differ (in a character or a style), as 'row N: mine | theirs'."""
        if (self.width, self.height) != (other.width, other.height):
            return [f"size {self.width}x{self.height} | {other.width}x{other.height}"]
        return [
            f"row {y}: {mine_text!r} | {theirs_text!r}"
            for y, (mine, theirs, mine_text, theirs_text) in enumerate(
                zip(self.rows, other.rows, self.text(), other.text(), strict=True)
            )
            if mine != theirs
        ]

    async def stale(self, app: App[Any], pilot: Any, within: float = 2.0) -> list[str]:
        """The cells that still differ from the screen once the app has painted what it
        had waiting ([] when none). A frame may be due when this is called, or the event
        pump may hold the screen while a card mounts (up to 0.2 s); a cell that no update
        repaints stays wrong through all of ``within`` seconds."""
        wrong = ["the screen is held (a batch) the whole time"]
        for _ in range(max(1, int(within / 0.05))):
            if not app._batch_count:
                wrong = self.differences(Cells.of_screen(app))
                if not wrong:
                    return []
            await pilot.pause(0.05)
        return wrong

    @classmethod
    def watch(cls, app: App[Any]) -> Cells:
        """Cells showing the screen as it is, that every later update of ``app`` is
        played onto (the screen must be up to date: after a pause). A terminal resized
        keeps nothing here: the app must paint it all again."""
        cells = cls.of_screen(app)
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            if renderable is not None and not app._batch_count:
                if (app.size.width, app.size.height) != (cells.width, cells.height):
                    fresh = cls(app.size.width, app.size.height)
                    cells.width, cells.height, cells.rows = fresh.width, fresh.height, fresh.rows
                cells.play(renderable, app.console)
            original(screen, renderable)

        app._display = display  # type: ignore[method-assign]
        return cells

    @classmethod
    def of_screen(cls, app: App[Any]) -> Cells:
        """The current screen rendered whole, afresh (what is waiting to be repainted
        stays waiting)."""
        cells = cls(app.size.width, app.size.height)
        compositor = app.screen._compositor
        waiting = set(compositor._dirty_regions)
        cells.play(compositor.render_full_update(), app.console)
        compositor._dirty_regions.update(waiting)
        cells.whole = 0
        return cells
