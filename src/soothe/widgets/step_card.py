"""StepCardView: one step's live card (header, streamed text, tool calls), updated in place.

The card is the widget of a ``StepCard`` block: while the step streams, its text grows in
its own StreamText and its tool calls appear under it, so two parallel steps never
interleave. While the step runs and the view follows the end, the StepStream gives the
card a live height (``set_live``): the card ends with a live box (a StreamText in tail
mode) that shows the newest rows of its text, so every running step stays in view and
a new row repaints the box instead of moving the screen. When the step's text is the
goal's final answer, the finished card shows it rendered (Markdown) instead of
repeating it in a separate answer block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import monotonic

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.timer import Timer
from textual.widget import AwaitMount, Widget

from soothe.widgets.sized import Line, PlacedOnce
from soothe.widgets.stream_text import StreamText
from soothe.widgets.thinking_block import ThinkingBlock
from soothe.widgets.tool_call import ToolCallBlock
from soothe.widgets.transcript import StepCard, TextRun, ToolRun

SPINNER = "◐◓◑◒"
STATUS_MARKS = {
    "completed": ("✓", "$success"),
    "failed": ("✗", "$error"),
    "cancelled": ("⊗", "$warning"),  # engine.glyphs: ⊘ is blocked
    "skipped": ("↷", "$text-muted"),
    "suspended": ("‖", "$warning"),  # paused (Esc): resume continues it
}
STREAM_MAX_LINES = 2000
HEADER_EVERY_S = 0.25
"""While a step runs, its header (the spinner, the token count) is drawn again at most
this often. Drawn at every batch, the two headers of two streaming steps were ~35 ms of
each second of the screen's time (Textual's Content path: ~0.4 ms a row)."""
WAITING = {
    None: "waiting for the model…",
    "approval": "waiting for your approval…",
    "clarification": "waiting for your answer…",
}
"""What a running card's live box says before its next text comes."""
AWAITING_MARK = ("?", "$accent")  # engine.glyphs: ? is a step waiting for the user


def card_facts(card: StepCard) -> list[str]:
    """What a card's header says of its step besides its name: tokens, time, answer."""
    facts = []
    if card.tokens:
        facts.append(f"{card.tokens} token{'' if card.tokens == 1 else 's'}")
    if card.duration_s:
        facts.append(f"{card.duration_s:.1f} s")
    if card.answer:
        facts.append("answer")
    return facts


def card_header(card: StepCard) -> Content:
    if card.status == "active" and card.awaiting:
        mark = AWAITING_MARK
    elif card.status == "active":
        mark = (SPINNER[card.tokens % len(SPINNER)], "$warning")
    else:
        mark = STATUS_MARKS.get(card.status, ("•", "$text-muted"))
    facts = card_facts(card)
    description = " ".join(card.description.split())
    if len(description) > 100:
        description = description[:99] + "…"
    return Content.assemble(
        mark,
        " ",
        (card.key, "bold $accent"),
        " ",
        description,
        ("  " + " · ".join(facts) if facts else "", "$text-muted"),
    )


class StepCardView(PlacedOnce, Vertical):
    DEFAULT_CSS = """
    StepCardView {
        height: auto;
        margin-top: 1;
        border-left: outer $accent 50%;
        padding-left: 1;
    }
    StepCardView.-answer { border-left: outer $success; background: $boost; }
    StepCardView.-failed { border-left: outer $error; }
    StepCardView > .card-header { width: 1fr; height: auto; }
    StepCardView > .card-detail { color: $text-muted; width: 1fr; height: auto; }
    StepCardView > .card-detail.-error { color: $error; }
    StepCardView > StreamText { color: $foreground; padding-left: 1; }
    StepCardView > .answer { margin: 0; padding: 0 1; }
    StepCardView > .answer > MarkdownParagraph:last-child { margin-bottom: 0; }
    """

    def __init__(
        self,
        card: StepCard,
        *,
        on_mounting: Callable[[AwaitMount, Sequence[Widget]], None] | None = None,
    ) -> None:
        super().__init__()
        self.card = card
        self.on_mounting = on_mounting
        """Told of each mount the card starts (the StepStream holds the screen for them)."""
        self.seen_version = -1
        self._header_content = card_header(card)
        self._header_at = monotonic()
        self._header_live = card.status == "active"
        """The header shown is a running step's (its spinner turns)."""
        self._header_awaiting = card.awaiting
        """What the header shown says the step waits for from the user."""
        self._header_timer: Timer | None = None
        self._header = Line(self._header_content, classes="card-header")
        self._thinking: ThinkingBlock | None = None
        """The step's reasoning, folded (made when the first of it comes)."""
        self._detail = Line(classes="card-detail")
        self._parts: dict[int, Widget] = {}
        self._rendered = False
        self._detail_text: str | None = None
        self.live_rows: int | None = None
        """Rows of text shown while the step runs (None: all of them)."""
        self.held = False
        self._box: StreamText | None = None
        """The live box waiting for the step's next text (mounted at the end of the card
        while it runs: the text, when it comes, fills it without a layout)."""

    @property
    def running(self) -> bool:
        return self.card.status == "active"

    @property
    def boxed(self) -> bool:
        """Its text is shown in a live box (it runs, or it ended and is held)."""
        return any(
            w.tail_rows is not None for w in self._parts.values() if isinstance(w, StreamText)
        )

    @property
    def live_box(self) -> StreamText | None:
        """The StreamText shown as the live box (the step's newest text, or the box
        waiting for it), if any."""
        if self._box is not None:
            return self._box
        newest = self.card.parts[-1] if self.card.parts else None
        widget = self._parts.get(id(newest)) if newest is not None else None
        if isinstance(widget, StreamText) and widget.tail_rows is not None:
            return widget
        return None

    def set_live(self, rows: int | None, *, held: bool = False) -> None:
        """Show at most ``rows`` rows of text while the step runs (None: all). ``held``:
        the step has ended but other steps in the view still stream, so its box stays as
        it is (laying out its whole text now would move the screen under them)."""
        if rows == self.live_rows and held == self.held:
            return
        self.live_rows = rows
        self.held = held
        self._apply_tail()

    def _apply_tail(self, *, now: bool = False) -> None:
        """The newest part, if it is text, is the live box; earlier text is shown whole.

        When the step has ended, the box keeps its rows for one more frame, so the last
        tokens are painted before the whole text is laid out."""
        live = self.running or self.held
        if not live and not now and self.boxed:
            self.call_after_refresh(self._apply_tail, now=True)
            return
        for part in self.card.parts:
            widget = self._parts.get(id(part))
            if isinstance(widget, StreamText):
                widget.set_tail(self._tail_for(part))
        self._place_box()

    def _tail_for(self, part: TextRun | ToolRun) -> int | None:
        """The rows ``part``'s text shows: the live rows for the newest part of a card
        that runs (or is held), every row for any other."""
        newest = self.card.parts[-1] if self.card.parts else None
        return self.live_rows if (self.running or self.held) and part is newest else None

    def _wants_box(self) -> bool:
        last = self.card.parts[-1] if self.card.parts else None
        return self.running and self.live_rows is not None and not isinstance(last, TextRun)

    def _new_box(self) -> StreamText:
        box = StreamText(max_lines=STREAM_MAX_LINES, placeholder=WAITING[self.card.awaiting])
        box.set_tail(self.live_rows)
        return box

    def _place_box(self) -> None:
        """A running card in a live view ends with a box for its next text."""
        wanted = self._wants_box()
        if wanted and self._box is None and self._detail.parent is self:  # composed
            self._box = self._new_box()
            self._mount(self._box, before=self._detail)
        elif self._box is not None:
            if wanted:
                self._box.set_tail(self.live_rows)
            else:
                self._box.remove()
                self._box = None

    def compose(self) -> ComposeResult:
        yield self._header
        if self.card.thinking:
            self._thinking = ThinkingBlock(self.card)
            yield self._thinking
        if self._shows_answer():  # a finished answer card (a view shown, a reopened thread)
            self._rendered = True
            for part in self.card.parts:
                if isinstance(part, ToolRun):
                    yield self._part_widget(part)
            yield self._answer_widget()
            yield self._detail
            return
        for part in self.card.parts:
            yield self._part_widget(part)
        if self._wants_box():  # in the first layout, not one frame later
            self._box = self._new_box()
            yield self._box
        yield self._detail

    def on_mount(self) -> None:
        self.sync()

    def _part_widget(self, part: TextRun | ToolRun) -> Widget:
        widget: Widget
        if isinstance(part, TextRun):
            widget = StreamText(part.text, max_lines=STREAM_MAX_LINES)
            widget.seen = part.total
            widget.set_tail(self._tail_for(part))  # in its first layout
        else:
            widget = ToolCallBlock(part)
        self._parts[id(part)] = widget
        return widget

    def sync(self) -> None:
        """Bring the card up to date with its block (only what changed is redrawn)."""
        card = self.card
        if card.version == self.seen_version and self.is_mounted:
            return
        self.seen_version = card.version
        self._sync_header()
        self.set_class(card.answer, "-answer")
        self.set_class(card.status == "failed", "-failed")
        if card.detail != self._detail_text:
            self._detail_text = card.detail
            self._detail.update(Content(card.detail))
            self._detail.display = bool(card.detail)
        self._detail.set_class(card.status == "failed", "-error")
        self._sync_thinking()
        if self._shows_answer():
            self._render_answer()
            return
        if self._box is not None and self._box.placeholder != WAITING[card.awaiting]:
            self._box.placeholder = WAITING[card.awaiting]
            self._box.refresh()
        if self._detail.parent is not self:
            # not composed yet (a view just shown, a batch before the card's compose):
            # compose builds every part as the card has it then
            return
        new: list[Widget] = []
        anchor: Widget = self._box if self._box is not None else self._detail
        for part in card.parts:
            widget = self._parts.get(id(part))
            if widget is None and isinstance(part, TextRun) and self._box is not None:
                if new:  # parts before this text go before its box
                    self._mount(*new, before=self._box)
                    new = []
                box, self._box = self._box, None  # the text fills the box already shown
                anchor = self._detail
                self._parts[id(part)] = box
                box.append(part.text)
                box.seen = part.total
            elif widget is None:
                new.append(self._part_widget(part))
            elif isinstance(part, TextRun) and isinstance(widget, StreamText):
                widget.append(part.since(widget.seen))
                widget.seen = part.total
            elif isinstance(part, ToolRun) and isinstance(widget, ToolCallBlock):
                widget.sync(part)
        # is_attached, not is_mounted: a part that arrives between compose and the end of
        # on_mount must be mounted too (its widget is kept in _parts and fed from then on)
        if new and self.is_attached:
            self._mount(*new, before=anchor)
        self._apply_tail()

    def _sync_thinking(self) -> None:
        """The folded reasoning under the header: made when the first of it comes."""
        if self._thinking is not None:
            self._thinking.sync()
        elif self.card.thinking and self._header.parent is self:
            self._thinking = ThinkingBlock(self.card)
            mounting = self.mount(self._thinking, after=self._header)
            if self.on_mounting is not None:
                self.on_mounting(mounting, [self._thinking])

    def _sync_header(self) -> None:
        """The header as the card is now; while the step runs, at most every
        HEADER_EVERY_S: a batch that comes sooner leaves it, and what came is drawn with
        the first batch after that time, or by a timer once batches stop (0.25-0.5 s
        after the last: each batch pushes it back, and Textual restarts a reset timer
        when it next wakes; a timer that fired while batches come would be a frame of
        its own)."""
        live = self.card.status == "active" and self._header_live
        if self.card.awaiting != self._header_awaiting:  # the user is asked, or answered
            live = False
        if live and monotonic() - self._header_at < HEADER_EVERY_S:
            if self._header_timer is not None:
                self._header_timer.reset()
            elif self.is_attached:
                self._header_timer = self.set_timer(HEADER_EVERY_S, self._header_due)
            return
        self._header_due()

    @property
    def header_pending(self) -> bool:
        """The header waits to show what came in the last HEADER_EVERY_S (its timer)."""
        return self._header_timer is not None

    def _header_due(self) -> None:
        if self._header_timer is not None:
            self._header_timer.stop()
            self._header_timer = None
        self._header_at = monotonic()
        self._header_live = self.card.status == "active"
        self._header_awaiting = self.card.awaiting
        self._update_header(card_header(self.card))

    def _update_header(self, header: Content) -> None:
        """A new header (each batch turns the spinner and counts the tokens): no layout of
        the screen while it takes as many rows as it has now."""
        old = self._header_content
        if header.plain == old.plain and header.spans == old.spans:  # Content's == is text only
            return
        self._header_content = header
        widget = self._header
        width = widget.size.width
        same = bool(width) and header.get_height(widget.styles, width) == widget.size.height  # type: ignore[arg-type]  # as Textual does
        widget.update(header, layout=not same)

    def _shows_answer(self) -> bool:
        return self.card.answer and self.card.status != "active"

    def _answer_widget(self) -> Widget:
        from textual.widgets import Markdown  # markdown-it costs ~30 ms: only when needed

        return Markdown(self.card.text, classes="answer")

    def _render_answer(self) -> None:
        """The text is the goal's answer: show it once, rendered, instead of the raw text.

        Done once the card has composed (before that, compose renders it): it is marked
        done only when the answer is mounted. (Marked first, a card whose answer came
        before it was mounted - any card of a view shown again, of a reopened thread -
        dropped its text in ``on_mount``, where ``is_mounted`` is still False, and never
        showed the answer.)"""
        if self._rendered or self._detail.parent is not self:
            return
        self._rendered = True
        if self._box is not None:
            self._box.remove()
            self._box = None
        for part, widget in list(self._parts.items()):
            if isinstance(widget, StreamText):
                widget.remove()
                self._parts.pop(part)
        tools = [w for w in self._parts.values() if w.parent is None]
        if tools:
            self._mount(*tools, before=self._detail)
        self._mount(self._answer_widget(), before=self._detail)

    def _mount(self, *widgets: Widget, before: Widget) -> None:
        mounting = self.mount_all(widgets, before=before)
        if self.on_mounting is not None:
            self.on_mounting(mounting, widgets)
