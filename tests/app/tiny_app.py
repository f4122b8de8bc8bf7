"""A tiny App holding one widget, for tests of the real widgets without the whole app."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widget import Widget


class One(App[None]):
    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget
