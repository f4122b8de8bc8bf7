"""``SootheAgent``: the Agent Client Protocol's agent side, on one Soothe Session.

initialize -> what we honour (text, resource links, embedded resources; loadSession);
session/new -> a thread in the workspace ``cwd`` (the client's MCP servers added);
session/load -> the thread's stored transcript replayed as updates, then continue;
session/prompt -> a run (``turns.Turns``); session/cancel -> the app's Esc;
modes ``ask`` / ``autonomous`` and a ``model`` option -> session config.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from soothe import __version__
from soothe.engine.config import Settings
from soothe.engine.sanitize import one_line
from soothe.frontends.acp.engine_host import Busy, EngineHost
from soothe.frontends.acp.prompt_text import request_text
from soothe.frontends.acp.translate import Translator
from soothe.frontends.acp.turns import AcpSession, Turns

if TYPE_CHECKING:
    from acp import Client
    from acp.schema import (
        InitializeResponse,
        LoadSessionResponse,
        NewSessionResponse,
        PromptResponse,
        SessionConfigOptionSelect,
        SessionModeState,
    )

    from soothe.engine.session import Session

log = logging.getLogger(__name__)

MODES = {
    "ask": ("Ask", "Route each request (answer, task or goal); ask before changes"),
    "autonomous": (
        "Autonomous",
        "Treat each request as a goal: plan, run the steps, replan until done",
    ),
}
"""The session modes; ``autonomous`` is the autonomous route (``/autonomous``, -p
--autonomous). Approvals are asked in both."""

COMMANDS = {"resume": "continue the goals a cancel or a failure paused"}


class SootheAgent:
    def __init__(self, settings: Settings) -> None:
        self.host = EngineHost(settings)
        self.client: Client | None = None
        self.sessions: dict[str, AcpSession] = {}
        self._models: list[str] = []

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    # --- the connection -----------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        from acp import PROTOCOL_VERSION
        from acp.schema import (
            AgentCapabilities,
            Implementation,
            InitializeResponse,
            McpCapabilities,
            PromptCapabilities,
            SessionCapabilities,
            SessionListCapabilities,
        )

        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="soothe", title="Soothe", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None  # nothing to authenticate: the model server is configured locally

    # --- sessions -----------------------------------------------------------------------

    def _busy(self) -> bool:
        return any(s.run is not None and not s.run.task.done() for s in self.sessions.values())

    async def _engine(self, cwd: str, servers: Any) -> Session:
        from pathlib import Path

        from acp import RequestError

        if not Path(cwd).is_absolute() or not Path(cwd).is_dir():
            raise RequestError.invalid_params({"cwd": cwd, "details": "not a directory"})
        try:
            session = await self.host.engine_for(cwd, servers, busy=self._busy())
        except Busy as exc:
            raise RequestError.invalid_request({"details": str(exc)}) from None
        except Exception as exc:  # the config, the store, the data-dir lock: one line
            raise RequestError.internal_error({"details": one_line(str(exc), 300)}) from None
        return session

    def _steps_of(self, goal_id: str) -> Any:
        """The goal's step DAG as it stands (the ContextEngine's), or None."""
        session = self.host.session
        if session is None or not session.context.has_goal(goal_id):
            return None
        return list(session.context.step_dag(goal_id).steps.values())

    def _state(self, session: Session, thread_id: str, cwd: str, servers: Any) -> AcpSession:
        workspace = session.settings.tools.resolved_workspace()
        translator = Translator(workspace, self._steps_of)
        state = AcpSession(thread_id, cwd, list(servers or []), translator)
        self.sessions[thread_id] = state
        return state

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        from acp.schema import NewSessionResponse

        session = await self._engine(cwd, mcp_servers)
        # a thread of its own (the Session's current one is left to a run going on)
        thread_id = await session.runner.ensure_thread(None, "")
        state = self._state(session, thread_id, cwd, mcp_servers)
        state.created = True
        await self._announce(state)
        return NewSessionResponse(
            session_id=thread_id,
            modes=self._modes(state),
            config_options=await self._options(state),
        )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        from acp import RequestError
        from acp.schema import LoadSessionResponse

        from soothe.engine.events import parse_event

        session = await self._engine(cwd, mcp_servers)
        if session.context.get_thread(session_id) is None:
            raise RequestError.resource_not_found(session_id)
        old = self.sessions.get(session_id)
        if old is not None and old.run is not None:
            raise RequestError.invalid_request({"details": "the session is running"})
        state = self._state(session, session_id, cwd, mcp_servers)
        replay = Translator(state.translator.workspace, state.translator.steps_of, replay=True)
        for record in await session.transcript(session_id):
            try:
                event = parse_event(record["event"])
            except Exception:  # a record of an older version: skipped, never fatal
                continue
            for update in replay.updates(event):
                await self._send(session_id, update)
        for update in replay.flush():  # a step's text the transcript ends in (a cancel)
            await self._send(session_id, update)
        plan = replay.plan()
        if plan is not None:
            await self._send(session_id, plan)
        await self._announce(state)
        return LoadSessionResponse(
            modes=self._modes(state), config_options=await self._options(state)
        )

    async def list_sessions(self, cwd: str | None = None, **kwargs: Any) -> Any:
        from acp.schema import ListSessionsResponse, SessionInfo

        session = self.host.session
        if session is None and cwd:
            session = await self._engine(cwd, None)
        if session is None:
            return ListSessionsResponse(sessions=[])
        workspace = str(session.settings.tools.resolved_workspace())
        import datetime as dt

        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=t.id,
                    cwd=cwd or workspace,
                    title=one_line(t.title, 120),
                    updated_at=dt.datetime.fromtimestamp(t.last_active, dt.UTC).isoformat(),
                )
                for t in session.context.list_threads()
            ]
        )

    async def _announce(self, state: AcpSession) -> None:
        """The commands a prompt may start with (``/resume``)."""
        from acp.schema import AvailableCommand, AvailableCommandsUpdate

        commands = [AvailableCommand(name=n, description=d) for n, d in COMMANDS.items()]
        update = AvailableCommandsUpdate(
            session_update="available_commands_update", available_commands=commands
        )
        with contextlib.suppress(Exception):  # a nicety: a client may not take it
            await self._send(state.id, update)

    # --- modes and options --------------------------------------------------------------

    def _modes(self, state: AcpSession) -> SessionModeState:
        from acp.schema import SessionMode, SessionModeState

        return SessionModeState(
            current_mode_id=state.mode,
            available_modes=[
                SessionMode(id=key, name=name, description=text)
                for key, (name, text) in MODES.items()
            ],
        )

    async def _options(self, state: AcpSession) -> list[SessionConfigOptionSelect]:
        from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption

        session = self.host.session
        current = session.settings.model.name if session is not None else ""
        if not self._models and session is not None:
            try:
                self._models = await session.list_models()
            except Exception as exc:  # the server's list is a nicety: the current one
                log.warning("models: %s", one_line(str(exc), 200))
        names = _model_names(current, self._models)
        mode = SessionConfigOptionSelect(
            id="mode",
            name="Mode",
            category="mode",
            type="select",
            current_value=state.mode,
            options=[
                SessionConfigSelectOption(value=key, name=name, description=text)
                for key, (name, text) in MODES.items()
            ],
        )
        model = SessionConfigOptionSelect(
            id="model",
            name="Model",
            category="model",
            type="select",
            current_value=current,
            options=[SessionConfigSelectOption(value=n, name=one_line(n, 80)) for n in names],
        )
        return [mode, model] if names else [mode]

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> Any:
        from acp import RequestError
        from acp.schema import SetSessionModeResponse

        if mode_id not in MODES:
            raise RequestError.invalid_params({"modeId": mode_id, "modes": list(MODES)})
        self._session(session_id).mode = mode_id
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> Any:
        from acp import RequestError
        from acp.schema import SetSessionConfigOptionResponse

        state = self._session(session_id)
        if config_id == "mode" and value in MODES:
            state.mode = str(value)
        elif config_id == "model" and isinstance(value, str) and value.strip():
            if self.host.session is None or self._busy():
                raise RequestError.invalid_request({"details": "the model changes between runs"})
            await self.host.session.set_model(value.strip())
            self.host.base.model.name = value.strip()  # kept if another cwd rebuilds it
        else:
            raise RequestError.invalid_params({"configId": config_id, "value": value})
        return SetSessionConfigOptionResponse(config_options=await self._options(state))

    # --- prompts ------------------------------------------------------------------------

    def _session(self, session_id: str) -> AcpSession:
        from acp import RequestError

        state = self.sessions.get(session_id)
        if state is None:
            raise RequestError.resource_not_found(session_id)
        return state

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        from acp import RequestError
        from acp.schema import PromptResponse

        state = self._session(session_id)
        for other in self.sessions.values():  # one run at a time in the process
            running = other.run is not None and not other.run.task.done()
            if running and other.asked is None:
                which = "this session" if other is state else f"session {other.id}"
                raise RequestError.invalid_request(
                    {"details": f"a prompt is running in {which}; cancel it or wait"}
                )
        session = await self._engine(state.cwd, state.servers)
        workspace = session.settings.tools.resolved_workspace()
        text = request_text(prompt, workspace)
        turns = Turns(session, self._send, self._ask_permission)
        for other in self.sessions.values():  # a run waiting for an answer elsewhere yields
            if other is not state and other.run is not None:
                await turns.stop_parked(other)
        stop = await turns.prompt(state, text)
        return PromptResponse(stop_reason=stop)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        state = self.sessions.get(session_id)
        session = self.host.session
        if state is None or session is None:
            return
        await Turns(session, self._send, self._ask_permission).cancel(state)

    # --- to the client ------------------------------------------------------------------

    async def _send(self, session_id: str, update: Any) -> None:
        if self.client is not None:
            await self.client.session_update(session_id=session_id, update=update)

    async def _ask_permission(self, **kwargs: Any) -> Any:
        assert self.client is not None
        return await self.client.request_permission(**kwargs)

    # --- the end ------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop what runs (suspended, resumable), forget the threads this process made
        that nothing was asked in, close the Session."""
        session = self.host.session
        if session is not None:
            turns = Turns(session, self._send, self._ask_permission)
            await turns.stop_all(list(self.sessions.values()))
            for state in self.sessions.values():
                if state.created and state.run is None:
                    with contextlib.suppress(Exception):
                        await _forget_if_empty(session, state.id)
        await self.host.close()


def _model_names(current: str, served: list[str]) -> list[str]:
    """The configured model first, then the server's others (Ollama's ``NAME:latest`` is
    ``NAME``: listed once)."""

    def same(a: str, b: str) -> bool:
        return a.removesuffix(":latest") == b.removesuffix(":latest")

    names = [current] if current else []
    for name in served:
        if not any(same(name, n) for n in names):
            names.append(name)
    return names


async def _forget_if_empty(session: Session, thread_id: str) -> None:
    context = session.context
    if context.get_thread(thread_id) is None or context.list_goals(thread_id=thread_id):
        return
    if await context.messages(thread_id, limit=1):
        return
    if session.recorder is not None:
        await session.recorder.flush()
    await session.delete_thread(thread_id)
