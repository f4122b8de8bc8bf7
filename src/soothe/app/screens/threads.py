"""ThreadsScreen: stored threads — open, start new, delete, export to Markdown."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from soothe.app.screens.dialogs import ConfirmDialog
from soothe.engine.sanitize import one_line

if TYPE_CHECKING:
    from soothe.app.main import SootheApp
    from soothe.app.session_api import ThreadView


def _when(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    if moment.tzinfo is not None:
        moment = moment.astimezone()
    return moment.strftime("%Y-%m-%d %H:%M")


class ThreadsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", id="threads.open"),
        Binding("n", "new", "New", id="threads.new"),
        Binding("d", "delete", "Delete", id="threads.delete"),
        Binding("e", "export", "Export", id="threads.export"),
        Binding("escape", "close", "Back", id="threads.close"),
    ]
    DEFAULT_CSS = """
    ThreadsScreen > Vertical {
        border: round $primary;
        border-title-color: $primary;
        border-subtitle-color: $text-muted;
        margin: 1 2 0 2;
    }
    ThreadsScreen DataTable { height: 1fr; }
    ThreadsScreen #threads-empty { color: $text-muted; padding: 1 2; }
    """

    def __init__(self, current: str) -> None:
        super().__init__(id="threads")
        self.current = current
        self.threads: list[ThreadView] = []

    @property
    def soothe(self) -> SootheApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Threads"
            box.border_subtitle = "enter open · n new · d delete · e export · esc back"
            yield Static("Loading threads…", id="threads-empty")
            table: DataTable[str] = DataTable(cursor_type="row", zebra_stripes=True, id="table")
            table.add_columns(" ", "Id", "Title", "Goals", "Last active", "Created")
            yield table
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self.reload()

    def reload(self) -> None:
        self.run_worker(self._load(), group="threads", exclusive=True, exit_on_error=False)

    async def _load(self) -> None:
        try:
            threads = await self.soothe.require_session().list_threads()
        except Exception as exc:
            message = Content(f"Could not list threads: {exc}")  # not markup
            self.query_one("#threads-empty", Static).update(message)
            return
        self.show_threads(threads)

    def on_resize(self) -> None:
        """The titles take the new width; the cursor stays on its row."""
        if self.threads:
            table = self.query_one(DataTable)
            cursor = table.cursor_row
            self.show_threads(self.threads)
            table.move_cursor(row=cursor)

    def _title_room(self, threads: list[ThreadView]) -> int:
        """The title's width: what the screen leaves once the mark, the id (``--thread``
        needs it whole), the counts and the dates have theirs, so no column is cut off
        at 80 columns (each column has a cell of padding either side)."""
        fixed = [1, max(len(t.id) for t in threads), 5, 16, 16]
        frame = 2 * 2 + 2 + 2  # the box's margins and border, the scrollbar
        return max(8, self.size.width - frame - sum(w + 2 for w in fixed) - 2)

    def show_threads(self, threads: list[ThreadView]) -> None:
        self.threads = threads
        table = self.query_one(DataTable)
        table.clear()
        room = self._title_room(threads) if threads else 0
        for thread in threads:
            mark = "●" if thread.id == self.current else " "
            table.add_row(
                mark,
                thread.id,
                # the table reads a str as markup: a title's "[/]" broke the screen
                escape(one_line(thread.title, room)) or "(untitled)",
                str(thread.goal_count),
                _when(thread.last_active),
                _when(thread.created_at),
                key=thread.id,
            )
        empty = self.query_one("#threads-empty", Static)
        empty.update("No stored threads yet." if not threads else "")
        empty.display = not threads

    def _selected(self) -> ThreadView | None:
        table = self.query_one(DataTable)
        if not self.threads or table.cursor_row < 0 or table.cursor_row >= len(self.threads):
            return None
        return self.threads[table.cursor_row]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        thread = self._selected()
        if thread is not None:
            self.soothe.open_thread(thread.id)

    def action_new(self) -> None:
        self.soothe.start_new_thread()

    def action_export(self) -> None:
        thread = self._selected()
        if thread is not None:
            self.soothe.export_thread(thread.id)

    def action_delete(self) -> None:
        thread = self._selected()
        if thread is None:
            return
        if thread.id == self.current:
            self.notify("This thread is open; open another one first.", severity="warning")
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.soothe.delete_thread(thread.id, on_done=self.reload)

        title = thread.title or thread.id
        self.app.push_screen(ConfirmDialog(f"Delete thread “{title}”?"), confirmed)

    def action_close(self) -> None:
        self.dismiss(None)
