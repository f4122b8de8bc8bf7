"""SootheApp: the full-screen workbench, assembled from one part per responsibility.

Import cost matters here: this module pulls in Textual and light soothe modules only. The
engine (LangChain, LangGraph, the database) is loaded by ``Session.start()`` in a worker
that begins after the first frame is on screen (``app/boot.py``).

The parts (see ``app/base.py``): boot and notices, run control and the slash commands,
modal requests, goal actions, thread actions, model and theme actions. This module keeps
what is the app's own: its state, its global keys and which of them apply where.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen

from soothe.app import commands
from soothe.app.base import Clock, SootheBase
from soothe.app.boot import DEMO_KEY, NO_SERVER_NOTICE, BootMixin
from soothe.app.goal_actions import GoalActions
from soothe.app.handler import EventHandler
from soothe.app.keymap import usable_keymap, validate_keymap
from soothe.app.modal_requests import ModalRequests
from soothe.app.model_actions import ModelActions
from soothe.app.palette import PROVIDERS
from soothe.app.runs import RunControl
from soothe.app.screens.main import MainScreen
from soothe.app.session_api import SessionAPI
from soothe.app.thread_actions import ThreadActions
from soothe.engine.config_file import FrameConfig
from soothe.themes import BUILTIN_THEMES, STYLESHEET, load_user_themes
from soothe.widgets.prompt_input import PromptInput

if TYPE_CHECKING:
    from soothe.engine.config import Settings

PROMPT_HISTORY = "prompt_history.jsonl"
"""The prompt's history, under the data dir (the last 500 entries)."""

MAIN_ONLY = {
    "interrupt",
    "focus_goals",
    "focus_prompt",
    "back_to_prompt",
    "evidence",
    "run_goals",
    "jump_active",
}


class SootheApp(
    BootMixin,
    RunControl,
    ModalRequests,
    GoalActions,
    ThreadActions,
    ModelActions,
    SootheBase,
    inherit_bindings=False,
):
    TITLE = "Soothe"
    CSS_PATH = STYLESHEET
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "interrupt", "Interrupt", id="app.interrupt"),
        Binding("escape", "back_to_prompt", "Back to prompt", show=False, id="app.back_to_prompt"),
        Binding("ctrl+l", "focus_prompt", "Prompt", priority=True, id="app.focus_prompt"),
        Binding("ctrl+g", "focus_goals", "Goals", priority=True, id="app.focus_goals"),
        Binding("ctrl+e", "evidence", "Evidence", priority=True, id="app.evidence"),
        Binding("ctrl+t", "threads", "Threads", priority=True, id="app.threads"),
        Binding("ctrl+o", "jump_active", "Active goal", priority=True, id="app.jump_active"),
        Binding("ctrl+r", "run_goals", "Run goals", show=False, priority=True, id="app.run_goals"),
        Binding("f1", "help", "Help", priority=True, id="app.help"),
        Binding("ctrl+q", "quit", "Quit", priority=True, id="app.quit"),
        Binding(DEMO_KEY, "demo_key", "Demo model", show=False, priority=True, id="app.demo_model"),
        Binding(
            "ctrl+p",
            "command_palette",
            "Palette",
            show=False,
            priority=True,
            id="app.command_palette",
        ),
        Binding("ctrl+c", "help_quit", show=False, system=True),
    ]
    COMMANDS = App.COMMANDS | PROVIDERS

    def __init__(
        self,
        settings: Settings | FrameConfig,
        thread_id: str | None = None,
        session: SessionAPI | None = None,
        *,
        clock: Clock = time.monotonic,
        animate: bool = True,
        on_first_frame: Callable[[SootheApp], None] | None = None,
    ) -> None:
        super().__init__()
        # a FrameConfig (the `soothe` command): the full Settings are built after the
        # first frame, in the engine-start worker; Settings (tests, callers that have them)
        if isinstance(settings, FrameConfig):
            self.frame, self._settings = settings, None
        else:
            self.frame, self._settings = FrameConfig.of(settings), settings
        self._settings_lock = threading.Lock()
        self.config_error = ""
        self.requested_thread = thread_id
        self.session = session
        self.session_ready = False
        self.engine_failed = False
        self.clock = clock
        self.animated = animate
        self.on_first_frame = on_first_frame
        self.handler = EventHandler(self)
        self.models = []
        self.warnings = []
        self.running = False
        self.run_started_at = None
        self._run_worker = None
        self._engine_ready = asyncio.Event()
        self._requests = {}
        self.alerts = []
        self.queued = []
        self.queue_held = False
        # checking overrides gathers every screen's bindings (the threads screen imports
        # DataTable, ~10 ms): only when there are some
        keymap = self.frame.keymap
        self.keymap_overrides = usable_keymap(keymap) if keymap else {}
        self.warnings += validate_keymap(keymap) if keymap else []
        for theme in BUILTIN_THEMES.values():
            self.register_theme(theme)
        user_themes, problems = load_user_themes()
        for theme in user_themes:
            self.register_theme(theme)
        self.warnings += problems
        self.prompt = PromptInput(
            commands=commands.words(),
            choices=self.argument_choices,
            files=self.workspace_files,
            history_file=self.frame.data_dir / PROMPT_HISTORY,
            id="prompt",
        )
        if not animate:
            self.prompt.cursor_blink = False
        self.main = MainScreen(self.prompt, on_ready=self._main_ready)

    def get_default_screen(self) -> Screen[Any]:
        return self.main

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MAIN_ONLY and not isinstance(self.screen, MainScreen):
            return False
        if action == "threads" and self.screen.id == "threads":
            return False
        if action == "interrupt":
            return self._run_worker is not None and not self._run_worker.is_finished
        if action == "back_to_prompt":  # escape: interrupts a run first, else back to typing
            idle = self._run_worker is None or self._run_worker.is_finished
            return idle and self.focused is not self.prompt
        if action == "demo_key":  # only while the no-server notice offers it
            return isinstance(self.screen, MainScreen) and self.main.has_notice(NO_SERVER_NOTICE)
        if action == "focus_prompt":  # in the footer only where it helps
            return self.focused is not self.prompt
        return True

    # -- global keys ---------------------------------------------------------------------

    def action_focus_prompt(self) -> None:
        if isinstance(self.screen, MainScreen):
            self.prompt.focus()

    def action_back_to_prompt(self) -> None:
        self.action_focus_prompt()

    def action_jump_active(self) -> None:
        """ctrl+o: the middle panel shows the active goal (or the conversation)."""
        if isinstance(self.screen, MainScreen):
            self.handler.jump_active()

    def action_focus_goals(self) -> None:
        self.main.goal_tree.focus()

    def action_evidence(self) -> None:
        if isinstance(self.screen, MainScreen):
            self.main.toggle_evidence()

    def action_threads(self) -> None:
        from soothe.app.screens.threads import ThreadsScreen

        if isinstance(self.screen, ThreadsScreen):
            return
        if not self.session_ready:
            self.notify("Threads appear once the engine has started.", severity="warning")
            return
        self.push_screen(ThreadsScreen(self.require_session().thread_id))

    def action_help(self) -> None:
        from soothe.app.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
            return
        self.push_screen(HelpScreen(self.keymap_overrides))
