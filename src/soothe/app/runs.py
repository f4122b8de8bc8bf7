"""Run control: what the prompt sends (a request or a slash command) and the run worker.

A run's events reach the screen through the bus (the EventHandler reads it); the run
itself only returns how it ended, so the worker just awaits it and tidies up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from textual.actions import SkipAction
from textual.worker import Worker, WorkerState

from soothe.app.attention import RUN_WORTH_TELLING_S, sequence
from soothe.app.commands import BY_NAME, SlashCommand, parse, starts_a_run, unescape
from soothe.app.screens.main import MainScreen
from soothe.app.session_api import SessionAPI
from soothe.engine.outcome import RunOutcome
from soothe.widgets.prompt_input import PromptInput, workspace_paths
from soothe.widgets.queued import QueuedRequests

if TYPE_CHECKING:
    from soothe.app.base import SootheBase
    from soothe.app.session_api import GoalView

    _Base = SootheBase
else:
    _Base = object


def nothing_ready(goals: list[GoalView]) -> str:
    """Why ctrl+r ran nothing, in one line, from the goals as the screen shows them."""
    if not goals:
        return "There are no goals yet: press n (in the goal tree) or type /goal TEXT."
    by_id = {g.id: g for g in goals}
    pending = [g for g in goals if g.status == "pending"]
    for goal in pending:
        waiting = [d for d in goal.depends_on if by_id.get(d) and by_id[d].status != "completed"]
        if waiting:
            on = ", ".join(f"{d} ({by_id[d].status})" for d in waiting)
            more = f" (and {len(pending) - 1} more pending)" if len(pending) > 1 else ""
            return f"No goal is ready: {goal.id} waits for {on}{more}."
    if pending:
        return f"No goal is ready: {', '.join(g.id for g in pending)} cannot start yet."
    paused = [g for g in goals if g.status in ("suspended", "blocked", "awaiting_clarification")]
    if paused:
        names = ", ".join(f"{g.id} ({g.status})" for g in paused)
        return f"No goal is pending; paused: {names} - s resumes a suspended goal."
    failed = [g.id for g in goals if g.status == "failed"]
    if failed:
        return f"No goal is pending; failed: {', '.join(failed)} - r retries one."
    return "Every goal is finished (completed or cancelled); add one with /goal TEXT."


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
                # as in the panel: stop following, open the boxes; a panel with nothing
                # to scroll raises SkipAction (meant for the key's binding chain): no-op
                with contextlib.suppress(SkipAction):
                    stream.action_page_up()
            else:
                stream.scroll_page_down(animate=False)

    def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        if event.prompt is not self.prompt:
            return
        event.stop()
        text = event.value.strip()  # the prompt has cleared itself and kept it in history
        if not text:
            return
        if isinstance(self.screen, MainScreen):
            self.main.stream.follow_end()
        if self._run_going() and starts_a_run(text) and not self.engine_failed:
            self.queue_request(text)  # sent when the run ends: nothing typed is lost
            return
        self.send_text(text)

    def send_text(self, text: str) -> None:
        """What enter does with the prompt's text: a request, or a slash command."""
        command = parse(text)
        if command is None:
            self.start_run(unescape(text))
        else:
            self.run_command(command)

    # -- the queue: requests typed while a run goes on ---------------------------------

    def _run_going(self) -> bool:
        return self._run_worker is not None and not self._run_worker.is_finished

    def queue_request(self, text: str) -> None:
        self.queued.append(text)
        self.queue_held = False
        self._show_queue()

    def _show_queue(self) -> None:
        self.main.queued.set_items(self.queued, held=self.queue_held)
        if not self.queued and self.main.queued.has_focus:
            self.prompt.focus()

    def send_queued(self) -> None:
        """The run has ended: the next queued request goes (the others wait for it). After
        an interrupt the queue is held: the user stopped the work and chooses what next."""
        if not self.queued or self._run_going() or self.queue_held:
            return
        text = self.queued.pop(0)
        self._show_queue()
        self.send_text(text)

    def on_queued_requests_edit(self, event: QueuedRequests.Edit) -> None:
        """e on a queued request: it goes back into the prompt to be edited (and sent
        again with enter); a draft in the prompt takes its place in the queue."""
        event.stop()
        if not 0 <= event.index < len(self.queued):
            return
        draft = self.prompt.text.strip()
        text = self.queued.pop(event.index)
        if draft:
            self.queued.insert(event.index, draft)
        self.prompt.value = text
        self._show_queue()
        self.prompt.focus()

    def on_queued_requests_remove(self, event: QueuedRequests.Remove) -> None:
        """d on a queued request: it is not sent (the prompt's history still has it)."""
        event.stop()
        if 0 <= event.index < len(self.queued):
            del self.queued[event.index]
            self._show_queue()

    def on_queued_requests_leave(self, event: QueuedRequests.Leave) -> None:
        event.stop()
        self.prompt.focus()

    def run_command(self, command: SlashCommand) -> None:
        """Carry out a slash command: its registry row names the app method to call."""
        problem = command.problem()
        if problem:
            self.notify(problem, severity="warning")
            return
        if command.command is not None:
            getattr(self, command.command.handler)(*command.arguments())

    # -- steering: a note to a running goal ------------------------------------------------

    def steer(self, text: str) -> None:
        """``/steer TEXT``: a note to the running goal (the one selected in the tree when
        several run), read by the planner at its next assessment; goal.steered shows it."""
        goal_id = self.steer_target()
        if goal_id is None:
            return
        self.steer_goal(goal_id, text)

    def steer_goal(self, goal_id: str, text: str) -> None:
        self.call_session(lambda s: s.steer(goal_id, text), what=f"steer {goal_id}")

    def steer_target(self) -> str | None:
        """The goal a note goes to: the running goal selected in the tree, else the only
        running one; None (and a toast saying why) when there is no such goal."""
        running = [g.id for g in self.handler.goals.values() if g.status == "active"]
        selected = self.main.goal_tree.selected_ref.goal_id
        if selected in running:
            return selected
        if len(running) == 1:
            return running[0]
        if not running:
            self.notify(
                "No goal is running: /steer adds a note to a running goal.", severity="warning"
            )
        else:
            self.notify(
                f"{len(running)} goals run ({', '.join(running)}): select one in the goal "
                "tree (ctrl+g), then /steer or enter on it.",
                severity="warning",
            )
        return None

    # -- runs ------------------------------------------------------------------------------

    def start_run(self, text: str, *, autonomous: bool = False) -> None:
        if self._busy():
            return
        self.queue_held = False  # the user chose what runs next: the queue follows it
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
        self.queue_held = False

        async def run_ready(session: SessionAPI) -> RunOutcome:
            outcome = await session.run_goals()
            if outcome.ok and not outcome.goal_ids:  # the scheduler found nothing to run
                self.notify(nothing_ready(session.goals()), title="Nothing to run")
            return outcome

        self._run_worker = self.run_worker(
            self._drive(run_ready, "goals"),
            name="run-goals",
            group="run",
            exit_on_error=False,
        )

    async def action_quit(self) -> None:
        """ctrl+q: during a run, ask first (the run is interrupted if the answer is yes).
        An app whose engine could not start exits 1: the session did not work."""
        going = self._run_going()
        if not going and not self.queued:
            self.exit(return_code=1 if self.engine_failed else 0)
            return
        from soothe.app.screens.dialogs import ConfirmDialog

        if isinstance(self.screen, ConfirmDialog):
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                if self._run_going():
                    self.action_interrupt()
                self.exit()

        self.push_screen(ConfirmDialog(quit_question(going, len(self.queued))), confirmed)

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
            await self._settle()  # the engine's RunFailed says "interrupted" (kept)
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

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The run worker ends after RunFinished / RunFailed was shown: only then does
        esc stop meaning Interrupt, so the footer is refreshed here too."""
        if event.worker is self._run_worker:
            self.refresh_bindings()
            if event.worker.is_finished:
                self.queue_held = self.queue_held or (
                    event.state == WorkerState.CANCELLED and bool(self.queued)
                )
                if self.queued:
                    self._show_queue()
                    self.call_later(self.send_queued)

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
        waited = None if self.run_started_at is None else self.clock() - self.run_started_at
        if elapsed is None:
            elapsed = waited
        self.main.status.set(running=False, elapsed=elapsed)
        was_running, self.running = self.running, False
        self.refresh_bindings()
        self.collect_after_run()
        if was_running and waited is not None and waited >= RUN_WORTH_TELLING_S:
            self.alert("Soothe", "the run has ended")

    def alert(self, title: str, body: str) -> None:
        """Ring or notify as ``ui.notify`` says (a run ended, a question waits)."""
        text = sequence(self.settings.ui.notify, title, body)
        if not text:
            return
        self.alerts.append(text)
        del self.alerts[:-20]
        driver = self._driver
        if driver is not None and not self.is_headless:
            driver.write(text)


def quit_question(run_going: bool, queued: int) -> str:
    """What ctrl+q asks while a run goes or requests wait in the queue (they stay in the
    prompt's history: up brings them back)."""
    parts = ["A run is in progress."] if run_going else []
    if queued:
        what = "request" if queued == 1 else "requests"
        parts.append(
            f"{queued} queued {what} will not be sent (up in the prompt brings them back)."
        )
    action = "Interrupt it and quit?" if run_going else "Quit?"
    return " ".join([*parts, action])
