"""Boot and notices: the first frame, the engine started behind it, the notices about it.

The engine (LangChain, LangGraph, the database) is imported and started in a worker that
begins after the first frame is on screen; until then the app is drawn and typing works.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from typing import TYPE_CHECKING

from soothe.app import heap_trim
from soothe.app.loop_timers import purge_cancelled
from soothe.app.session_api import SessionAPI
from soothe.engine.config_file import ConfigError
from soothe.themes import DEFAULT_THEME
from soothe.widgets.goal_tree import NodeRef
from soothe.widgets.notice import Notice
from soothe.widgets.offscreen import release_offscreen

if TYPE_CHECKING:
    from soothe.app.base import SootheBase

    _Base = SootheBase
else:
    _Base = object

NO_SERVER_NOTICE = "no-server"
DEMO_KEY = "ctrl+d"
"""The key the no-server notice names for the demo model (``app.demo``): it works from
the prompt, where tab completes and the notice's buttons are out of reach."""
ENGINE_NOTICE = "engine"
SERVER_RECHECK_S = 15.0
"""While no run is going and the model server is not reachable, check it this often: the
status line follows it both ways (a run in progress finds out for itself)."""
SERVER_RECHECK_REACHABLE_S = 60.0
"""... and this often while it is reachable (a remote endpoint's /models is not asked all
day every 15 s)."""


FULL_GC_DUE = 10
"""Young-generation collections after which a full one is due (CPython's default)."""
RUN_END_DUE = 4
"""... when a run ends (``idle_gc(run_ended=True)``). A full collection took 70-170 ms on
average in the real process after 10-100 demo requests (a loaded machine); a run that
allocated little leaves its garbage for the next one (a demo request made enough: 94 of
100 ended with one)."""
FULL_GC_OVERDUE = 200
"""... after which it runs even while a run streams (a very long run)."""
IDLE_GC_CHECK_S = 2.0
RELEASE_OFFSCREEN_S = 2.0
"""How often the drawn lines of widgets out of view are let go (``release_offscreen``)."""


def resume_gc() -> bool:
    """``run_tui`` turns the cyclic garbage collector off before it imports the app:
    start-up builds a few hundred thousand objects that live as long as the process
    (Textual's, then LangChain's and LangGraph's in the engine worker), and each full
    collection scans all of them again (~40 ms a time here, three before the first frame,
    more while the engine is imported behind it). Once the engine is up they are frozen
    (never scanned again) and collection resumes, young generations as usual; full
    collections, which scan everything the session has built since (60-120 ms each on a
    loaded machine, seven in a short streaming session), are left to ``idle_gc`` so they
    land between runs instead of in the middle of a stream. True when this was done;
    nothing to do where the collector was left on (tests, other callers)."""
    if gc.isenabled():
        return False
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 1_000_000)  # no automatic full collection
    gc.enable()
    return True


def idle_gc(running: bool, *, run_ended: bool = False) -> bool:
    """The full collection CPython would have run by now, when the app is idle (or when
    it is long overdue); True if one ran. ``run_ended``: a run has just ended, and its
    garbage goes now (after RUN_END_DUE younger collections since the last full one), as the
    idle tick rarely finds the app idle when requests follow one another: 20 demo
    requests sent back to back left 104,000 unreachable objects (~160,000 blocks) waiting
    for a full collection, and the process kept the memory they had taken. After a
    collection while idle, the freed heap pages go back to the system (``heap_trim``)."""
    due = gc.get_count()[2]
    if due >= FULL_GC_OVERDUE or (
        not running and due >= (RUN_END_DUE if run_ended else FULL_GC_DUE)
    ):
        gc.collect()
        if not running:
            heap_trim.trim()  # what it and the run freed goes back to the system
        return True
    return False


class BootMixin(_Base):
    _server_checked_at = float("-inf")
    """When the last idle server check started (``clock``)."""
    gc_managed = False
    """Full collections are the app's to run (``resume_gc``: the real process)."""

    def on_mount(self) -> None:
        # the first frame reads only self.frame: the full settings come after it
        if problem := self._apply_theme(self.frame.theme):
            self.warnings.append(problem)
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
            status.set(model=self.frame.display_name)
        if self.frame.provider == "demo":  # no server to wait for
            status.set(provider="demo")
        if self.animated:
            self.set_interval(1 / 8, self._tick)
            self.set_interval(SERVER_RECHECK_S, self._server_interval)
        if not self.is_headless:
            self._on_sigterm(install=True)
        self.call_after_refresh(self._first_frame)

    def _on_sigterm(self, *, install: bool) -> None:
        """SIGTERM quits as ctrl+q does when the answer is yes (``_terminated``), instead
        of killing the process with the terminal left in the app's modes."""
        import signal

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop = asyncio.get_running_loop()
            if install:
                loop.add_signal_handler(signal.SIGTERM, self._terminated)
            else:
                loop.remove_signal_handler(signal.SIGTERM)

    def _terminated(self) -> None:
        """SIGTERM: a run going on is interrupted (its step suspended, the goal resumable
        with the thread, as esc leaves it), the session closes, Textual restores the
        terminal, and the exit code is 143 (128 + 15)."""
        worker = getattr(self, "_run_worker", None)
        interrupt = getattr(self, "action_interrupt", None)  # runs.py, mixed in beside
        if worker is not None and not worker.is_finished and callable(interrupt):
            interrupt()
        self.exit(return_code=143)

    def _apply_theme(self, wanted: str) -> str | None:
        """Use the theme; the warning to show when there is none of that name."""
        if wanted in self.available_themes:
            self.theme = wanted
            return None
        self.theme = DEFAULT_THEME
        return f"ui.theme: unknown theme {wanted!r}, using {DEFAULT_THEME}"

    def _settings_loaded(self) -> None:
        """The full settings are built: where they differ from what the first frame read
        (a value given in a form the light reader does not take), they win."""
        settings = self.settings
        if settings.ui.theme != self.frame.theme and (
            problem := self._apply_theme(settings.ui.theme)
        ):
            self.notify(problem, title="Config", severity="warning", timeout=10)
        if dict(settings.ui.keymap) != self.frame.keymap:
            from soothe.app.keymap import usable_keymap, validate_keymap

            self.keymap_overrides = usable_keymap(settings.ui.keymap)
            self.set_keymap(self.keymap_overrides)
            for warning in validate_keymap(settings.ui.keymap):
                self.notify(warning, title="Config", severity="warning", timeout=10)
        if self.session is None:
            self.main.status.set(model=settings.model.display_name)
            if settings.model.provider == "demo":
                self.main.status.set(provider="demo")

    def _config_failed(self, exc: ConfigError) -> None:
        """A bad value only the full settings catch: leave with the same one line and exit
        code the command gives for it before any screen (``run_tui`` prints it)."""
        self.engine_failed = True
        self.config_error = exc.cli_line()
        self.exit(return_code=2)

    def _tick(self) -> None:
        self.main.goal_tree.advance_spinner()
        if self.running:
            # whole seconds: the status line is full width, and a full-width change in the
            # same frame as the stream makes Textual repaint every panel in between
            elapsed = float(int(self.clock() - (self.run_started_at or self.clock())))
            self.main.status.set(elapsed=elapsed)

    def _first_frame(self) -> None:
        if self.on_first_frame is not None:
            self.on_first_frame(self)
        self.run_worker(self._start_session(), name="start", group="session", exit_on_error=False)

    def _build_session(self) -> SessionAPI:
        """Runs in a thread: importing the engine must not hold up the screen."""
        self.load_settings()
        self.call_from_thread(self._settings_loaded)
        from soothe.engine.session import Session

        session = Session(self.settings, thread_id=self.requested_thread, check_server=True)
        preload = getattr(session, "preload", None)
        if callable(preload):  # heavy imports off the event loop, before start()
            preload()
        return session  # type: ignore[return-value]

    async def _start_session(self) -> None:
        try:
            await self._start_engine()
        finally:
            self.set_interval(RELEASE_OFFSCREEN_S, self.release_offscreen)
            if resume_gc():
                self.gc_managed = True
                self.set_interval(IDLE_GC_CHECK_S, lambda: idle_gc(self.running))

    def collect_after_run(self) -> None:
        """A run ended: once its last frame is painted, collect its garbage (``idle_gc``)
        where the app runs the full collections."""
        if self.gc_managed:
            self.call_after_refresh(lambda: idle_gc(self.running, run_ended=True))

    def release_offscreen(self) -> int:
        """Let go of the drawn lines of every widget out of view (``widgets/offscreen``)
        and of the cancelled timers of finished runs (``loop_timers``); how many widgets
        held lines."""
        purge_cancelled(asyncio.get_running_loop())  # what finished runs' timers kept
        return sum(release_offscreen(screen) for screen in self.screen_stack)

    async def _start_engine(self) -> None:
        try:
            if self.session is None:
                self.session = await asyncio.to_thread(self._build_session)
                self.handler.attach(self.session.bus)
            await self.session.start()
        except ConfigError as exc:
            self._config_failed(exc)
            return
        except Exception as exc:
            self._engine_unavailable(exc)
            return
        session = self.session
        self.session_ready = True
        self._server_checked_at = self.clock()  # start() checked it
        self.show_session_status()
        try:
            if self.requested_thread:
                self.handler.restore(await session.open_thread(self.requested_thread))
            else:
                self.handler.sync_goals(session.goals())
                self.handler.set_evidence(session.evidence())
        except Exception as exc:
            self.handler.engine_error(exc, "restore")
        self._engine_ready.set()
        watch = getattr(session, "watch_store", None)
        if callable(watch):  # PostgreSQL: other workers' goals shown live
            self.run_worker(watch(), name="store-watch", group="store", exit_on_error=False)
        if session.provider_status == "unreachable":
            self._no_server_notice()
        elif session.provider_status == "reachable":
            self.run_worker(self._load_models(), group="models", exit_on_error=False)

    async def _load_models(self) -> None:
        if self.session is None:
            return
        with contextlib.suppress(Exception):
            self.models = await self.session.list_models()

    def server_answered(self) -> None:
        """A model call ended with tokens from the server (the view model's Usage): the
        session already counts it reachable (``Session._track_server``), and the screen
        follows at once, not only when the run ends."""
        session = self.session
        if session is None:
            return
        shown = self.main.status.info.provider
        if shown != session.provider_status or self.main.has_notice(NO_SERVER_NOTICE):
            self.sync_server_state()

    def _server_interval(self) -> None:
        """Every SERVER_RECHECK_S: a check, or none yet while the server is reachable
        and the last one is less than SERVER_RECHECK_REACHABLE_S old."""
        session = self.session
        reachable = session is not None and session.provider_status == "reachable"
        if reachable and self.clock() - self._server_checked_at < SERVER_RECHECK_REACHABLE_S:
            return
        self._recheck_in_worker()

    def _recheck_in_worker(self) -> None:
        session = self.session
        idle = self.session_ready and not self.running
        if idle and session is not None and session.provider_status != "demo":
            self._server_checked_at = self.clock()
            self.run_worker(self.recheck_server(), group="server-check", exit_on_error=False)

    async def recheck_server(self) -> None:
        """Ask the server again (a check, not a run); the screen follows the answer: one
        that went away is shown as a run that could not reach it is. An answer that came
        too late (the model or provider changed meanwhile, e.g. to the demo model) changes
        nothing."""
        session = self.session
        refresh = getattr(session, "refresh_provider_status", None)
        if session is None or not callable(refresh):
            self.sync_server_state()
            return
        before = session.provider_status
        answer: object = before
        with contextlib.suppress(Exception):
            answer = await refresh()
        if answer is None:  # stale: the session kept its status, the screen keeps its own
            return
        if before == "reachable" and session.provider_status == "unreachable":
            self.server_lost(getattr(session, "server_error", "") or "")
            return
        self.sync_server_state()

    def sync_server_state(self) -> None:
        """The status line and the no-server notice follow the session's provider status,
        both ways: a run that succeeds or a check that passes takes the notice away."""
        session = self.session
        if session is None or self.engine_failed:
            return
        self.show_session_status()
        if session.provider_status == "reachable" and self.main.has_notice(NO_SERVER_NOTICE):
            self.main.remove_notice(NO_SERVER_NOTICE)
            self.notify("The model server answers again.", title="Model server")
            self.run_worker(self._load_models(), group="models", exit_on_error=False)

    def _engine_unavailable(self, exc: BaseException) -> None:
        self.engine_failed = True
        self.main.status.set(provider="offline")
        # e.g. the data dir is in use, or no such thread: the engine's own words
        if getattr(exc, "user_facing", False) or isinstance(exc, LookupError):
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
                key=ENGINE_NOTICE,
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
                f"Start Ollama (ollama serve) and pull the model (ollama pull {model.name}), "
                "or point model.base_url / OLLAMA_HOST at your server."
            )
        else:
            fix = "Check model.base_url and the API key (OPENAI_API_KEY), then restart."
        reason = error or getattr(self.session, "server_error", "") or ""
        from soothe.engine.llm.errors import unreachable_cause

        cause = unreachable_cause(reason, url)
        why = f" ({cause})" if cause else ""
        key = self.keymap_overrides.get("app.demo_model", DEMO_KEY).split(",")[0].strip()
        body = (
            f"No model server answered at {url}{why}.\n{fix}\n"
            f"Or try the built-in demo model now: press {key} or type /demo."
        )
        self.main.show_notice(
            Notice(
                "No model server",
                body,
                actions=(("demo", f"Use demo model ({key})"), ("dismiss", "Dismiss")),
                key=NO_SERVER_NOTICE,
            )
        )

    def action_demo_key(self) -> None:
        """ctrl+d while the no-server notice is up (from the prompt too): the demo model."""
        self.use_demo()
        self.prompt.focus()

    def use_demo(self) -> None:
        """``/demo`` or the notice's button: the built-in demo model, no server needed."""
        if self.session is None:
            self.notify("The engine is not loaded yet.", severity="warning")
            return
        self.session.use_demo()
        self.show_session_status()
        self.main.remove_notice(NO_SERVER_NOTICE)
        self.notify("Using the demo model: answers are canned, no server needed.")

    def _main_ready(self) -> None:
        # shown, not chosen by the user: follow is not held off at start-up
        self.handler.show(NodeRef("conversation").key)

    def on_notice_action(self, event: Notice.Action) -> None:
        if event.action == "demo":
            self.use_demo()
        self.main.remove_notice(event.notice)
        self.prompt.focus()

    async def on_unmount(self) -> None:
        if not self.is_headless:
            self._on_sigterm(install=False)
        self.handler.shutdown()
        if self.session is not None:
            with contextlib.suppress(Exception):
                await self.session.close()
