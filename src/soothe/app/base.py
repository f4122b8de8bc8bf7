"""SootheBase: the app's state and the few helpers every part of it uses.

``SootheApp`` (``app/main.py``) is assembled from parts, one module per responsibility:
boot and notices (``boot``), run control and the slash commands (``runs``), the engine's
modal requests (``modal_requests``), goal actions (``goal_actions``), thread actions
(``thread_actions``), model and theme actions (``model_actions``). Each part is a mixin
that type-checks against this class; at run time the mixins are plain classes and this
one is the Textual ``App`` underneath them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker

from soothe.app.screens.main import MainScreen
from soothe.app.session_api import SessionAPI
from soothe.engine.config_file import FrameConfig
from soothe.themes import BUILTIN_THEMES

if TYPE_CHECKING:
    from soothe.app.handler import EventHandler
    from soothe.engine.config import Settings
    from soothe.widgets.prompt_input import PromptInput

Clock = Callable[[], float]


class SootheBase(App[None]):
    """The state ``SootheApp.__init__`` sets, and the helpers its parts share."""

    frame: FrameConfig
    """What the first frame shows (theme, keys, model, data dir), read without pydantic."""
    _settings: Settings | None
    _settings_lock: threading.Lock
    config_error: str
    """The config's one-line error when the full settings could not be built (the app
    then exits with code 2 and ``run_tui`` prints it)."""
    requested_thread: str | None
    session: SessionAPI | None
    session_ready: bool
    engine_failed: bool
    clock: Clock
    animated: bool
    on_first_frame: Callable[[Any], None] | None
    handler: EventHandler
    models: list[str]
    warnings: list[str]
    running: bool
    run_started_at: float | None
    keymap_overrides: dict[str, str]
    prompt: PromptInput
    main: MainScreen
    _run_worker: Worker[None] | None
    _engine_ready: asyncio.Event
    _requests: dict[str, Screen[Any]]
    alerts: list[str]
    queued: list[str]
    """Requests typed while a run went on, oldest first: sent one by one as runs end."""
    queue_held: bool
    """The last run was interrupted: the queue waits until the user starts a run."""
    """The last bells / notifications sent to the terminal (``ui.notify``)."""

    @property
    def settings(self) -> Settings:
        """The full, validated settings. The engine-start worker builds them after the
        first frame (off the event loop); anything that asks sooner builds them here."""
        return self._settings if self._settings is not None else self.load_settings()

    def load_settings(self) -> Settings:
        """Build the settings once (any thread); ConfigError on a bad value."""
        with self._settings_lock:
            if self._settings is None:
                self._settings = self.frame.load_settings()
            return self._settings

    def require_session(self) -> SessionAPI:
        if self.session is None:
            raise RuntimeError("the engine is not loaded")
        return self.session

    def call_session(
        self,
        make: Callable[[SessionAPI], Awaitable[Any]],
        *,
        what: str,
        done: Callable[[Any], None] | None = None,
    ) -> Worker[None]:
        """Run one session call in a worker; a failure is a toast titled "Cannot {what}".

        The screen is not re-read afterwards: what the call changed arrives on the bus as
        events (goal.created, goal.updated, goal.status_changed) like any other change.
        """

        async def work() -> None:
            if self.engine_failed:
                self.notify(
                    "The engine is not available.", title=f"Cannot {what}", severity="error"
                )
                return
            await self._engine_ready.wait()
            try:
                result = await make(self.require_session())
            except ValueError as exc:
                self.notify(str(exc), title=f"Cannot {what}", severity="error")
                return
            except Exception as exc:
                # the engine's own errors are written for people; others need their type
                own = type(exc).__module__.startswith("soothe.") and str(exc)
                message = str(exc) if own else f"{type(exc).__name__}: {exc}"
                self.notify(message, title=f"Cannot {what}", severity="error")
                return
            if done is not None:
                done(result)

        return self.run_worker(work(), group="session-call", exit_on_error=False)

    def show_session_status(self) -> None:
        session = self.session
        if session is None:
            return
        self.main.status.set(
            model=session.model_label,
            profile="small" if getattr(getattr(session, "profile", None), "small", False) else "",
            provider=session.provider_status,
            thread=session.thread_id,
        )

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every toast is plain text, whoever asks (``markup`` is ignored): what toasts
        quote (a tool's output, a server's error, a thread title, a model name) is never
        read as markup, where ``[link=URL]`` became a hyperlink to URL and ``[/]`` crashed
        the app (MarkupError)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def alert(self, title: str, body: str) -> None:
        """A bell or desktop notification (``app/runs.py``)."""

    def collect_after_run(self) -> None:
        """A run ended: its garbage is collected (``app/boot.py``)."""

    def sync_server_state(self) -> None:
        """The status line (and, in ``app/boot.py``, the no-server notice) follow the
        session's provider status."""
        self.show_session_status()

    def back_to_main(self) -> None:
        while len(self.screen_stack) > 1 and not isinstance(self.screen, MainScreen):
            self.pop_screen()

    def theme_names(self) -> list[str]:
        """The built-in themes first, then the user's, sorted."""
        return [*BUILTIN_THEMES, *sorted(set(self.available_themes) - set(BUILTIN_THEMES))]
