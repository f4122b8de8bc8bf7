"""Run control: what the prompt sends (a request or a slash command) and the run worker.

A run's events reach the screen through the bus (the EventHandler reads it); the run
itself only returns how it ended, so the worker just awaits it and tidies up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from soothe.app.commands import BY_NAME, SlashCommand, parse, unescape
from soothe.app.screens.main import MainScreen
from soothe.app.session_api import SessionAPI
from soothe.engine.outcome import RunOutcome
from soothe.widgets.prompt_input import PromptInput, workspace_paths

if TYPE_CHECKING:
    from soothe.app.base import SootheBase

    _Base = SootheBase
else:
    _Base = object


class RunControl(_Base):
    # -- the prompt ------------------------------------------------------------------------

    def argument_choices(self, word: str) -> Iterable[str]:
        """The argument completions after a command word (``/theme`` -> theme names)."""
        command = BY_NAME.get(word.removeprefix("/"))
        if command is None or command.completes is None:
            return ()
        return self.theme_names() if command.completes == "themes" else self.models

    def workspace_files(self, prefix: str) -> list[str]:
        """``@path`` completions: the workspace entries that continue ``prefix``."""
        return workspace_paths(self.settings.tools.resolved_workspace(), prefix)

    def on_prompt_input_page(self, event: PromptInput.Page) -> None:
        """Page up / page down in the prompt scroll the conversation."""
        event.stop()
        if isinstance(self.screen, MainScreen):
            stream = self.main.stream
            if event.direction < 0:
                stream.scroll_page_up(animate=False)
            else:
                stream.scroll_page_down(animate=False)

    def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        if event.prompt is not self.prompt:
            return
        event.stop()
        text = event.value.strip()
        if not text:
            return
        self.prompt.remember(text)
        self.prompt.value = ""
        if isinstance(self.screen, MainScreen):
            self.main.stream.follow_end()
        command = parse(text)
        if command is None:
            self.start_run(unescape(text))
        else:
            self.run_command(command)

    def run_command(self, command: SlashCommand) -> None:
        """Carry out a slash command: its registry row names the app method to call."""
        problem = command.problem()
        if problem:
            self.notify(problem, severity="warning")
            return
        if command.command is not None:
            getattr(self, command.command.handler)(*command.arguments())

    # -- runs ------------------------------------------------------------------------------

    def start_run(self, text: str, *, autonomous: bool = False) -> None:
        if self._busy():
            return
        self._run_worker = self.run_worker(
            self._drive(lambda s: s.run(text, autonomous=autonomous), "run"),
            name="run",
            group="run",
            exit_on_error=False,
        )

    def run_autonomous(self, text: str) -> None:
        """``/autonomous TEXT``: the request becomes a goal the loop works on by itself."""
        self.start_run(text, autonomous=True)

    def action_run_goals(self) -> None:
        if self._busy():
            return
        self._run_worker = self.run_worker(
            self._drive(lambda s: s.run_goals(), "goals"),
            name="run-goals",
            group="run",
            exit_on_error=False,
        )

    def _busy(self) -> bool:
        if self.engine_failed:
            self.notify("The engine is not available; see the notice above.", severity="error")
            return True
        if self._run_worker is not None and not self._run_worker.is_finished:
            self.notify("A run is in progress — esc interrupts it.", severity="warning")
            return True
        return False

    async def _drive(
        self, start: Callable[[SessionAPI], Awaitable[RunOutcome]], where: str
    ) -> None:
        await self._engine_ready.wait()
        session = self.require_session()
        self.run_started()
        try:
            await start(session)  # the handler shows its events: it reads the bus
            await self._settle()
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                session.broker.cancel_all()
            await self._settle()
            self.handler.local_note("interrupted", "warn")
            raise
        except Exception as exc:
            await self._settle()
            self.handler.engine_error(exc, where)
        finally:
            if self.running:  # no RunFinished / RunFailed came
                self.run_ended(None)
            # the run may have created the thread, or found the server back
            self.sync_server_state()

    async def _settle(self) -> None:
        with contextlib.suppress(Exception):
            await self.handler.wait_idle(timeout=1.0)

    def action_interrupt(self) -> None:
        if self._run_worker is not None and not self._run_worker.is_finished:
            self._run_worker.cancel()

    # -- run state (from the handler's RunStarted / RunFinished / RunFailed) --------------

    def run_started(self) -> None:
        if self.running:
            return
        self.running = True
        self.run_started_at = self.clock()
        self.main.status.set(running=True, elapsed=0.0, iteration=0, max_iterations=0)
        self.refresh_bindings()

    def run_ended(self, duration: float | None) -> None:
        elapsed = duration
        if elapsed is None and self.run_started_at is not None:
            elapsed = self.clock() - self.run_started_at
        self.main.status.set(running=False, elapsed=elapsed)
        self.running = False
        self.refresh_bindings()
