"""Thread actions: open, start, delete and export threads (the threads screen, /new,
/export, the palette)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from soothe.app.base import SootheBase

    _Base = SootheBase
else:
    _Base = object


class ThreadActions(_Base):
    def open_thread(self, thread_id: str) -> None:
        def opened(snapshot: Any) -> None:
            self.handler.restore(snapshot)
            self.show_session_status()
            self.back_to_main()
            self.notify(f"Opened thread {snapshot.title or thread_id}")

        self.call_session(lambda s: s.open_thread(thread_id), what="open the thread", done=opened)

    def start_new_thread(self) -> None:
        def created(thread_id: str) -> None:
            self.handler.reset()
            self.show_session_status()
            self.back_to_main()
            self.prompt.focus()
            self.notify(f"New thread {thread_id}")

        self.call_session(lambda s: s.new_thread(), what="start a thread", done=created)

    def delete_thread(self, thread_id: str, on_done: Callable[[], None] | None = None) -> None:
        def deleted(_: Any) -> None:
            self.notify(f"Deleted thread {thread_id}")
            if on_done is not None:
                on_done()

        self.call_session(lambda s: s.delete_thread(thread_id), what="delete", done=deleted)

    def undo_last_run(self) -> None:
        """/undo: list what the thread's last run changed, ask, then put it back."""
        from soothe.app.screens.dialogs import ConfirmDialog

        if self.session is None:
            self.notify("The engine is not loaded yet.", severity="warning")
            return
        if self._run_worker is not None and not self._run_worker.is_finished:
            self.notify("A run is in progress — esc interrupts it first.", severity="warning")
            return
        thread_id = self.session.thread_id

        def undone(report: Any) -> None:
            # what was undone is the session's UndoApplied event: the handler shows it
            # (a note the thread keeps, and a toast)
            if not (report.restored or report.refused or report.commands):
                self.notify("Nothing was undone.", title="Undo")

        def confirm(changes: list[str]) -> None:
            if not changes:
                self.notify("The last run of this thread changed no files.", title="Undo")
                return

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.call_session(lambda s: s.undo(thread_id), what="undo", done=undone)

            listing = "\n".join(f"  {line}" for line in changes)
            question = f"Put back what the last run changed?\n{listing}"
            self.push_screen(ConfirmDialog(question), confirmed)

        self.call_session(lambda s: s.undo_preview(thread_id), what="undo", done=confirm)

    def export_current(self) -> None:
        if self.session is None:
            self.notify("The engine is not loaded yet.", severity="warning")
            return
        self.export_thread(self.session.thread_id)

    def export_thread(self, thread_id: str) -> None:
        def write(markdown: str) -> None:
            # not the workspace: the agent would find the export in its own file listing
            path = Path(self.settings.storage.data_dir) / "exports" / f"soothe-{thread_id}.md"
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(markdown, encoding="utf-8")
            except OSError as exc:
                self.notify(f"{path}: {exc.strerror}", title="Export failed", severity="error")
                return
            self.notify(f"Wrote {path}", title="Exported", timeout=10)

        self.call_session(lambda s: s.export_thread(thread_id), what="export", done=write)
