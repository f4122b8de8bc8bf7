"""``soothe doctor``: can the app work with this config? Prints a short aligned report.

Exit code 0 when usable, 1 when not (with the fix in words). Besides asking the server
about itself, it makes one real chat call per model through the client a run uses
(``ModelHub``): a server that lists the model but cannot answer, or a client library
that no longer works with our arguments (openai 3.x refused an ``httpx.Timeout``),
fails here too.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

from soothe.engine.config import SMALL_MODEL_BILLIONS, Settings, default_config_path
from soothe.engine.llm.errors import LLMError, ModelErrorKind
from soothe.engine.llm.server import ServerStatus, check_server
from soothe.engine.sanitize import visible

__all__ = ["doctor_report", "format_report", "run_doctor"]

LABEL_WIDTH = 12


def _row(label: str, value: str) -> str:
    return f"  {label:<{LABEL_WIDTH}} {value}"


def _data_dir_state(path: Path) -> tuple[str, bool]:
    """(description, usable). A missing dir is fine if it can be created."""
    if path.exists():
        if not path.is_dir():
            return "exists but is not a directory", False
        if os.access(path, os.W_OK | os.X_OK):
            return "exists, writable", True
        return "exists, NOT writable", False
    parent = path
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if os.access(parent, os.W_OK | os.X_OK):
        return "will be created", True
    return f"cannot be created ({parent} is not writable)", False


PROBE_PROMPT = "Reply with the single word: ok"


@dataclass(frozen=True)
class CallCheck:
    """One real chat call to a model: how long it took, or how it failed."""

    model: str
    seconds: float
    error: LLMError | None = None

    @property
    def row(self) -> str:
        if self.error is None:
            return f"{self.model} answered in {self.seconds:.1f} s"
        return f"{self.model} FAILED"


async def check_calls(settings: Settings) -> list[CallCheck]:
    """One short call per configured model (default, then fast when it differs), through
    the ``ModelHub`` a run uses, so the same client, arguments and error mapping."""
    from langchain_core.messages import HumanMessage

    from soothe.engine.llm.hub import ModelHub

    hub = ModelHub(settings.model)
    hub.transport_retries = 0  # a report, not a run: say what the first try got
    roles: list[Literal["default", "fast"]] = ["default"]
    if hub.model_name("fast") != hub.model_name("default"):
        roles.append("fast")
    checks = []
    try:
        for role in roles:
            started = time.monotonic()
            error: LLMError | None = None
            try:
                await hub.stream_text([HumanMessage(PROBE_PROMPT)], role=role, purpose="assess")
            except LLMError as exc:
                error = exc
            checks.append(CallCheck(hub.model_name(role), time.monotonic() - started, error))
    finally:
        await hub.aclose()
    return checks


def format_report(
    settings: Settings, status: ServerStatus, calls: list[CallCheck] | None = None
) -> tuple[int, list[str]]:
    """The report lines and the exit code for ``status`` and the ``calls`` made."""
    lines = ["soothe doctor"]
    if settings.config_file is not None:
        lines.append(_row("config file", str(settings.config_file)))
    else:
        lines.append(_row("config file", f"none, using defaults ({default_config_path()})"))
    data_dir = settings.storage.data_dir.expanduser()
    dir_state, dir_ok = _data_dir_state(data_dir)
    lines.append(_row("data dir", f"{data_dir} ({dir_state})"))
    lines.append(_row("provider", settings.model.provider))
    from soothe.engine.agent.sandbox import detect

    confinement = detect()
    shell = confinement.describe()
    if not confinement.active:
        shell += ": every command needs your approval, even with --yes"
    lines.append(_row("shell", shell))
    problems: list[tuple[str, str]] = []
    if settings.model.provider == "demo":
        lines.append(_row("model", "demo model (built in; no server is needed)"))
        lines += _model_rows(settings, status)
    else:
        lines.append(_row("base URL", status.base_url))
        if status.reachable:
            version = f", version {status.version}" if status.version else ""
            lines.append(_row("server", f"reachable{version}"))
        else:
            lines.append(_row("server", "NOT reachable"))
        if status.models or status.kind == ModelErrorKind.model_not_found:
            shown = ", ".join(status.models[:10]) if status.models else "none"
            more = f" (+{len(status.models) - 10} more)" if len(status.models) > 10 else ""
            lines.append(_row("models", shown + more))
        lines.append(_row("model", f"{status.model} ({_presence(status.model_present)})"))
        if status.fast_model:
            presence = _presence(status.fast_model_present)
            lines.append(_row("fast model", f"{status.fast_model} ({presence})"))
        if status.tools is not None:
            lines.append(_row("tool calls", "supported" if status.tools else "NOT supported"))
        lines += _model_rows(settings, status)
        if status.error:
            problems.append((status.error, status.fix or ""))
    for call in calls or []:
        lines.append(_row("chat call", call.row))
        if call.error is not None:
            problems.append((f"a chat call failed: {call.error.message}", ""))
    if not dir_ok:
        problems.append(
            (f"data dir {data_dir} {dir_state}", "set storage.data_dir to a writable directory")
        )
    if problems:
        for problem, fix in problems:
            lines.append(f"problem: {problem}")
            if fix:
                lines.append(f"fix:     {fix}")
        return 1, lines
    who = "the demo model" if settings.model.provider == "demo" else status.model
    lines.append(f"ok: soothe can run with {who}")
    return 0, lines


def _model_rows(settings: Settings, status: ServerStatus) -> list[str]:
    """The model's size, its context window and where that comes from (window.py's one
    rule, warning included), the profile they pick, and warnings."""
    from soothe.engine.llm.profile import choose_profile
    from soothe.engine.llm.window import resolve_window

    info = status.info
    rows = []
    if info.parameter_size:
        rows.append(_row("model size", f"{info.parameter_size} parameters"))
    window = resolve_window(settings.model, info)
    if status.reachable:
        rows.append(_row("window", window.describe()))
    if info.capabilities is not None:  # Ollama /api/show: thinking decides 'think'
        shown = ", ".join(visible(c) for c in info.capabilities) or "none listed"
        rows.append(_row("capabilities", shown))
    if info.parameter_size is not None or info.context_length is not None:
        profile = choose_profile(settings.model, info)
        rows.append(_row("profile", f"{profile.name} (model.profile = {settings.model.profile})"))
    billions = info.billions
    if billions is not None and billions < SMALL_MODEL_BILLIONS:
        rows.append(
            f"warning: {status.model} has {info.parameter_size} parameters (below "
            f"~{SMALL_MODEL_BILLIONS:g}B): expect weak plans and tool use; the small profile "
            "keeps runs short (a 7B model, e.g. qwen2.5:7b, does much better)"
        )
    if window.warning:
        rows.append(f"warning: {window.warning}")
    return rows


def _presence(present: bool | None) -> str:
    if present is None:
        return "unknown"
    return "present" if present else "MISSING"


async def doctor_report(settings: Settings) -> tuple[int, list[str]]:
    status = await check_server(settings.model)
    # A call only tells something new once the server says the model is there.
    calls = await check_calls(settings) if status.ok else []
    return format_report(settings, status, calls)


def run_doctor(settings: Settings, out: TextIO | None = None) -> int:
    """Print the report; return 0 when the app can work, 1 otherwise.

    Safe to call from inside a running event loop (the check then runs on a thread).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        code, lines = asyncio.run(doctor_report(settings))
    else:
        box: list[tuple[int, list[str]]] = []
        worker = threading.Thread(
            target=lambda: box.append(asyncio.run(doctor_report(settings))), daemon=True
        )
        worker.start()
        worker.join()
        if not box:
            raise RuntimeError("soothe doctor: the server check failed unexpectedly")
        code, lines = box[0]
    stream = out if out is not None else sys.stdout
    stream.write("\n".join(lines) + "\n")
    stream.flush()
    return code
