"""The agent's tools: schemas for the model, validation of its calls, and dispatch.

``run_tool_call`` never raises for a bad call: an unknown tool, wrong or missing
arguments, a path outside the workspace, a refused approval all come back as a
``ToolOutcome`` with ``ok=False`` and a message the model can act on. Only cancellation
propagates. Every output is capped at ``max_output_chars`` before it reaches a prompt,
and any lone surrogate in it (an MCP server's text) is written out (``bytesafe``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from soothe.engine.agent import fs_tools, journal
from soothe.engine.agent.approval import require_approval
from soothe.engine.agent.capping import cap_text, preview
from soothe.engine.agent.shell import run_command
from soothe.engine.agent.workspace import ToolError, Workspace
from soothe.engine.bytesafe import escape
from soothe.engine.events import ToolCalled, ToolResult

if TYPE_CHECKING:
    from soothe.engine.agent.mcp import McpManager
    from soothe.engine.agent.sandbox import Confinement
    from soothe.engine.bus import EventBus
    from soothe.engine.config import Settings
    from soothe.engine.interact import InteractBroker

log = logging.getLogger(__name__)

ApprovalPolicy = Literal["ask", "auto", "deny"]
ID_KEYS = ("thread_id", "loop_id", "goal_id", "step_id")
MUTATING_TOOLS = frozenset({"write_file", "edit_file", "run_shell"})
_MAX_GREP_MATCHES = 200
_GREP_FILE_BYTES = 2_000_000


@dataclass
class ToolContext:
    workspace: Path
    broker: InteractBroker | None
    approval: ApprovalPolicy
    max_output_chars: int
    max_read_bytes: int
    ids: dict[str, Any] = field(default_factory=dict)
    always_approved: set[str] = field(default_factory=set)
    bus: EventBus | None = None
    approval_timeout: float | None = None
    rules: dict[str, Any] = field(default_factory=dict)
    """``[tools.rules]`` (approval.py)."""
    mcp: McpManager | None = None
    shell_network: bool = False
    confinement: Confinement | None = None
    """run_shell's sandbox; None: ``sandbox.detect()``."""
    offered: frozenset[str] | None = None
    """The only tools this step may call (read_only.offered_tools); None: all."""
    ws: Workspace = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.ws = Workspace.at(self.workspace)
        self.workspace = self.ws.root

    def event_ids(self) -> dict[str, Any]:
        return event_ids(self.ids)

    @property
    def shell_confined(self) -> bool:
        from soothe.engine.agent.sandbox import detect

        return (self.confinement or detect()).active

    async def specs(self) -> list[dict[str, Any]]:
        """The schemas to bind: ours, then the MCP servers' (started on first need)."""
        if self.mcp is None or not self.mcp.configured:
            return tool_specs()
        self.mcp.ids = self.event_ids()
        return tool_specs() + await self.mcp.specs()


def event_ids(ids: dict[str, Any]) -> dict[str, Any]:
    """The id fields of an event from an ids dict (thread_id may not be None)."""
    out = {k: ids.get(k) for k in ID_KEYS}
    out["thread_id"] = out["thread_id"] or ""
    return out


class ToolContextFactory:
    """Makes a ToolContext per step; "approve always" choices last for the whole session."""

    def __init__(
        self,
        settings: Settings,
        *,
        broker: InteractBroker | None,
        bus: EventBus | None,
        approval_timeout: float | None = None,
        mcp: McpManager | None = None,
    ) -> None:
        self.settings = settings
        self.mcp = mcp
        self.broker = broker
        self.bus = bus
        self.approval_timeout = approval_timeout
        self.always_approved: set[str] = set()

    def __call__(self, ids: dict[str, Any]) -> ToolContext:
        tools = self.settings.tools
        return ToolContext(
            workspace=tools.resolved_workspace(),
            broker=self.broker,
            approval=tools.approval,
            max_output_chars=tools.max_output_chars,
            max_read_bytes=tools.max_read_bytes,
            ids=dict(ids),
            always_approved=self.always_approved,
            bus=self.bus,
            approval_timeout=self.approval_timeout,
            rules=dict(tools.rules),
            mcp=self.mcp,
            shell_network=tools.shell_network,
        )


class ToolOutcome(BaseModel):
    call_id: str
    tool: str
    args: dict[str, Any]
    ok: bool
    output: str
    truncated: bool = False
    source: str = ""
    """Where the tool came from: ``""`` for ours, ``mcp:SERVER`` for an MCP tool."""


# --- argument models (their JSON schemas are what the model sees) ------------------------

_PATH = "path relative to the workspace root"


class _Args(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ReadFileArgs(_Args):
    path: str = Field(max_length=1024, description=_PATH)
    offset: int = Field(0, ge=0, le=100_000_000, description="first line to show (0-based)")
    limit: int = Field(400, ge=1, le=5000, description="maximum number of lines to show")


class ListDirArgs(_Args):
    path: str = Field(".", max_length=1024, description=_PATH)


class GlobArgs(_Args):
    pattern: str = Field(
        max_length=512, description="glob relative to the root, e.g. **/*.py or src/*.md"
    )


class GrepArgs(_Args):
    pattern: str = Field(max_length=512, description="Python regular expression")
    path: str = Field(".", max_length=1024, description="file or directory to search")
    glob: str = Field("", max_length=256, description="only files matching this, e.g. *.py")


class WriteFileArgs(_Args):
    path: str = Field(max_length=1024, description=_PATH)
    content: str = Field(max_length=200_000, description="the whole new file content")


class EditFileArgs(_Args):
    path: str = Field(max_length=1024, description=_PATH)
    old: str = Field(max_length=50_000, description="exact text to replace; must occur once")
    new: str = Field(max_length=50_000, description="replacement text")


class RunShellArgs(_Args):
    command: str = Field(max_length=4000, description="shell command, run in the workspace root")
    timeout: float = Field(30, gt=0, le=600, description="seconds before the command is killed")


# --- runners -----------------------------------------------------------------------------


async def _threaded(fn: Callable[..., str], *args: Any, **kwargs: Any) -> str:
    """Run a walking tool in a thread; on cancellation its stop flag ends the walk."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(fn, *args, stop=stop, **kwargs)
    finally:
        stop.set()


async def _read_file(ctx: ToolContext, a: ReadFileArgs) -> str:
    return await asyncio.to_thread(
        fs_tools.read_file,
        ctx.ws,
        a.path,
        a.offset,
        a.limit,
        max_bytes=ctx.max_read_bytes,
        max_chars=ctx.max_output_chars,
    )


async def _list_dir(ctx: ToolContext, a: ListDirArgs) -> str:
    return fs_tools.list_dir(ctx.ws, a.path)


async def _glob(ctx: ToolContext, a: GlobArgs) -> str:
    return await _threaded(fs_tools.glob_paths, ctx.ws, a.pattern)


async def _grep(ctx: ToolContext, a: GrepArgs) -> str:
    return await _threaded(
        fs_tools.grep,
        ctx.ws,
        a.pattern,
        a.path,
        a.glob or None,
        max_matches=_MAX_GREP_MATCHES,
        max_chars=max(200, ctx.max_output_chars - 200),
        max_file_bytes=max(ctx.max_read_bytes, _GREP_FILE_BYTES),
    )


async def _write_file(ctx: ToolContext, a: WriteFileArgs) -> str:
    target, existed = fs_tools.check_write(ctx.ws, a.path)
    rel = ctx.ws.rel(target)
    await require_approval(ctx, "write_file", {"path": rel, "content": a.content}, rel)
    target, existed = fs_tools.check_write(ctx.ws, a.path)
    links = fs_tools.other_links(target)
    with journal.recording("write_file", path=target):
        written = fs_tools.write_text(ctx.ws, target, a.content)
    what = "replaced the existing file" if existed else "new file"
    return f"wrote {written} bytes to {rel} ({what}){_links_note(links)}"


def _links_note(links: int) -> str:
    """What a write did to a file with other hard links: replaced it, not written through."""
    if not links:
        return ""
    other = "1 other hard link keeps" if links == 1 else f"{links} other hard links keep"
    return f"; it was a hard link: replaced by a new file, its {other} the old content"


async def _edit_file(ctx: ToolContext, a: EditFileArgs) -> str:
    target, _, _ = fs_tools.plan_edit(ctx.ws, a.path, a.old, a.new)
    rel = ctx.ws.rel(target)
    await require_approval(ctx, "edit_file", {"path": rel, "old": a.old, "new": a.new}, rel)
    # Checked again: the file may have changed while the user was deciding.
    target, text, summary = fs_tools.plan_edit(ctx.ws, a.path, a.old, a.new)
    links = fs_tools.other_links(target)
    with journal.recording("edit_file", path=target):
        fs_tools.write_text(ctx.ws, target, text)
    return summary + _links_note(links)


async def _run_shell(ctx: ToolContext, a: RunShellArgs) -> str:
    await require_approval(
        ctx, "run_shell", {"command": a.command, "timeout": a.timeout}, str(ctx.workspace)
    )
    with journal.recording("run_shell", command=a.command):  # journaled, cannot be undone
        result = await run_command(
            a.command,
            ctx.workspace,
            a.timeout,
            keep_chars=max(200, ctx.max_output_chars - 200),
            network=ctx.shell_network,
            confinement=ctx.confinement,
        )
    if result.timed_out:
        raise ToolError(
            f"command timed out after {a.timeout:g}s and was killed; output so far:\n"
            f"{result.output}"
        )
    text = f"exit code {result.exit_code}\n{result.output}"
    if result.exit_code != 0:
        raise ToolError(text)
    return text


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    args: type[_Args]
    run: Callable[[ToolContext, Any], Awaitable[str]]


TOOLS: dict[str, ToolDef] = {
    t.name: t
    for t in (
        ToolDef(
            "read_file",
            "Read a text file in the workspace; long files come in parts (use offset).",
            ReadFileArgs,
            _read_file,
        ),
        ToolDef(
            "list_dir", "List the entries of a directory in the workspace.", ListDirArgs, _list_dir
        ),
        ToolDef(
            "glob",
            "Find paths matching a glob pattern (** for any depth).",
            GlobArgs,
            _glob,
        ),
        ToolDef(
            "grep",
            "Search file contents with a regular expression; prints path:line: text.",
            GrepArgs,
            _grep,
        ),
        ToolDef(
            "write_file",
            "Create or overwrite a file with the given content (needs approval).",
            WriteFileArgs,
            _write_file,
        ),
        ToolDef(
            "edit_file",
            "Replace one exact, unique occurrence of 'old' with 'new' in a file (needs approval).",
            EditFileArgs,
            _edit_file,
        ),
        ToolDef(
            "run_shell",
            "Run a shell command in the workspace root; output and exit code are returned "
            "(needs approval; background processes are killed when it ends).",
            RunShellArgs,
            _run_shell,
        ),
    )
}

# Names small models use for our argument names.
_ALIASES: dict[str, tuple[str, ...]] = {
    "path": ("file_path", "filepath", "file", "filename", "dir", "directory", "dir_path"),
    "command": ("cmd", "shell_command", "script"),
    "content": ("contents", "text", "data"),
    "old": ("old_string", "old_str", "old_text", "search"),
    "new": ("new_string", "new_str", "new_text", "replace", "replacement"),
    "pattern": ("regex", "query", "glob_pattern"),
    "glob": ("include", "file_glob", "file_pattern"),
}
_WRAPPERS = ("args", "arguments", "input", "parameters", "params", "kwargs")
_TEXT_FIELDS = frozenset({"content", "old", "new"})
"""File text, which may arrive parsed when it looks like JSON. A path, command or pattern
given as a list or an object is a wrong type: refused, never used as its JSON text."""


@functools.cache
def tool_specs() -> list[dict[str, Any]]:
    """OpenAI-style function schemas for ``bind_tools``; every string is bounded.

    ``convert_to_openai_tool`` turns each argument model into its schema (refs inlined,
    titles removed); the name and description are ours. Built once: every step binds
    them, and rebuilding the schemas was a quarter of the engine's own time per step.
    Callers must not mutate the result."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": convert_to_openai_tool(t.args)["function"]["parameters"],
            },
        }
        for t in TOOLS.values()
    ]


@functools.cache
def _parameters(name: str) -> dict[str, Any]:
    """The JSON schema of a tool's parameters, as sent to the model."""
    return next(s["function"]["parameters"] for s in tool_specs() if s["function"]["name"] == name)


def tool_summaries() -> list[tuple[str, str]]:
    return [(t.name, t.description) for t in TOOLS.values()]


def _loads_if_json(value: str) -> Any:
    try:
        return json.loads(value)
    except (ValueError, TypeError):
        return value


def normalize_args(tool: ToolDef, raw: Any) -> dict[str, Any]:
    """Undo what small models do to arguments before validating them.

    Accepts the whole argument object as a JSON string, an object wrapped in a single
    ``args``/``arguments`` key and known alias names; then every value is put back to
    its declared type by the one rule, ``toolcalls.coerce_args`` (JSON strings where a
    number, list or object is declared; an object where file text is expected becomes
    its JSON text; a list or object where a path or command is expected stays wrong).
    """
    from soothe.engine.llm.toolcalls import coerce_args

    fields = tool.args.model_fields
    if isinstance(raw, str):
        raw = _loads_if_json(raw) if raw.strip() else {}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ToolError(f"arguments must be a JSON object, got {type(raw).__name__}: {raw!r:.200}")
    if len(raw) == 1:
        ((key, inner),) = raw.items()
        if key in _WRAPPERS and key not in fields:
            inner = _loads_if_json(inner) if isinstance(inner, str) else inner
            if isinstance(inner, dict):
                raw = inner
    args = dict(raw)
    for name, aliases in _ALIASES.items():
        if name in fields and name not in args:
            for alias in aliases:
                if alias in args and alias not in fields:
                    args[name] = args.pop(alias)
                    break
    return coerce_args(args, _parameters(tool.name), text_fields=_TEXT_FIELDS)


def _validation_message(
    tool: str, exc: ValidationError, args: dict[str, Any], model: type[_Args]
) -> str:
    problems = []
    for err in exc.errors()[:6]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        problems.append(f"{where}: {err['msg']}")
    text = f"invalid arguments for {tool}: " + "; ".join(problems)
    extra = sorted(set(args) - set(model.model_fields))
    if extra:
        text += f". Unexpected argument(s): {', '.join(extra)}"
    return text + f". Expected: {_signature(TOOLS[tool])}"


def _signature(tool: ToolDef) -> str:
    params = ", ".join(
        f"{n}{'' if f.is_required() else '?'}" for n, f in tool.args.model_fields.items()
    )
    return f"{tool.name}({params})"


def _graph_signal(exc: BaseException) -> bool:
    """A LangGraph control-flow exception (``interrupt()``), which must propagate."""
    from langgraph.errors import GraphBubbleUp

    return isinstance(exc, GraphBubbleUp)


async def run_tool_call(ctx: ToolContext, call: dict[str, Any]) -> ToolOutcome:
    """Validate and run one tool call; publishes ToolCalled and ToolResult on ctx.bus.

    ``call`` is ``{"name", "args", "id"}``, plus ``"error"`` for a call the model layer
    could not parse (LangChain's ``invalid_tool_calls``).
    """
    call_id = str(call.get("id") or "call_" + uuid.uuid4().hex[:8])
    name = str(call.get("name") or "").strip()
    raw_args = call.get("args")
    shown_args = raw_args if isinstance(raw_args, dict) else {"_raw": raw_args}
    tool = TOOLS.get(name)
    refused = ctx.offered is not None and name not in ctx.offered
    if tool is None and not refused and ctx.mcp is not None and ctx.mcp.get(name) is not None:
        return await _run_mcp_call(ctx, call_id, name, raw_args, call.get("error"))
    normalized: dict[str, Any] | ToolError | None = None
    if tool is not None and not call.get("error"):
        try:
            normalized = normalize_args(tool, raw_args)
        except ToolError as exc:
            normalized = exc
    if isinstance(normalized, dict):
        shown_args = normalized  # the call as the tool sees it (types put back)
    ids = ctx.event_ids()
    if ctx.bus is not None:
        ctx.bus.publish(ToolCalled(call_id=call_id, tool=name, args=preview(shown_args), **ids))
    ok = False
    args: dict[str, Any] = dict(shown_args)
    try:
        if refused:
            offered = ", ".join(t for t in TOOLS if t in (ctx.offered or ()))
            raise ToolError(f"{name!r} is not offered for this read-only request; use {offered}")
        if tool is None:
            raise ToolError(f"unknown tool {name!r}; available: {', '.join(TOOLS)}")
        if call.get("error"):  # the model layer already found the arguments unusable
            raise ToolError(
                f"invalid arguments for {name}: {call['error']}. Expected: {_signature(tool)}"
            )
        if isinstance(normalized, ToolError):
            raise normalized
        assert normalized is not None
        args = normalized
        try:
            parsed = tool.args.model_validate(args)
        except ValidationError as exc:
            raise ToolError(_validation_message(name, exc, args, tool.args)) from None
        args = parsed.model_dump()
        output = await tool.run(ctx, parsed)
        ok = True
    except ToolError as exc:
        output = str(exc)
    except asyncio.CancelledError:
        if ctx.bus is not None:
            ctx.bus.publish(
                ToolResult(call_id=call_id, tool=name, output="cancelled", ok=False, **ids)
            )
        raise
    except Exception as exc:  # a tool bug or an OS failure must not end the step
        if _graph_signal(exc):  # the step graph's approval interrupt: not a failure
            raise
        log.exception("tool %s failed", name)
        output = f"{name} failed: {type(exc).__name__}: {exc}"
    text, truncated = cap_text(escape(output), ctx.max_output_chars)
    if ctx.bus is not None:
        ctx.bus.publish(
            ToolResult(call_id=call_id, tool=name, output=text, ok=ok, truncated=truncated, **ids)
        )
    return ToolOutcome(
        call_id=call_id, tool=name, args=args, ok=ok, output=text, truncated=truncated
    )


async def _run_mcp_call(
    ctx: ToolContext, call_id: str, name: str, raw_args: Any, error: Any
) -> ToolOutcome:
    """An MCP tool's call: approval (default ``ask``), the call, its text capped like ours."""
    from soothe.engine.agent.mcp import McpCallError, parse_args

    assert ctx.mcp is not None
    mcp_tool = ctx.mcp.get(name)
    assert mcp_tool is not None
    source = f"mcp:{mcp_tool.server}"
    ids = ctx.event_ids()
    args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {"_raw": raw_args}
    with contextlib.suppress(McpCallError):
        args = parse_args(raw_args, mcp_tool.parameters)
    if ctx.bus is not None:
        ctx.bus.publish(ToolCalled(call_id=call_id, tool=name, args=preview(args), **ids))
    ok = False
    try:
        if error:
            raise ToolError(f"invalid arguments for {name}: {error}")
        args = parse_args(raw_args, mcp_tool.parameters)
        await require_approval(
            ctx, name, args, mcp_tool.server, server=mcp_tool.server, original=mcp_tool.original
        )
        output = await ctx.mcp.call(name, args, ctx.ids)
        ok = True
    except (ToolError, McpCallError) as exc:
        output = str(exc)
    except asyncio.CancelledError:
        if ctx.bus is not None:
            ctx.bus.publish(
                ToolResult(call_id=call_id, tool=name, output="cancelled", ok=False, **ids)
            )
        raise
    text, truncated = cap_text(escape(output), ctx.max_output_chars)
    if ctx.bus is not None:
        ctx.bus.publish(
            ToolResult(call_id=call_id, tool=name, output=text, ok=ok, truncated=truncated, **ids)
        )
    return ToolOutcome(
        call_id=call_id,
        tool=name,
        args=args,
        ok=ok,
        output=text,
        truncated=truncated,
        source=source,
    )
