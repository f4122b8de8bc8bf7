"""MCP servers' tools beside ours, through langchain-mcp-adapters and the ``mcp`` SDK.

Servers come from ``[mcp.servers.NAME]`` (stdio ``command``/``args``/``env`` or a
streamable HTTP ``url``). Nothing starts until the first step needs tools
(``McpManager.specs``); each server then runs in its own task, which holds its session
open (anyio scopes must close in the task that opened them) until ``aclose``. A server
that fails to start, or dies under a call, is ONE ``ErrorEvent`` (kind ``mcp``) naming it
with its stderr tail, and its tools leave the list; the run goes on without them.

Tool names are kept unique: a name that collides with one of ours or with another
server's tool becomes ``SERVER_NAME``. Schemas are made sendable: a ``maxLength`` /
``maxItems`` of 1,000 or more (which a real Ollama refuses to compile) is lowered to
``SCHEMA_BOUND`` and the change is logged.

Every import of ``mcp`` and ``langchain_mcp_adapters`` is inside a function.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import tempfile
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Literal

from soothe.engine.text import clip

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

    from soothe.engine.bus import EventBus
    from soothe.engine.config import McpServerSettings, McpSettings

log = logging.getLogger(__name__)

State = Literal["not started", "starting", "ready", "failed", "died", "disabled", "stopped"]
SCHEMA_BOUND = 999
"""What a bound of 1,000 or more is lowered to (NOTES.md: Ollama refuses ~2,000+)."""
_BOUND_KEYS = ("maxLength", "maxItems", "maxProperties")
_MIN_KEYS = ("minLength", "minItems", "minProperties")
_STDERR_TAIL = 400
_DESCRIPTION_CHARS = 1000


def sendable_schema(schema: Any, where: str = "") -> tuple[dict[str, Any], list[str]]:
    """A copy of ``schema`` with every bound >= 1,000 lowered; and what was changed."""
    out = copy.deepcopy(schema) if isinstance(schema, dict) else {"type": "object"}
    changes: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, path)
            return
        if not isinstance(node, dict):
            return
        for key in _BOUND_KEYS:
            value = node.get(key)
            if isinstance(value, int | float) and value >= 1000:
                node[key] = SCHEMA_BOUND
                changes.append(f"{path or '.'}: {key} {value:g} -> {SCHEMA_BOUND}")
        for key in _MIN_KEYS:
            value = node.get(key)
            if isinstance(value, int | float) and value > SCHEMA_BOUND:
                del node[key]
                changes.append(f"{path or '.'}: {key} {value:g} removed")
        for name, sub in (node.get("properties") or {}).items():
            walk(sub, f"{path}.{name}")
        for key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "prefixItems"):
            if key in node:
                walk(node[key], f"{path}[]" if key in ("items", "prefixItems") else path)
        for defs in ("$defs", "definitions"):
            for name, sub in (node.get(defs) or {}).items():
                walk(sub, f"{path}#{name}")

    walk(out, where)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out, changes


def content_text(content: Any) -> str:
    """MCP ``ainvoke`` returns content blocks (``[{"type": "text", "text": ...}]``), not a
    string: text blocks joined, other blocks named."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, tuple) and len(content) == 2:  # (content, artifact)
        return content_text(content[0])
    text = getattr(content, "content", None)
    if text is not None and not isinstance(content, dict | list):  # a ToolMessage
        return content_text(text)
    if isinstance(content, dict):
        kind = content.get("type")
        if kind == "text" or "text" in content:
            return str(content.get("text", ""))
        return f"[{kind or 'block'} {content.get('mime_type') or content.get('url') or ''}]"
    if isinstance(content, list):
        return "\n".join(t for t in (content_text(c) for c in content) if t)
    return str(content)


@dataclass
class McpTool:
    name: str
    """The name the model sees (unique)."""
    server: str
    original: str
    description: str
    parameters: dict[str, Any]
    tool: BaseTool

    def spec(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass
class ServerStatus:
    name: str
    transport: str
    state: State
    error: str = ""
    tools: list[tuple[str, str]] = field(default_factory=list)
    """(name the model sees, description)."""


class _Server:
    def __init__(self, name: str, cfg: McpServerSettings) -> None:
        self.name = name
        self.cfg = cfg
        self.state: State = "not started" if cfg.enabled else "disabled"
        self.error = ""
        self.tools: list[BaseTool] = []
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._errlog: IO[str] | None = None

    @property
    def transport(self) -> str:
        return "stdio" if self.cfg.command else "http"

    def stderr_tail(self) -> str:
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            text = self._errlog.read()[-4000:]
        except (OSError, ValueError):
            return ""
        lines = [ln for ln in text.strip().splitlines() if ln.strip()]
        return clip(" | ".join(lines[-4:]), _STDERR_TAIL)

    async def start(self) -> None:
        if self.state != "not started":
            return
        self.state = "starting"
        self._task = asyncio.create_task(self._run(), name=f"mcp:{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready.wait()), self.cfg.startup_timeout)
        except TimeoutError:
            self._fail(f"did not start within {self.cfg.startup_timeout:g}s")
            await self._cancel()

    async def _run(self) -> None:
        from langchain_mcp_adapters.tools import load_mcp_tools
        from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

        from mcp import ClientSession

        cfg = self.cfg
        try:
            async with contextlib.AsyncExitStack() as stack:
                if cfg.command:
                    # Kept open past the session so a failure can quote its tail.
                    self._errlog = tempfile.TemporaryFile(  # noqa: SIM115
                        "w+", encoding="utf-8", errors="replace"
                    )
                    params = StdioServerParameters(
                        command=cfg.command,
                        args=list(cfg.args),
                        env={**get_default_environment(), **cfg.env},
                        cwd=str(cfg.cwd) if cfg.cwd else None,
                        encoding_error_handler="replace",
                    )
                    read, write = await stack.enter_async_context(
                        stdio_client(params, errlog=self._errlog)
                    )
                    session = await stack.enter_async_context(ClientSession(read, write))
                else:
                    from langchain_mcp_adapters.sessions import create_session

                    conn: Any = {"transport": "streamable_http", "url": cfg.url}
                    if cfg.headers:
                        conn["headers"] = dict(cfg.headers)
                    session = await stack.enter_async_context(create_session(conn))
                await session.initialize()
                self.tools = await load_mcp_tools(session, server_name=self.name)
                self.state = "ready"
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            if self.state in ("starting", "ready"):
                self.state = "stopped"
        except BaseException as exc:
            self._fail(_exc_text(exc))
        finally:
            if self.state == "ready":
                self.state = "stopped"
            self._ready.set()

    def _fail(self, why: str) -> None:
        if self.state in ("failed", "died"):
            return
        was_ready = self.state == "ready"
        self.state = "died" if was_ready else "failed"
        tail = self.stderr_tail()
        self.error = why + (f"; stderr: {tail}" if tail else "")
        self.tools = []

    def died(self, why: str) -> None:
        if self.state == "ready":
            self._fail(why)

    async def _cancel(self) -> None:
        task, self._task = self._task, None
        if task is None or task.done():
            return
        self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), 3.0)
        except (TimeoutError, Exception):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def aclose(self) -> None:
        await self._cancel()
        if self.state == "ready":
            self.state = "stopped"
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()
            self._errlog = None


def _exc_text(exc: BaseException) -> str:
    """The innermost useful message of an exception (anyio wraps them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip() or type(exc).__name__
    return clip(f"{type(exc).__name__}: {text}", 300)


class McpManager:
    """The configured servers, started on first use; their tools under unique names."""

    def __init__(
        self,
        settings: McpSettings,
        *,
        bus: EventBus | None = None,
        reserved: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        self._servers = {name: _Server(name, cfg) for name, cfg in settings.servers.items()}
        self.bus = bus
        self.reserved = frozenset(reserved)
        self._started = False
        self._lock: asyncio.Lock | None = None
        self._tools: dict[str, McpTool] = {}
        self._reported: set[str] = set()
        self.ids: dict[str, Any] = {}

    @property
    def configured(self) -> bool:
        return bool(self._servers)

    async def start(self) -> None:
        """Start every enabled server (at the same time); failures become one line each."""
        if self._started or not self._servers:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._started:
                return
            await asyncio.gather(*(s.start() for s in self._servers.values()))
            self._started = True
            self._rebuild()
            for server in self._servers.values():
                self._report(server)

    def _rebuild(self) -> None:
        if self._tools:  # names stay as the model first saw them: only drop the dead
            self._tools = {
                n: t for n, t in self._tools.items() if self._servers[t.server].state == "ready"
            }
            return
        ready = [s for s in self._servers.values() if s.state == "ready"]
        counts: dict[str, int] = {}
        for server in ready:
            for tool in server.tools:
                counts[tool.name] = counts.get(tool.name, 0) + 1
        tools: dict[str, McpTool] = {}
        for server in ready:
            for tool in server.tools:
                name = tool.name
                if counts[name] > 1 or name in self.reserved:
                    name = _safe_name(f"{server.name}_{tool.name}")
                while name in tools or name in self.reserved:
                    name += "_"
                where = f"mcp server '{server.name}' tool '{tool.name}'"
                schema = tool.args_schema if isinstance(tool.args_schema, dict) else None
                if schema is None and tool.args_schema is not None:
                    schema = tool.args_schema.model_json_schema()  # type: ignore[union-attr]
                params, changes = sendable_schema(schema or {})
                for change in changes:
                    log.warning("%s: schema bound lowered before sending: %s", where, change)
                desc = clip(tool.description or "", _DESCRIPTION_CHARS)
                tools[name] = McpTool(
                    name=name,
                    server=server.name,
                    original=tool.name,
                    description=f"[{server.name}] {desc}".strip(),
                    parameters=params,
                    tool=tool,
                )
        self._tools = tools

    def _report(self, server: _Server) -> None:
        if server.state not in ("failed", "died") or server.name in self._reported:
            return
        self._reported.add(server.name)
        verb = "failed to start" if server.state == "failed" else "died"
        line = f"mcp server '{server.name}' {verb}: {server.error}; continuing without its tools"
        # with a bus the event is the one report (the app shows it, `-p` prints it once);
        # the log says it too only when no one listens
        log.log(logging.WARNING if self.bus is None else logging.INFO, "%s", line)
        if self.bus is not None:
            from soothe.engine.events import ErrorEvent

            self.bus.publish(ErrorEvent(message=line, kind="mcp", **_event_ids(self.ids)))

    async def specs(self) -> list[dict[str, Any]]:
        await self.start()
        return [t.spec() for t in self._tools.values()]

    def get(self, name: str) -> McpTool | None:
        return self._tools.get(name)

    async def tools(self) -> list[McpTool]:
        """The usable tools of the started servers (starting them on first need)."""
        await self.start()
        return list(self._tools.values())

    async def call(self, name: str, args: dict[str, Any], ids: dict[str, Any]) -> str:
        """Run an MCP tool; a transport failure marks its server dead (one line)."""
        tool = self._tools[name]
        server = self._servers[tool.server]
        try:
            result = await asyncio.wait_for(
                tool.tool.ainvoke(args), timeout=server.cfg.call_timeout
            )
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            raise McpCallError(
                f"{name} timed out after {server.cfg.call_timeout:g}s (mcp server '{server.name}')"
            ) from None
        except Exception as exc:
            from langchain_core.tools import ToolException

            if isinstance(exc, ToolException):  # the tool itself reported an error
                raise McpCallError(f"{name} failed: {clip(str(exc), 1000)}") from None
            server.died(_exc_text(exc))
            self.ids = ids
            self._rebuild()
            self._report(server)
            raise McpCallError(
                f"{name} failed: mcp server '{server.name}' is not usable ({_exc_text(exc)}); "
                "its tools are gone for this session"
            ) from None
        text = content_text(result)
        status = getattr(result, "status", None)
        if status == "error":
            raise McpCallError(text or f"{name} failed")
        return text

    def status(self) -> list[ServerStatus]:
        out = []
        for server in self._servers.values():
            tools = [
                (t.name, t.description) for t in self._tools.values() if t.server == server.name
            ]
            out.append(
                ServerStatus(server.name, server.transport, server.state, server.error, tools)
            )
        return out

    async def aclose(self) -> None:
        await asyncio.gather(*(s.aclose() for s in self._servers.values()))
        self._tools = {}


class McpCallError(Exception):
    pass


def _safe_name(name: str) -> str:
    """Tool names servers accept: letters, digits, ``_`` and ``-``, at most 64."""
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:64]


def _event_ids(ids: dict[str, Any]) -> dict[str, Any]:
    return {
        "thread_id": ids.get("thread_id") or "",
        **{k: ids.get(k) for k in ("loop_id", "goal_id", "step_id")},
    }


def parse_args(raw: Any, parameters: dict[str, Any]) -> dict[str, Any]:
    """An MCP call's arguments as an object, types put back by the one rule."""
    from soothe.engine.llm.toolcalls import coerce_args

    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            raise McpCallError(f"arguments must be a JSON object, got {raw!r:.200}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise McpCallError(f"arguments must be a JSON object, got {type(raw).__name__}")
    return coerce_args(dict(raw), parameters)
