"""Session: everything one process needs to serve requests, built once and shared.

The TUI and the headless CLI both hold one Session. ``start()`` does the heavy work
(LangChain/LangGraph imports, opening the database, the server check), so the screen can
paint before it; everything after that goes through the runner and the ContextEngine.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from soothe.engine.bus import EventBus
from soothe.engine.bytesafe import escape
from soothe.engine.config import Settings
from soothe.engine.events import (
    EventBase,
    ModelProfileResolved,
    RunFailed,
    RunFinished,
    UndoApplied,
    Usage,
)
from soothe.engine.interact import InteractBroker
from soothe.engine.llm.profile import DEFAULT_PROFILE, ModelInfo, ModelProfile
from soothe.engine.outcome import RunOutcome
from soothe.engine.session_goals import SessionGoals
from soothe.engine.storage_errors import StorageError, storage_message
from soothe.engine.views import ThreadSnapshot, ThreadView

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from soothe.engine.agent.mcp import McpManager
    from soothe.engine.agent.undo import UndoReport
    from soothe.engine.context import ContextEngine
    from soothe.engine.context.transcript import TranscriptRecorder
    from soothe.engine.llm.hub import ModelHub
    from soothe.engine.memory import Memory
    from soothe.engine.runner import SootheRunner

ProviderStatus = Literal["unknown", "reachable", "unreachable", "demo"]


class Session(SessionGoals):
    def __init__(
        self,
        settings: Settings,
        thread_id: str | None = None,
        *,
        models: Mapping[str, BaseChatModel] | None = None,
        db_path: str | Path | None = None,
        checkpoint_path: str | Path | None = None,
        check_server: bool = False,
    ) -> None:
        self.settings = settings
        self.bus = EventBus()
        self.broker = InteractBroker(self.bus)
        self.thread_id = thread_id or ""
        self.provider_status: ProviderStatus = (
            "demo" if settings.model.provider == "demo" else "unknown"
        )
        self.server_error = ""
        self._checks = 0
        """Server checks started so far: an answer counts only if no newer one started."""
        self._models = models
        self._db_path = db_path
        self._checkpoint_path = checkpoint_path
        self._check_server = check_server
        self.context: ContextEngine
        self.hub: ModelHub
        self.runner: SootheRunner
        self.memory: Memory
        self.mcp: McpManager | None = None
        self.recorder: TranscriptRecorder | None = None
        self._unlisten_recorder: Callable[[], None] = lambda: None
        self._checkpoint_conn: Any = None
        self._journal: Any = None
        self._pool: Any = None
        self._lock: Any = None
        self._started = False
        self._runs: set[asyncio.Task[Any]] = set()
        self._storage_only = False
        self.profile: ModelProfile = DEFAULT_PROFILE
        """The resolved model profile (``start()`` resolves it; ``profile.small``)."""
        self.effective_settings: Settings = settings
        """The settings the engine runs under, once ``start()`` resolved the profile."""
        self._real_provider: str | None = None
        """The configured provider while ``use_demo`` stands in for it."""
        self.bus.add_listener(self._track_server)

    @property
    def model_label(self) -> str:
        return self.settings.model.display_name

    # --- lifecycle ----------------------------------------------------------------------

    def preload(self) -> None:
        """Do the heavy imports now (the app calls this in a thread after the first frame),
        so ``start()`` and the first request do not stall the event loop on them."""
        import importlib

        modules = [
            "aiosqlite",
            "langchain_core.messages",
            "langgraph.graph",
            "langgraph.checkpoint.sqlite.aio",
            "soothe.engine.runner",
            "soothe.engine.agent.core",
            "soothe.engine.llm.hub",
        ]
        provider = {"ollama": "langchain_ollama", "openai": "langchain_openai"}
        if self.settings.model.provider in provider:
            modules.append(provider[self.settings.model.provider])
        for name in modules:
            importlib.import_module(name)
        from pydantic import BaseModel

        from soothe.engine import events, views

        # The event and view schemas are deferred for the first frame; built here, the
        # first request does not build them (~50 ms) on the event loop.
        deferred: list[type[BaseModel]] = [*events.event_types()]
        deferred += [
            v for v in vars(views).values() if isinstance(v, type) and issubclass(v, views._View)
        ]
        for model in deferred:
            model.model_rebuild()

    async def open_storage(self) -> None:
        """Only the store (threads, goals, messages, memory), for commands that read or
        delete threads (``soothe threads``): no models, no checkpoints, no server check,
        no crash recovery, and no data-dir lock, so it is quick and can read beside a
        running session (``delete_thread`` takes the lock for its own write)."""
        if self._started or self._storage_only:
            return
        from soothe.engine.context import ContextEngine
        from soothe.engine.memory import memory_for

        location = await self._store_location()
        try:
            self.context = await ContextEngine.open(location)
        except Exception as exc:
            await self._close_pool()
            if isinstance(exc, StorageError) or not isinstance(location, str | Path):
                raise  # worded already, or PostgreSQL's own error (no file to name)
            raise StorageError(_storage_message(location, exc), location) from exc
        self.memory = memory_for(self.context, cross_thread=self.settings.memory.cross_thread)
        self.context.default_budget = self.settings.goals.default_budget()  # goals add
        self._storage_only = True

    async def start(self) -> None:
        """Open the stores, recover, build the engine. A start that fails closes what it
        had opened (their threads would keep the process alive) and releases the lock;
        a store that cannot be used raises StorageError naming that file."""
        if self._started:
            return
        try:
            await self._start()
        except BaseException:
            await self._abort_start()
            raise

    async def _abort_start(self) -> None:
        if self._started:  # e.g. an unknown --thread: everything is open, close it all
            with contextlib.suppress(Exception):
                await self.close()
            return
        if self.recorder is not None:
            self._unlisten_recorder()
            with contextlib.suppress(Exception):
                await self.recorder.close()
            self.recorder = None
        if self.mcp is not None:
            with contextlib.suppress(Exception):
                await self.mcp.aclose()
            self.mcp = None
        if getattr(self, "hub", None) is not None:
            with contextlib.suppress(Exception):
                await self.hub.aclose()
        if getattr(self, "context", None) is not None:
            with contextlib.suppress(Exception):
                await self.context.close()
        if self._checkpoint_conn is not None:
            with contextlib.suppress(Exception):
                await self._checkpoint_conn.close()
            self._checkpoint_conn = None
        if self._journal is not None:
            with contextlib.suppress(Exception):
                self._journal.close()
            self._journal = None
        with contextlib.suppress(Exception):
            await self._close_pool()
        self._release_lock()

    async def _start(self) -> None:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        from soothe.engine.agent.core import CoreAgent
        from soothe.engine.agent.journal import Journal
        from soothe.engine.agent.tools import ToolContextFactory
        from soothe.engine.classify import UnifiedClassifier
        from soothe.engine.context import ContextEngine
        from soothe.engine.llm.hub import ModelHub
        from soothe.engine.loop.executor import ClarificationPolicy, Executor
        from soothe.engine.loop.strange_loop import StrangeLoop
        from soothe.engine.memory import memory_for
        from soothe.engine.runner import SootheRunner

        settings = self.settings
        data_dir = Path(settings.storage.data_dir)
        db_path = self._db_path or settings.storage.db_path
        checkpoint_path = self._checkpoint_path or data_dir / "checkpoints.db"
        postgres = self._postgres
        if postgres:  # many workers share the store: no data-dir lock, leases instead
            db_path = settings.storage.dsn
        elif str(db_path) != ":memory:":
            from soothe.engine.datalock import DataDirLock

            data_dir.mkdir(parents=True, exist_ok=True)
            self._lock = DataDirLock(data_dir)
            self._lock.acquire()
        try:
            self.context = await ContextEngine.open(
                await self._store_location(),
                bus=self.bus,
                projection=settings.projection,
                max_parallel_goals=settings.loop.max_parallel_goals,
            )
        except StorageError:
            raise
        except Exception as exc:
            if postgres:  # the DSN without its password
                from soothe.engine.context.store_pg import redact_dsn

                db_path = redact_dsn(str(db_path))
            raise StorageError(_storage_message(db_path, exc), db_path) from exc
        try:  # before recover(): a start refused here changes nothing
            checkpointer: Any
            if postgres:
                from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

                checkpointer = AsyncPostgresSaver(self._pool)  # the store's pool
                for attempt in range(3):  # workers starting together race on its DDL
                    try:
                        await checkpointer.setup()
                        break
                    except Exception:
                        if attempt == 2:
                            raise
                        await asyncio.sleep(0.5 + attempt)
            else:
                from soothe.engine.context.store import connect

                self._checkpoint_conn = await connect(str(checkpoint_path))
                if str(checkpoint_path) != ":memory:":
                    await self._checkpoint_conn.execute("PRAGMA journal_mode=WAL")
                checkpointer = AsyncSqliteSaver(self._checkpoint_conn)
                await checkpointer.setup()
        except Exception as exc:
            raise StorageError(_storage_message(checkpoint_path, exc), checkpoint_path) from exc
        # The journal of file changes: opened before recover() too (StorageError naming
        # journal.db when it cannot be used).
        journal = Journal(":memory:" if str(db_path) == ":memory:" else data_dir / "journal.db")
        self._journal = journal
        if not postgres:  # on PostgreSQL an expired lease hands a goal on (queue.py)
            await self.context.recover()
        from soothe.engine.context.transcript import TranscriptRecorder

        self.recorder = TranscriptRecorder(self.context, lambda: self.thread_id)
        self._unlisten_recorder = self.bus.add_listener(self.recorder.observe)
        settings = await self._resolve_profile()
        self.memory = memory = memory_for(self.context, cross_thread=settings.memory.cross_thread)
        await memory.setup()
        if settings.model.provider == "demo":
            from soothe.engine.loop import demo_brain

            demo_brain.install()
        self.hub = ModelHub(settings.model, self.bus, models=self._models)
        self.hub.set_model_info(self.profile.info)  # the window, the capabilities
        self.hub.goal_meter = self.context  # per-goal caps: charged and asked per call
        self.context.default_budget = settings.goals.default_budget()  # goals.budget
        from soothe.engine.agent.mcp import McpManager
        from soothe.engine.agent.tools import TOOLS

        self.mcp = McpManager(settings.mcp, bus=self.bus, reserved=set(TOOLS))
        tools = ToolContextFactory(settings, broker=self.broker, bus=self.bus, mcp=self.mcp)
        # Each step's graph checkpoints in the loop's database, under its own thread.
        agent = CoreAgent(
            self.hub, tools, settings, self.bus, checkpointer=checkpointer, journal=journal
        )
        executor = Executor(
            self.context,
            agent,
            ClarificationPolicy(settings.tools.clarify, self.broker),
            max_parallel=settings.loop.max_parallel_steps,
            usage=self.hub.usage,
        )
        loop = StrangeLoop(
            context=self.context,
            hub=self.hub,
            executor=executor,
            bus=self.bus,
            checkpointer=checkpointer,
            max_iterations=settings.loop.max_iterations,
            execution_mode=settings.loop.parallelism,
            small_model=settings.small_model,
        )
        self.runner = SootheRunner(
            settings=settings,
            bus=self.bus,
            context=self.context,
            hub=self.hub,
            loop=loop,
            agent=agent,
            classifier=UnifiedClassifier(loop.planner),
            memory=memory,
        )
        self._started = True
        if self.thread_id and self.context.get_thread(self.thread_id) is None:
            raise LookupError(f"no thread '{self.thread_id}' (see `soothe threads`)")
        if settings.model.provider != "demo":
            await asyncio.to_thread(self.hub.warm)
        if self._check_server:
            await self.refresh_provider_status()

    async def _resolve_profile(self) -> Settings:
        """Resolve ``model.profile`` once (one ``/api/show`` or ``/models`` request, for
        every profile setting: the window and the capabilities need it too), publish it in
        the log and on ``self.profile``, and return the settings the engine runs under
        (``self.effective_settings``: the small profile's tight loop when it applies)."""
        import logging

        from soothe.engine.llm.profile import resolve_profile

        self.profile = await resolve_profile(self.settings.model)
        self.effective_settings = self.settings.effective(self.profile)
        logging.getLogger(__name__).info(
            "model %s: %s", self.settings.model.display_name, self.profile.describe()
        )
        profile = self.profile
        self.bus.publish(
            ModelProfileResolved(
                model=self.settings.model.display_name,
                profile=profile.name,
                requested=profile.requested,
                reason=profile.reason,
                parameter_size=profile.info.parameter_size,
                context_length=profile.info.context_length,
                thread_id=self.thread_id or "",
            )
        )
        return self.effective_settings

    async def refresh_provider_status(self) -> ProviderStatus | None:
        """Ask the server now and set ``provider_status`` (and ``server_error``) from the
        answer; return it. None when the answer came too late to count: the model
        settings changed while it was awaited (``use_demo``, ``set_model``, another
        server), a newer check started, or a run found the server's state meanwhile
        (``_track_server``); ``provider_status`` is then left as it is."""
        if self.settings.model.provider == "demo":
            self.provider_status = "demo"
            return self.provider_status
        from soothe.engine.llm.server import check_server

        self._checks += 1
        check, asked = self._checks, self._model_key()
        status = await check_server(self.settings.model)
        if check != self._checks or asked != self._model_key():
            return None
        self.provider_status = "reachable" if status.reachable else "unreachable"
        self.server_error = "" if status.reachable else (status.error or "")
        return self.provider_status

    def _model_key(self) -> tuple[object, ...]:
        """What a server check's answer depends on: the provider, the models, the server
        and its key."""
        model = self.settings.model
        return (
            model.provider,
            model.name,
            model.fast_name,
            model.resolved_base_url(),
            model.resolved_api_key(),
        )

    def _track_server(self, event: EventBase) -> None:
        """A run that could not reach the server marks it unreachable; a model call the
        server answered (its Usage counts tokens), or a finished run, reachable again.
        The app reads provider_status after such a Usage and after every run."""
        if self.settings.model.provider == "demo":
            return
        if isinstance(event, RunFailed) and event.kind == "unreachable":
            self.provider_status = "unreachable"
            self.server_error = event.error
            self._checks += 1  # newer than a check in flight: its answer no longer counts
        elif isinstance(event, RunFinished | Usage):
            if isinstance(event, Usage) and not event.answered:
                return
            self._checks += 1  # the server answered: newer than a check in flight
            if self.provider_status != "reachable":
                self.provider_status = "reachable"
                self.server_error = ""

    @property
    def _postgres(self) -> bool:
        return self.settings.storage.backend == "postgresql" and self._db_path is None

    async def _store_location(self) -> Any:
        """The SQLite path, or a PgStore on one pool the checkpointer shares."""
        if not self._postgres:
            return self._db_path or self.settings.storage.db_path
        from soothe.engine.context.store_pg import PgStore, open_pool

        if not self.settings.storage.dsn:
            raise StorageError("storage.backend = postgresql needs storage.dsn")
        self._pool = await open_pool(self.settings.storage.dsn)
        return await PgStore.open(self.settings.storage.dsn, pool=self._pool)

    async def _close_pool(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def close(self) -> None:
        if self._storage_only:
            self._storage_only = False
            await self.context.close()
            await self._close_pool()
            return
        if not self._started:
            return
        await self._interrupt_runs()
        await self.runner.wait_settled()  # an interrupted run's suspends, written out
        self._started = False
        self.broker.cancel_all()
        if self.recorder is not None:
            self._unlisten_recorder()
            await self.recorder.close()
        if self.mcp is not None:
            await self.mcp.aclose()
        await self.hub.aclose()
        await self.context.close()
        if self._checkpoint_conn is not None:
            await self._checkpoint_conn.close()
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        await self._close_pool()
        self._release_lock()

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """The data-dir lock around a write, when this session does not hold it already
        (a storage-only session): never delete under a running session."""
        db_path = self._db_path or self.settings.storage.db_path
        if self._lock is not None or str(db_path) == ":memory:":
            yield
            return
        from soothe.engine.datalock import DataDirLock

        lock = DataDirLock(Path(self.settings.storage.data_dir))
        lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # --- requests -----------------------------------------------------------------------

    async def ensure_thread(self, text: str = "") -> str:
        """The current thread, created (titled by ``text``) when there is none yet; a
        front end that follows the run on the bus subscribes to ``thread:ID`` after it."""
        if not self.thread_id:
            self.thread_id = await self.runner.ensure_thread(None, text)
        return self.thread_id

    async def run(
        self, text: str, *, autonomous: bool = False, criteria: Sequence[str] = ()
    ) -> RunOutcome:
        """One request; its events are on ``bus``; cancelling interrupts it. ``criteria``:
        the done-when criteria of the goal the request becomes (``-p --done-when``)."""
        # Bytes in argv that are not UTF-8 arrive as lone surrogates: written out here
        # (bytesafe), or the prompt, the events and the store would refuse them.
        text = escape(text)
        criteria = [escape(c) for c in criteria]
        with self._tracked():
            thread_id = await self.ensure_thread(text)
            return await self.runner.run(text, thread_id, autonomous=autonomous, criteria=criteria)

    async def run_goals(self) -> RunOutcome:
        with self._tracked():
            thread_id = await self.ensure_thread("goals")
            return await self.runner.run_goals(thread_id)

    def unfinished_goals(self) -> list[Any]:
        return self.runner.unfinished_goals(self.thread_id) if self.thread_id else []

    async def resume(self) -> RunOutcome:
        with self._tracked():
            return await self.runner.resume(self.thread_id)

    @contextlib.contextmanager
    def _tracked(self) -> Iterator[None]:
        """Remember the task a run goes on in, so ``close`` can interrupt it first."""
        task = asyncio.current_task()
        if task is not None:
            self._runs.add(task)
        try:
            yield
        finally:
            if task is not None:
                self._runs.discard(task)

    async def _interrupt_runs(self) -> None:
        """Cancel runs still going and let them suspend their goals (as Esc does), before
        the broker cancels what they wait for: a pending approval must stay pending in
        the checkpoint, not be answered 'cancelled' while its step goes on."""
        current = asyncio.current_task()
        runs = [t for t in self._runs if t is not current and not t.done()]
        for task in runs:
            task.cancel()
        if runs:
            await asyncio.wait(runs, timeout=5.0)

    # --- threads ------------------------------------------------------------------------

    async def list_threads(self) -> list[ThreadView]:
        threads = self.context.list_threads()
        return [
            ThreadView(
                id=t.id,
                title=t.title,
                created_at=dt.datetime.fromtimestamp(t.created_at),
                last_active=dt.datetime.fromtimestamp(t.last_active),
                goal_count=len(self.context.list_goals(thread_id=t.id)),
            )
            for t in threads
        ]

    async def open_thread(self, thread_id: str) -> ThreadSnapshot:
        thread = self.context.get_thread(thread_id)
        if thread is None:
            raise LookupError(f"no thread '{thread_id}'")
        self.thread_id = thread_id
        goals = self.goals()
        answers: dict[str, str] = {g.id: g.findings for g in goals if g.findings}
        goal_answers = set(answers.values())
        quick = [
            m.content
            for m in await self.context.messages(thread_id, limit=200)
            if m.role == "assistant" and m.content not in goal_answers
        ]
        if quick:
            answers[""] = "\n\n".join(quick)
        return ThreadSnapshot(
            thread_id=thread_id,
            title=thread.title,
            goals=goals,
            evidence=self.evidence(),
            answers=answers,
            transcript=await self.transcript(thread_id),
        )

    async def transcript(
        self,
        thread_id: str,
        *,
        before: int | None = None,
        limit: int | None = None,
        before_seq: int | None = None,
        after: int | None = None,
    ) -> list[dict[str, Any]]:
        """What the thread showed, as stored events in order, each with its record ``id``
        (see ThreadSnapshot). ``before`` a record id (or ``before_seq``, a live event's
        seq) and ``limit`` page back: the newest ``limit`` records older than it;
        ``after`` a record id: the oldest ``limit`` newer than it."""
        from soothe.engine.context.transcript import decode

        if self.recorder is not None:
            await self.recorder.flush()
        if before_seq is not None:
            before = await self.context.transcript_id_of(thread_id, before_seq)
            if before is None:
                return []
        rows = await self.context.transcript(thread_id, before, limit, after)
        return [{**decode(data), "id": record} for record, data in rows]

    async def new_thread(self) -> str:
        self.thread_id = ""
        return self.thread_id

    async def undo_preview(self, thread_id: str) -> list[str]:
        """What ``undo`` would put back: the thread's last run's changes, newest first."""
        from soothe.engine.agent.undo import describe, plan_undo

        if self._journal is None:
            return []
        root = self.settings.tools.resolved_workspace()
        return [describe(e, root) for e in plan_undo(self._journal, thread_id)]

    async def undo(self, thread_id: str) -> UndoReport:
        """Put back the files the thread's last run changed (``soothe undo``'s rules: a
        file changed by someone else since is refused; commands cannot be undone)."""
        from soothe.engine.agent.undo import UndoReport, apply_undo, plan_undo

        if self._journal is None:
            return UndoReport()
        report = apply_undo(self._journal, plan_undo(self._journal, thread_id))
        if report.restored or report.refused or report.commands:
            # a fact of the thread: its transcript keeps it (a reopened thread shows it)
            where = self.settings.tools.resolved_workspace()
            self.bus.publish(
                UndoApplied(
                    thread_id=thread_id,
                    restored=[_within(where, path) for path in report.restored],
                    refused=[f"{_within(where, path)}: {why}" for path, why in report.refused],
                    commands=list(report.commands),
                )
            )
        return report

    async def watch_store(self) -> None:
        """On PostgreSQL, follow the goals other workers run (context/watch.py: a poll
        every 2 s publishes their changes on this bus) until cancelled; on SQLite no one
        else writes, so it returns at once."""
        if not self._postgres:
            return
        from soothe.engine.context.watch import watch_store

        await watch_store(self.context, self.bus)

    async def delete_thread(self, thread_id: str) -> None:
        from soothe.engine.agent.journal import prune_thread

        with self._exclusive():
            await self.context.delete_thread(thread_id)
            # The thread's step checkpoints and its journal of file changes go with it.
            data_dir = Path(self.settings.storage.data_dir)
            if self._postgres:  # AsyncPostgresSaver's tables; the journal is local
                from soothe.engine.context.store_pg import prune_checkpoints

                await prune_checkpoints(self._pool, thread_id)
                prune_thread(":memory:", data_dir, thread_id)
            else:
                prune_thread(
                    self._checkpoint_path or data_dir / "checkpoints.db", data_dir, thread_id
                )
        await self.memory.delete_thread(thread_id)
        if self.thread_id == thread_id:
            self.thread_id = ""

    async def export_thread(self, thread_id: str) -> str:
        from soothe.engine.export import thread_markdown

        return await thread_markdown(self.context, thread_id or self.thread_id)

    # --- models -------------------------------------------------------------------------

    async def list_models(self) -> list[str]:
        if self.settings.model.provider == "demo":
            return ["demo model"]
        from soothe.engine.llm.server import check_server

        status = await check_server(self.settings.model)
        return list(status.models)

    async def set_model(self, name: str) -> None:
        """Switch models; after ``use_demo`` this goes back to the configured provider."""
        if self.settings.model.provider == "demo" and self._real_provider:
            self.settings.model.provider = self._real_provider  # type: ignore[assignment]
            self._real_provider = None
        self.settings.model.name = name
        await self._rebuild_hub()

    def use_demo(self) -> None:
        from soothe.engine.loop import demo_brain

        if self.settings.model.provider != "demo":
            self._real_provider = self.settings.model.provider
        self.settings.model.provider = "demo"
        self.provider_status = "demo"
        demo_brain.install()
        if self._started:
            self.hub.reset_models()
            self.hub.set_model_info(ModelInfo())  # the demo model's window

    async def _rebuild_hub(self) -> None:
        if self._started:
            self.hub.reset_models()
            from soothe.engine.llm.profile import fetch_model_info

            # Another model, another window and capabilities (one bounded request).
            self.hub.set_model_info(await fetch_model_info(self.settings.model))
        if self.settings.model.provider != "demo":
            await self.refresh_provider_status()


_storage_message = storage_message  # the name the CLI used


def _within(workspace: Path, path: str) -> str:
    """``path`` as the workspace names it (relative), or whole when it is outside."""
    try:
        return str(Path(path).relative_to(workspace))
    except ValueError:
        return path
