"""StepStream: the live stream of the selected goal, step or the whole conversation.

It shows one Transcript (a view of the view model) at a time: notes, one live card per
step (StepCardView: its text and tool calls, updated in place), tool calls outside a step
and final answers (one Markdown widget each, set once). The event handler calls ``touch``
with the blocks that changed in a batch; only the visible transcript is ever rendered, and
only its last WINDOW blocks are mounted: what is on screen plus a window. Home (or
scrolling to the top) mounts the next older window; past what the view model holds it asks
``load_earlier`` (the app pages the blocks back in from the store). Back at the end, the
extra blocks are released again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Self

from textual.containers import VerticalScroll
from textual.content import Content
from textual.geometry import Region, Size
from textual.scrollbar import ScrollBar, ScrollTo, ScrollUp
from textual.widget import Widget
from textual.widgets import Static

from soothe.widgets import textual_fixes
from soothe.widgets.pasted import PastedRequest, folds
from soothe.widgets.sized import Line
from soothe.widgets.step_card import StepCardView
from soothe.widgets.stream_text import StreamText
from soothe.widgets.tool_call import ToolCallBlock
from soothe.widgets.transcript import Answer, Block, Note, StepCard, ToolRun, Transcript

if TYPE_CHECKING:
    from textual._arrange import DockArrangeResult
    from textual.widget import AwaitMount
    from textual.widgets import Markdown

textual_fixes.apply()  # released blocks must not stay alive in Textual's style cache

EMPTY_TEXT = "Type a request below and press enter — or /goal TEXT to queue a goal. F1 for help."
EMPTY_GOAL_TEXT = "Nothing streamed here yet."
LIVE_MAX_ROWS = 30
LIVE_MIN_ROWS = 4
"""While the view follows the end, a running step's card shows at most this many rows of
its newest text (fewer when several run at once, so all of them fit): its box then stops
growing, and the screen stops moving while it streams. Scrolling up shows every row."""
WINDOW = 40
"""Blocks mounted at once (a screen holds at most ~35): older ones are released (and
mounted again on scroll back). Every mounted widget costs each frame's layout."""

NOTE_ICONS = {
    "user": "› ",
    "plan": "◇ ",
    "step": "▸ ",
    "ok": "✓ ",
    "warn": "! ",
    "error": "✗ ",
    "info": "",
    "reasoning": "",
}


def _markdown(text: str) -> Markdown:
    from textual.widgets import Markdown  # markdown-it costs ~30 ms: only when needed

    return Markdown(text, classes="answer")


def _mounted(widgets: Sequence[Widget]) -> bool:
    return all(w.is_mounted for w in widgets)


class StepStream(VerticalScroll):
    DEFAULT_CSS = """
    StepStream {
        padding: 0 1;
        scrollbar-size-vertical: 1;
    }
    StepStream > .note { width: 1fr; height: auto; }
    StepStream > .-user { color: $primary; text-style: bold; margin-top: 1; }
    StepStream > .-plan { color: $secondary; }
    StepStream > .-step { color: $accent; margin-top: 1; }
    StepStream > .-ok { color: $success; }
    StepStream > .-warn { color: $warning; }
    StepStream > .-error { color: $error; text-style: bold; }
    StepStream > .-info { color: $text-muted; }
    StepStream > .-reasoning { color: $text-muted; text-style: italic; }
    StepStream > .earlier { color: $text-muted; text-align: center; width: 1fr; }
    StepStream > .answer {
        margin: 1 0 0 0;
        padding: 0 1;
        background: $boost;
        border-left: outer $success;
    }
    StepStream > .answer.-failed { border-left: outer $error; }
    StepStream > .answer > MarkdownParagraph:last-child { margin-bottom: 0; }
    StepStream > .empty { color: $text-muted; margin-top: 1; text-align: center; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.can_focus = True
        self.transcript: Transcript | None = None
        self._blocks: dict[int, Widget] = {}
        self._empty: Static | None = None
        self._earlier: Static | None = None
        self.window = WINDOW
        self.follow = True
        self._hold_follow = False
        """The user scrolled up and the live cards grew: the view is not "at the end"
        until the layout has placed what they show now."""
        self._placed_height = 0
        """The height of the view's region at the last layout (``arrange``)."""
        self._painted_look: tuple[object, ...] | None = None
        """What the view's own rows were last drawn from (``refresh``)."""
        self._show_from: Widget | None = None
        """A card page up put at the top while its box opened: put it there again once
        the layout has placed the open box (before, the view may not reach it)."""
        self.mounting: list[tuple[AwaitMount, Sequence[Widget]]] = []
        """The mounts ``show``, ``touch`` and the cards in view started, with what each
        mounts (``take_mounting``)."""
        self.load_earlier: Callable[[str], bool] | None = None
        """Page older blocks of the view back in from the store (set by the app); returns
        whether it will (it calls ``show_loaded`` when they are there)."""

    @property
    def key(self) -> str | None:
        return self.transcript.key if self.transcript is not None else None

    def show(self, transcript: Transcript, *, window: int = WINDOW) -> None:
        """Replace what is shown with ``transcript`` (its last ``window`` blocks)."""
        self.transcript = transcript
        self.border_title = transcript.title
        self.window = window
        self._blocks.clear()
        segments = list(transcript.segments)
        hidden = max(0, len(segments) - window)
        widgets = [self._block(segment) for segment in segments[hidden:]]
        self._empty = None
        self._earlier = None
        if hidden or transcript.released:
            self._earlier = Static(self._earlier_text(hidden), classes="earlier")
            widgets.insert(0, self._earlier)
        if not widgets:
            text = EMPTY_TEXT if transcript.key == "conversation" else EMPTY_GOAL_TEXT
            self._empty = Static(text, classes="empty")
            widgets = [self._empty]
        self.follow = True
        self._hold_follow = False
        self._update_live()
        with self.app.batch_update():
            self.remove_children()
            self._mount_all(widgets)
        self.scroll_end(animate=False)

    def _earlier_text(self, hidden: int) -> str:
        released = self.transcript.released if self.transcript is not None else 0
        parts = []
        if hidden:
            parts.append(f"▲ {hidden} earlier block{'' if hidden == 1 else 's'} — home shows them")
        if released or (self.transcript is not None and self.transcript.earlier):
            parts.append("older ones load from the thread's history (home)")
        return " · ".join(parts)

    def show_earlier(self) -> bool:
        """Mount another window of older blocks (home, or scrolled to the top)."""
        transcript = self.transcript
        if transcript is None:
            return False
        if len(transcript) <= self.window:
            if transcript.earlier and self.load_earlier is not None:
                return self.load_earlier(transcript.key)
            return False
        self.show_loaded(self.window + WINDOW)
        return True

    def show_loaded(self, window: int) -> None:
        """Show the transcript's last ``window`` blocks from the top (paged back)."""
        if self.transcript is None:
            return
        self.show(self.transcript, window=window)
        self.follow = False
        self._update_live()
        self.scroll_home(animate=False)

    def touch(self, segments: Iterable[Block]) -> None:
        """Bring the view up to date with segments that were added or changed.

        The view follows the end of the stream unless the user scrolled up (wheel, up,
        page up, home); scrolling back to the end, End, or sending something resumes it.
        Scrolling caused by focus (tab through the tool calls) does not stop following,
        but the view stays put while a block inside it has focus. (Textual's ``anchor()``
        pins short content to the bottom of the view, so following is done here.)
        """
        if not self.follow and not self._hold_follow and self._at_end():
            self.follow = True
        if self.follow and self.window > WINDOW:  # back at the end: release paged-back blocks
            self.window = WINDOW
            if self.transcript is not None:
                self.transcript.trim()
        self._touch(segments)
        self._update_live()
        if self.follow and not self._block_has_focus():
            self.scroll_end(animate=False)

    @property
    def streaming(self) -> bool:
        """A step in view is running (its card shows its live text)."""
        return any(card.running for card in self._cards())

    def _cards(self) -> list[StepCardView]:
        """The step cards mounted in the view, in order."""
        return [w for w in self._blocks.values() if isinstance(w, StepCardView)]

    def live_rows(self, running: int) -> int | None:
        """Rows of text each of ``running`` live cards shows (None: all of them)."""
        if not self.follow or not running:
            return None
        height = self.size.height or 36
        per_card = (height - 1) // running - 4  # its header (up to two rows), margin, hint
        return max(LIVE_MIN_ROWS, min(LIVE_MAX_ROWS, per_card))

    def _update_live(self) -> None:
        """Give the running cards their live rows. A card whose step ended while others
        still stream keeps its box (held) until none runs: then all of them show their
        whole text at once, in one layout instead of one per step as each ends."""
        cards = self._cards()
        running = any(card.running for card in cards)
        boxed = [card for card in cards if card.running or (running and card.boxed)]
        rows = self.live_rows(len(boxed))
        for card in cards:
            if card.running:
                card.set_live(rows)
            elif card.boxed or card.held:
                card.set_live(rows if running else None, held=running and rows is not None)
        # when one running box opens to its whole height, the others open with it: the
        # boxes grow in one layout, not one each as their text comes to need it
        boxes = [card.live_box for card in cards if card.running]
        if any(box is not None and box.opened for box in boxes):
            for box in boxes:
                if box is not None:
                    box.open_tail()

    def _stop_following(self) -> bool:
        """The user scrolled up to read: live cards show all their text from now on.
        True if that opened boxes that were hiding rows."""
        self._show_from = None
        if not self.follow:
            return False
        self.follow = False
        self._hold_follow = any(text.hidden_count for text in self.query(StreamText))
        self._update_live()
        return self._hold_follow

    def on_resize(self) -> None:
        self._update_live()

    def follow_end(self) -> None:
        """Jump to the newest output and keep following it (the user sent something)."""
        self.follow = True
        self._hold_follow = False
        self._update_live()
        if self.window > WINDOW and self.transcript is not None:
            self.transcript.trim()
            self.show(self.transcript)
        self.scroll_end(animate=False)

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        """A layout asked for as blocks mount or go (Textual asks for one, with a repaint,
        each time) keeps the view's own rows: its border, title and background are drawn
        again only when they look different. Repainted, they were ~37 rows at 150 us each
        in every layout while steps stream (a step that starts, a box that opens). A
        resize repaints them anyway (``_size_updated``)."""
        if repaint and not regions and not recompose and self.is_mounted:
            look = self._look()
            # (a keyline is drawn where the children are: it changes with them)
            if layout and look == self._painted_look and self.styles.keyline[0] == "none":
                repaint = False
            self._painted_look = look
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _look(self) -> tuple[object, ...]:
        """What the view's own rows are drawn from: its styles (Textual counts every change
        of their rules, ``_cache_key``; textual is pinned exactly), the colours beneath it
        (a theme), its titles."""
        app = self.app
        return (
            self.styles._cache_key,
            self.background_colors,
            self.opacity,
            self.border_title,
            self.border_subtitle,
            app.ansi_color,
            app.native_ansi_color,
        )

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        """Following the end, be scrolled to the end of what this layout placed, in the
        layout itself: scrolled after it (``scroll_end`` once the virtual size grew), each
        growth was a second pass that repainted every row of the view (20 ms a time while
        two steps stream, as their cards mount and open). What Textual's ``anchor()`` does
        in its compositor, without pinning content shorter than the view to its bottom."""
        result = super().arrange(size, optimal)
        # ``size`` is the view's region this layout (its container_size is the last
        # one's); only a growth past what was last placed, or a view made shorter (a
        # terminal resized: the end would be below the view, as the virtual size need
        # not grow): a scroll pass arranges too, at the same size, and must not pull a
        # scrollbar drag back to the end
        bottom = result.spatial_map.total_region.bottom
        grew = bottom > self.virtual_size.height
        shorter = 0 < size.height < self._placed_height
        if not optimal:
            self._placed_height = size.height
        if (grew or shorter) and size.height and self.follow and self.is_attached:
            end = max(0, bottom - size.height)
            if end > self.scroll_y and not self._block_has_focus():
                self.set_reactive(Widget.scroll_y, end)
                self.set_reactive(Widget.scroll_target_y, end)
                self.vertical_scrollbar.set_reactive(ScrollBar.position, end)
        return result

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        # Content mounted in a batch grows the virtual size only at the next layout, which
        # on a busy machine comes after the scroll that touch() asked for: follow it here
        # too. (Textual's private hook; textual is pinned exactly.) The layout that gave
        # the new virtual size has placed the content: no second one for it (as
        # PlacedOnce; a scrollbar that appears or goes still asks for one).
        grew = virtual_size.height > self.virtual_size.height
        if virtual_size.height != self.virtual_size.height:
            self._hold_follow = False  # the uncapped cards are placed
        changed = super()._size_updated(size, virtual_size, container_size, layout=False)
        if grew and self.follow and not self._block_has_focus():
            self.scroll_end(animate=False)
        elif grew and self._show_from is not None:
            # once: the layout that opened the box lets the view reach the card (a later
            # growth must not pull the view back to it)
            self.call_after_refresh(self._scroll_to_shown, True)
        return changed

    def _scroll_to_shown(self, last: bool = False) -> None:
        card = self._show_from
        if card is None or not card.is_attached or self.follow:
            self._show_from = None
            return
        self.scroll_to_widget(card, animate=False, top=True)
        if last or self.max_scroll_y >= card.virtual_region_with_margin.y:  # reached: done
            self._show_from = None

    def _at_end(self) -> bool:
        return self.max_scroll_y == 0 or self.scroll_y >= self.max_scroll_y - 1

    def _block_has_focus(self) -> bool:
        focused = self.screen.focused if self.is_attached else None
        return focused is not None and focused is not self and self in focused.ancestors

    def on_mouse_scroll_up(self) -> None:
        self._stop_following()

    def on_scroll_to(self, message: ScrollTo) -> None:
        """The scrollbar's thumb dragged up: the user reads back."""
        if message.y is not None and message.y < self.scroll_y:
            self._stop_following()

    def on_scroll_up(self, message: ScrollUp) -> None:
        """A click on the scrollbar's track above its thumb."""
        self._stop_following()

    def action_scroll_up(self) -> None:
        self._stop_following()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        """From the live view: open the boxes and show the first running step from its
        header (a page up from where the view was, measured before the boxes opened,
        lands far above it, on what came before this request)."""
        if self._stop_following():
            running = [card for card in self._cards() if card.running]
            if running:
                self._show_from = running[0]
                self.call_after_refresh(self._scroll_to_shown)
                return
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self._stop_following()
        if not self.show_earlier():
            super().action_scroll_home()

    def action_scroll_end(self) -> None:
        self.follow_end()

    def _touch(self, segments: Iterable[Block]) -> None:
        new: list[Widget] = []
        for segment in segments:
            block = self._blocks.get(id(segment))
            if block is None:
                new.append(self._block(segment))
            elif isinstance(segment, StepCard) and isinstance(block, StepCardView):
                block.sync()
            elif isinstance(segment, ToolRun) and isinstance(block, ToolCallBlock):
                block.sync(segment)
        if not new:
            return
        existing = [w for w in self.children if w is not self._earlier]
        if self._empty is not None:
            existing.remove(self._empty)
            self._empty.remove()
            self._empty = None
        excess = len(existing) + len(new) - self.window
        self._mount_all(new)
        if excess > 0:  # release the oldest widgets: the view model still has the blocks
            old = existing[:excess]
            gone = {id(w) for w in old}
            self._blocks = {k: w for k, w in self._blocks.items() if id(w) not in gone}
            self.remove_children(old)
            hidden = len(self.transcript) - len(self._blocks) if self.transcript else 0
            if self._earlier is None:
                self._earlier = Static(self._earlier_text(hidden), classes="earlier")
                self.mount(self._earlier, before=0)
            else:
                self._earlier.update(self._earlier_text(hidden))

    def _mount_all(self, widgets: Sequence[Widget]) -> None:
        self.note_mount(self.mount_all(widgets), widgets)

    def note_mount(self, mounting: AwaitMount, widgets: Sequence[Widget]) -> None:
        """Keep a mount for ``take_mounting`` (the finished ones are dropped here too: a
        view shown while nothing runs must not keep its removed widgets). An answer is
        left out: Markdown parses its text as it mounts, and holding the screen for that
        would freeze it."""
        self.mounting = [(m, ws) for m, ws in self.mounting if not _mounted(ws)]
        if not any(w.has_class("answer") for w in widgets):
            self.mounting.append((mounting, widgets))

    def take_mounting(self) -> list[AwaitMount]:
        """The mounts started since the last call that have not finished. Textual lays the
        screen out when widgets are added and again when each has mounted (its children
        composed); a caller that holds the screen until these are done gets one layout
        instead of two. (A finished one is left out: awaiting it again would ask for
        another layout.)"""
        mounting, self.mounting = self.mounting, []
        return [m for m, widgets in mounting if not _mounted(widgets)]

    def layout_settled(self) -> bool:
        """Every layout a widget in the stream asked for has reached its screen (Textual
        posts it when the widget is next idle, and the screen reads it from its queue)."""
        if any(w._layout_required for w in self.walk_children(Widget, with_self=True)):
            return False
        return self.screen._message_queue.empty()  # its own screen: a modal may be on top

    def stream_line_count(self) -> int:
        """Rows held by all StreamText blocks (what the cap bounds)."""
        return sum(block.line_count for block in self.query(StreamText))

    def _block(self, segment: Block) -> Widget:
        block: Widget
        if isinstance(segment, Note) and segment.kind == "user" and folds(segment.text):
            block = PastedRequest(segment.text)  # a long paste: one folded line
        elif isinstance(segment, Note):
            icon = NOTE_ICONS.get(segment.kind, "")
            block = Line(Content(icon + segment.text), classes=f"note -{segment.kind}")
        elif isinstance(segment, StepCard):
            block = StepCardView(segment, on_mounting=self.note_mount)
        elif isinstance(segment, ToolRun):
            block = ToolCallBlock(segment)
        elif isinstance(segment, Answer):
            block = _markdown(segment.text)
            block.set_class(segment.failed, "-failed")
        else:  # pragma: no cover - exhaustive over Block
            raise TypeError(type(segment))
        self._blocks[id(segment)] = block
        return block
