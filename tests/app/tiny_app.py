"""A tiny App holding one widget, for tests of the real widgets without the whole app."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widget import Widget

from soothe.widgets.step_stream import StepStream
from soothe.widgets.transcript import Transcript


class One(App[None]):
    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


def full_stream(notes: int = 30) -> tuple[One, StepStream, Transcript]:
    """A StepStream in a tiny App with a transcript of ``notes`` notes (more than a
    12-row terminal shows): show it, and the view follows its end."""
    view = StepStream()
    transcript = Transcript("conversation", "Conversation")
    for i in range(notes):
        transcript.note(f"note {i}")
    return One(view), view, transcript
