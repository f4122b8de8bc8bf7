"""The Textual application."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, Static

from soothe.engine.config import Settings


class SootheApp(App[None]):
    TITLE = "Soothe"

    def __init__(self, settings: Settings, thread_id: str | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.thread_id = thread_id

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Soothe — type a request below (the workbench is being built)")
        yield Footer()
