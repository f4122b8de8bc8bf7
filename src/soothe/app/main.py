"""SootheApp: the full-screen workbench.

Import cost matters here: this module pulls in Textual and light soothe modules only. The
engine (LangChain, LangGraph, the database) is loaded by ``Session.start()`` in a worker
that begins after the first frame is on screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Input
from textual.worker import Worker

from soothe.app.commands import SlashCommand, parse, unescape
from soothe.app.handler import EventHandler
from soothe.app.keymap import GLOBAL, bindings, usable_keymap, validate_keymap
from soothe.app.palette import PROVIDERS
from soothe.app.screens.dialogs import (
    ConfirmDialog,
    DependencyDialog,
    EvidenceDialog,
    GoalDetailDialog,
    GoalInputDialog,
)
from soothe.app.screens.main import MainScreen
from soothe.app.session_api import GoalView, SessionAPI
from soothe.engine.config import Settings
from soothe.engine.events import ApprovalRequested, ClarificationRequested
from soothe.engine.outcome import RunOutcome
from soothe.themes import BUILTIN_THEMES, DEFAULT_THEME, STYLESHEET, load_user_themes
from soothe.widgets.approval_modal import ApprovalModal
from soothe.widgets.clarification_modal import ClarificationModal
from soothe.widgets.evidence_panel import EvidencePanel
from soothe.widgets.goal_tree import GoalTree, NodeRef
from soothe.widgets.notice import Notice
from soothe.widgets.prompt_input import PromptInput

Clock = Callable[[], float]
NO_SERVER_NOTICE = "no-server"
ENGINE_NOTICE = "engine"
PRIORITY_STEP = 10
MAIN_ONLY = {"interrupt", "focus_goals", "focus_prompt", "back_to_prompt", "evidence", "run_goals"}


def _waits_for(goals: Mapping[str, GoalView], start: str, target: str) -> bool:
    """Does ``start`` (transitively) depend on ``target``? Then target -> start is a cycle."""
    stack, seen = [start], set()
    while stack:
        node = stack.pop()
        if node == target:
            return True
        if node in seen or node not in goals:
            continue
        seen.add(node)
        stack.extend(goals[node].depends_on)
    return False


def _listed(name: str, models: list[str]) -> bool:
    return name in models or f"{name}:latest" in models


class SootheApp(App[None], inherit_bindings=False):
    TITLE = "Soothe"
    CSS_PATH = STYLESHEET
    BINDINGS: ClassVar[list[BindingType]] = [
        *bindings(GLOBAL),
        Binding("ctrl+c", "help_quit", show=False, system=True),
    ]
    COMMANDS = App.COMMANDS | PROVIDERS

    def __init__(
        self,
        settings: Settings,
        thread_id: str | None = None,
        session: SessionAPI | None = None,
        *,
        clock: Clock = time.monotonic,
        animate: bool = True,
        on_first_frame: Callable[[SootheApp], None] | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.requested_thread = thread_id
        self.session: SessionAPI | None = session
        self.session_ready = False
        self.engine_failed = False
        self.clock = clock
        self.animated = animate
        self.on_first_frame = on_first_frame
        self.handler = EventHandler(self)
        self.models: list[str] = []
        self.warnings: list[str] = []
        self.running = False
        self.run_started_at: float | None = None
        self._run_worker: Worker[None] | None = None
        self._engine_ready = asyncio.Event()
        self._requests: dict[str, Screen[Any]] = {}
        self.keymap_overrides = usable_keymap(settings.ui.keymap)
        self.warnings += validate_keymap(settings.ui.keymap)
        for theme in BUILTIN_THEMES.values():
            self.register_theme(theme)
        user_themes, problems = load_user_themes()
        for theme in user_themes:
            self.register_theme(theme)
        self.warnings += problems
        self.prompt = PromptInput(choices=self._completions, id="prompt")
        if not animate:
            self.prompt.cursor_blink = False
        self.main = MainScreen(self.prompt, on_ready=self._main_ready)

    # -- start-up --------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return self.main

    def on_mount(self) -> None:
        wanted = self.settings.ui.theme
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            self.theme = DEFAULT_THEME
            self.warnings.append(f"ui.theme: unknown theme {wanted!r}, using {DEFAULT_THEME}")
        if self.keymap_overrides:
            self.set_keymap(self.keymap_overrides)
        for warning in self.warnings:
            self.notify(warning, title="Config", severity="warning", timeout=10)
        status = self.main.status
        status.set(thread=self.requested_thread or "")
        if self.session is not None:
            self.handler.attach(self.session.bus)
            status.set(model=self.session.model_label)
        else:
            status.set(model=self.settings.model.display_name)
        if self.animated:
            self.set_interval(1 / 8, self._tick)
        self.call_after_refresh(self._first_frame)

    def _first_frame(self) -> None:
        if self.on_first_frame is not None:
            self.on_first_frame(self)
        self.run_worker(self._start_session(), name="start", group="session", exit_on_error=False)

    def _build_session(self) -> SessionAPI:
        """Runs in a thread: importing the engine must not hold up the screen."""
        from soothe.engine.session import Session

        session = Session(self.settings, thread_id=self.requested_thread, check_server=True)
        preload = getattr(session, "preload", None)
        if callable(preload):  # heavy imports off the event loop, before start()
            preload()
        return session  # type: ignore[return-value]

    async def _start_session(self) -> None:
        try:
            if self.session is None:
                self.session = await asyncio.to_thread(self._build_session)
                self.handler.attach(self.session.bus)
            await self.session.start()
        except Exception as exc:
            self._engine_unavailable(exc)
            return
        session = self.session
        self.session_ready = True
        self._show_session_status()
        try:
            if self.requested_thread:
                self.handler.restore(await session.open_thread(self.requested_thread))
            else:
                self.handler.sync_goals(session.goals())
                self.handler.set_evidence(session.evidence())
        except Exception as exc:
            self.handler.engine_error(exc, "restore")
        self._engine_ready.set()
        if session.provider_status == "unreachable":
            self._no_server_notice()
        elif session.provider_status == "reachable":
            self.run_worker(self._load_models(), group="models", exit_on_error=False)

    def _show_session_status(self) -> None:
        session = self.session
        if session is None:
            return
        self.main.status.set(
            model=session.model_label,
            provider=session.provider_status,
            thread=session.thread_id,
        )

    async def _load_models(self) -> None:
        if self.session is None:
            return
        with contextlib.suppress(Exception):
            self.models = await self.session.list_models()

    def _engine_unavailable(self, exc: BaseException) -> None:
        self.engine_failed = True
        self.main.status.set(provider="offline")
        if getattr(exc, "user_facing", False):  # e.g. the data dir is in use: its own words
            body = f"{exc}\nThe workbench stays open, but requests cannot run."
        else:
            body = (
                f"The engine could not start: {type(exc).__name__}: {exc}\n"
                "The workbench stays open, but requests cannot run. "
                "Check the install (`pip install -e .`) and run `soothe doctor`."
            )
        self.main.show_notice(
            Notice(
                "Engine unavailable",
                body,
                actions=(("dismiss", "Dismiss"),),
                error=True,
                id=ENGINE_NOTICE,
            )
        )
        self.notify(str(exc)[:200], title="Engine unavailable", severity="error")

    def server_lost(self, error: str) -> None:
        """A run failed because the model server did not answer."""
        if self.session is not None and self.session.provider_status == "demo":
            return
        self.main.status.set(provider="unreachable")
        self._no_server_notice(error)

    def _no_server_notice(self, error: str = "") -> None:
        model = self.settings.model
        url = model.resolved_base_url()
        if model.provider == "ollama":
            fix = (
                f"Start Ollama (`ollama serve`) and pull the model (`ollama pull {model.name}`), "
                "or point model.base_url / OLLAMA_HOST at your server."
            )
        else:
            fix = "Check model.base_url and the API key (OPENAI_API_KEY), then restart."
        reason = error or getattr(self.session, "server_error", "") or ""
        why = f" ({reason})" if reason else ""
        body = (
            f"No model server answered at {url}{why}.\n{fix}\nOr try the built-in demo model now."
        )
        self.main.show_notice(
            Notice(
                "No model server",
                body,
                actions=(("demo", "Use demo model"), ("dismiss", "Dismiss")),
                id=NO_SERVER_NOTICE,
            )
        )

    def _main_ready(self) -> None:
        self.handler.select(NodeRef("conversation"))

    def on_notice_action(self, event: Notice.Action) -> None:
        if event.action == "demo":
            self.use_demo()
        event.notice.remove()
        self.prompt.focus()

    async def on_unmount(self) -> None:
        self.handler.shutdown()
        if self.session is not None:
            with contextlib.suppress(Exception):
                await self.session.close()

    # -- the clock -------------------------------------------------------------------------

    def _tick(self) -> None:
        self.main.goal_tree.advance_spinner()
        if self.running:
            # whole seconds: the status line is full width, and a full-width change in the
            # same frame as the stream makes Textual repaint every panel in between
            elapsed = float(int(self.clock() - (self.run_started_at or self.clock())))
            self.main.status.set(elapsed=elapsed)

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

    # -- the prompt ------------------------------------------------------------------------

    def _completions(self, command: str) -> Iterable[str]:
        if command == "/theme":
            return [*BUILTIN_THEMES, *sorted(set(self.available_themes) - set(BUILTIN_THEMES))]
        if command == "/model":
            return self.models
        return ()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input is not self.prompt:
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
        problem = command.problem()
        if problem:
            self.notify(problem, severity="warning")
            return
        name, arg = command.name, command.arg
        if name == "goal":
            self.add_goal(arg)
        elif name == "autonomous":
            self.start_run(arg, autonomous=True)
        elif name == "skill":
            self.start_run(command.raw)
        elif name == "model":
            self.switch_model(arg)
        elif name == "theme":
            self.switch_theme(arg)
        elif name == "threads":
            self.action_threads()
        elif name == "export":
            self.export_current()
        elif name == "help":
            self.action_help()
        elif name == "run":
            self.action_run_goals()
        elif name == "new":
            self.start_new_thread()
        elif name == "demo":
            self.use_demo()
        elif name == "quit":
            self.exit()

    # -- runs ------------------------------------------------------------------------------

    def require_session(self) -> SessionAPI:
        if self.session is None:
            raise RuntimeError("the engine is not loaded")
        return self.session

    def start_run(self, text: str, *, autonomous: bool = False) -> None:
        if self._busy():
            return
        self._run_worker = self.run_worker(
            self._drive(lambda s: s.run(text, autonomous=autonomous), "run"),
            name="run",
            group="run",
            exit_on_error=False,
        )

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
            self._show_session_status()  # the run may have created the thread

    async def _settle(self) -> None:
        with contextlib.suppress(Exception):
            await self.handler.wait_idle(timeout=1.0)

    def action_interrupt(self) -> None:
        if self._run_worker is not None and not self._run_worker.is_finished:
            self._run_worker.cancel()

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
        if action == "focus_prompt":  # in the footer only where it helps
            return self.focused is not self.prompt
        return True

    # -- requests from the engine (opened by the handler) --------------------------------

    def open_clarification(self, event: ClarificationRequested, asker: str) -> None:
        modal = ClarificationModal(event.request_id, event.questions, asker)
        self._open_request(event.request_id, modal, self._answer_clarification)

    def open_approval(self, event: ApprovalRequested, asker: str) -> None:
        modal = ApprovalModal(event.request_id, event.tool, event.args, event.path, asker)
        self._open_request(event.request_id, modal, self._answer_approval)

    def _open_request(
        self, request_id: str, modal: Screen[Any], answer: Callable[[str, Any], None]
    ) -> None:
        self._requests[request_id] = modal

        def done(result: Any) -> None:
            if self._requests.pop(request_id, None) is not None:
                answer(request_id, result)

        self.push_screen(modal, done)

    def close_request(self, request_id: str) -> None:
        """The request was answered elsewhere (timeout, interrupt): drop its modal."""
        modal = self._requests.pop(request_id, None)
        if modal is not None and modal.is_attached:
            modal.dismiss(None)

    def _answer_clarification(self, request_id: str, answers: list[str] | None) -> None:
        from soothe.engine.interact import ClarificationResponse

        response = (
            ClarificationResponse(outcome="skipped")
            if answers is None
            else ClarificationResponse(outcome="answered", answers=answers)
        )
        self._answer(request_id, response)

    def _answer_approval(self, request_id: str, choice: str | None) -> None:
        from soothe.engine.interact import ApprovalResponse

        outcome = choice if choice in ("approve_once", "approve_always") else "deny"
        self._answer(request_id, ApprovalResponse(outcome=outcome))  # type: ignore[arg-type]

    def _answer(self, request_id: str, response: Any) -> None:
        if self.session is None:
            return
        try:
            self.session.broker.answer(request_id, response)
        except KeyError:
            self.notify("That question was already closed.", severity="warning")

    # -- goal commands -------------------------------------------------------------------

    def call_session(
        self,
        make: Callable[[SessionAPI], Awaitable[Any]],
        *,
        what: str,
        done: Callable[[Any], None] | None = None,
    ) -> Worker[None]:
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
            if self.session is not None:
                self.handler.sync_goals(self.session.goals())
            if done is not None:
                done(result)

        return self.run_worker(work(), group="session-call", exit_on_error=False)

    def add_goal(self, description: str, priority: int = 50) -> None:
        # the goal.created event shows it (one line, with the ctrl+r hint)
        self.call_session(lambda s: s.add_goal(description, priority=priority), what="add the goal")

    def on_goal_tree_command(self, event: GoalTree.Command) -> None:
        event.stop()
        command, goal_id = event.command, event.goal_id
        if command == "new":
            self.push_screen(GoalInputDialog(), lambda text: text and self.add_goal(text))
            return
        goal = self.handler.goals.get(goal_id or "")
        if goal is None:
            self.notify("Select a goal first (up/down in the goal tree).", severity="warning")
            return
        gid = goal.id
        if command == "details":
            evidence = sum(1 for e in self.handler.evidence.values() if e.goal_id == gid)
            answer = self.handler.answers.get(gid, "")
            self.push_screen(GoalDetailDialog(goal, answer, evidence))
        elif command == "depend":
            goals = self.handler.goals
            candidates = [
                g
                for g in goals.values()
                if g.id != gid and g.id not in goal.depends_on and not _waits_for(goals, g.id, gid)
            ]
            if not candidates:
                self.notify("No other goal to wait for (without a cycle).", severity="warning")
                return

            def picked(other: str | None) -> None:
                if other:
                    self.call_session(
                        lambda s: s.add_dependency(gid, other), what="add the dependency"
                    )

            self.push_screen(DependencyDialog(goal, candidates), picked)
        elif command == "cancel":
            if goal.status in ("completed", "failed", "cancelled"):
                self.notify(f"{gid} is already {goal.status}.", severity="warning")
                return

            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.call_session(lambda s: s.cancel_goal(gid), what=f"cancel {gid}")

            question = f"Cancel {gid} “{goal.description[:60]}”? (r on it resumes it later)"
            self.push_screen(ConfirmDialog(question), confirmed)
        elif command in ("suspend", "resume"):
            self.call_session(lambda s: s.toggle_suspend(gid), what=f"suspend {gid}")
        elif command == "retry":
            self.call_session(lambda s: s.retry_goal(gid), what=f"retry {gid}")
        elif command in ("priority_up", "priority_down"):
            step = PRIORITY_STEP if command == "priority_up" else -PRIORITY_STEP
            priority = max(0, min(100, goal.priority + step))
            if priority != goal.priority:
                self.call_session(
                    lambda s: s.set_priority(gid, priority), what=f"reprioritise {gid}"
                )

    def on_goal_tree_stream_chosen(self, event: GoalTree.StreamChosen) -> None:
        event.stop()
        if event.ref.key != self.handler.visible:
            self.handler.select(event.ref)

    def show_goal(self, goal_id: str) -> None:
        if not isinstance(self.screen, MainScreen):
            return
        self.main.goal_tree.show_ref(NodeRef("goal", goal_id))
        self.main.goal_tree.focus()

    def on_evidence_panel_opened(self, event: EvidencePanel.Opened) -> None:
        event.stop()
        self.push_screen(EvidenceDialog(event.entry))

    # -- threads, models, themes ---------------------------------------------------------

    def open_thread(self, thread_id: str) -> None:
        def opened(snapshot: Any) -> None:
            self.handler.restore(snapshot)
            self._show_session_status()
            self._back_to_main()
            self.notify(f"Opened thread {snapshot.title or thread_id}")

        self.call_session(lambda s: s.open_thread(thread_id), what="open the thread", done=opened)

    def start_new_thread(self) -> None:
        def created(thread_id: str) -> None:
            self.handler.reset()
            self._show_session_status()
            self._back_to_main()
            self.prompt.focus()
            self.notify(f"New thread {thread_id}")

        self.call_session(lambda s: s.new_thread(), what="start a thread", done=created)

    def delete_thread(self, thread_id: str, on_done: Callable[[], None] | None = None) -> None:
        def deleted(_: Any) -> None:
            self.notify(f"Deleted thread {thread_id}")
            if on_done is not None:
                on_done()

        self.call_session(lambda s: s.delete_thread(thread_id), what="delete", done=deleted)

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

    def _back_to_main(self) -> None:
        while len(self.screen_stack) > 1 and not isinstance(self.screen, MainScreen):
            self.pop_screen()

    def switch_model(self, name: str) -> None:
        """``/model NAME`` (back to the real provider after /demo); ``/model`` lists them."""
        if not name:
            self.call_session(lambda s: s.list_models(), what="list the models", done=self._list)
            return

        async def switch(session: SessionAPI) -> list[str]:
            await session.set_model(name)
            try:
                return await session.list_models()
            except Exception:  # the server is down: the status line says so
                return []

        def switched(models: list[str]) -> None:
            self.models = models
            self._show_session_status()
            if models and not _listed(name, models):
                self.notify(
                    f"{name} is not on the server; it has {', '.join(models[:8])}."
                    + (f" Pull it with `ollama pull {name}`." if self._is_ollama() else ""),
                    title=f"Model: {name}",
                    severity="warning",
                    timeout=10,
                )
            else:
                self.notify(f"Model: {name}")

        self.call_session(switch, what=f"switch to {name}", done=switched)

    def _list(self, models: list[str]) -> None:
        self.models = models
        current = self.session.model_label if self.session is not None else ""
        if not models:
            self.notify("The model server lists no models.", severity="warning")
            return
        shown = ", ".join(f"{m} (current)" if m == current else m for m in models[:20])
        self.notify(f"{shown}\n/model NAME switches.", title="Models", timeout=10)

    def _is_ollama(self) -> bool:
        return self.settings.model.provider == "ollama"

    def use_demo(self) -> None:
        if self.session is None:
            self.notify("The engine is not loaded yet.", severity="warning")
            return
        self.session.use_demo()
        self._show_session_status()
        for notice in self.main.query(f"#{NO_SERVER_NOTICE}"):
            notice.remove()
        self.notify("Using the demo model: answers are canned, no server needed.")

    def switch_theme(self, name: str) -> None:
        if name not in self.available_themes:
            known = ", ".join(BUILTIN_THEMES)
            self.notify(f"unknown theme {name!r}; try {known}", severity="warning")
            return
        self.theme = name
        if name != self.settings.ui.theme:
            self.notify(f'Theme {name} — set ui.theme = "{name}" in config.toml to keep it.')

    # -- global keys ---------------------------------------------------------------------

    def action_focus_prompt(self) -> None:
        if isinstance(self.screen, MainScreen):
            self.prompt.focus()

    def action_back_to_prompt(self) -> None:
        self.action_focus_prompt()

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
