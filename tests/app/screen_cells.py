"""A terminal's cells, fed the updates an app hands its driver: what the user sees.

``Cells.watch(app)`` wraps ``App._display`` so every update (a whole-screen
``LayoutUpdate`` or a partial ``ChopsUpdate``) is played onto a grid of (character,
style) cells, the way a terminal applies the escape sequences; ``whole`` counts the
whole-screen updates. ``Cells.of_screen(app)`` is the screen rendered afresh; a grid that
differs from it shows cells that an update should have repainted and did not.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.segment import ControlType, Segment
from textual.app import App

Cell = tuple[str, str]


class Cells:
    def __init__(self, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self.rows: list[list[Cell]] = [[(" ", "")] * width for _ in range(height)]
        self.whole = 0
        self.partial = 0

    def play(self, update: Any, console: Console) -> None:
        if hasattr(update, "strips"):
            self.whole += 1
        else:
            self.partial += 1
        x = y = 0
        for segment in update.__rich_console__(console, console.options):
            if not isinstance(segment, Segment):
                continue
            if segment.control:
                for control in segment.control:
                    if control[0] == ControlType.CURSOR_MOVE_TO:
                        x, y = int(control[1]), int(control[2])  # type: ignore[misc]
                continue
            if segment.text == "\n":
                x, y = 0, y + 1
                continue
            style = str(segment.style or "")
            for char in segment.text:
                width = cell_len(char)
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
        return [
            f"row {y}: {mine_text!r} | {theirs_text!r}"
            for y, (mine, theirs, mine_text, theirs_text) in enumerate(
                zip(self.rows, other.rows, self.text(), other.text(), strict=True)
            )
            if mine != theirs
        ]

    @classmethod
    def watch(cls, app: App[Any]) -> Cells:
        """Cells showing the screen as it is, that every later update of ``app`` is
        played onto (the screen must be up to date: after a pause)."""
        cells = cls.of_screen(app)
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            if renderable is not None:
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
