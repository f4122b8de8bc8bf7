"""EvidencePace: new evidence reaches the panel at most once a second while steps stream.

Adding rows to the evidence panel (an OptionList) grows its virtual size, which lays out
the whole screen (20-40 ms here) - under the live boxes of the steps still streaming, whose
tokens and the keys typed meanwhile wait for it. So while a step streams, entries are
held and shown together, at most HOLD_S after the first of them; when nothing streams
they are shown at once. The view model already holds them (``ViewState.evidence``): this
only paces the panel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from soothe.app.session_api import EvidenceView


HOLD_S = 1.0


class EvidencePace:
    def __init__(
        self,
        show: Callable[[list[EvidenceView]], None],
        streaming: Callable[[], bool],
        later: Callable[[float, Callable[[], None]], Any],
    ) -> None:
        self._show = show
        self._streaming = streaming
        self._later = later
        self._held: list[EvidenceView] = []

    @property
    def held(self) -> int:
        return len(self._held)

    def add(self, entries: list[EvidenceView]) -> None:
        if not self._streaming():
            self._show([*self._held, *entries])
            self._held = []
            return
        if not self._held:
            self._later(HOLD_S, self.flush)
        self._held.extend(entries)

    def flush(self) -> None:
        """Show what is held (the hold is over, or nothing streams any more)."""
        held, self._held = self._held, []
        if held:
            self._show(held)

    def drop(self) -> None:
        """Forget what is held (the panel is being refilled from the whole thread)."""
        self._held = []
