"""StatusLine: model, provider status, thread, iteration, context use, tokens, the running
goal's spend against its budget and elapsed time."""

from __future__ import annotations

from dataclasses import dataclass, replace

from textual.content import Content
from textual.widgets import Static

PROVIDER_STYLES = {
    "reachable": ("●", "$success", "reachable"),
    "unreachable": ("●", "$error", "unreachable"),
    "demo": ("●", "$warning", "demo"),
    "unknown": ("○", "$text-muted", "connecting…"),
    "offline": ("●", "$error", "engine unavailable"),
}


@dataclass(frozen=True)
class StatusInfo:
    model: str = "…"
    profile: str = ""
    """The model profile when it is not the default one ("small"), shown by the model."""
    provider: str = "unknown"
    thread: str = ""
    iteration: int = 0
    max_iterations: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    ctx_used: int = 0
    """Input tokens of the latest model call (the server's count)."""
    ctx_window: int = 0
    """The window that call was packed for; 0: unknown, no ``ctx`` shown."""
    ctx_cut: bool = False
    """The server cut a prompt to fit (a ``model.context`` event) since the last call."""
    elapsed: float | None = None
    running: bool = False
    budget: str = ""
    """The running goal's spend against its budget (``G1 tokens 12k/200k · calls 3/40``);
    "" when no running goal has one."""


def _tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 100_000:
        return f"{count / 1000:.1f}k"
    return f"{count // 1000}k"


def _window(count: int) -> str:
    """A window as people name it: 2048 -> 2k, 8192 -> 8k, 131072 -> 128k."""
    return f"{count // 1024}k" if count >= 1024 and count % 1024 == 0 else _tokens(count)


CUT_MARK = "✂"
"""Beside ``ctx`` while the server has just cut a prompt to fit its window."""


def _elapsed(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def render_status(info: StatusInfo, width: int = 200) -> Content:
    """The status text, fitted to ``width`` cells: below ~110 columns, or when the whole
    line would not fit (a running goal's budget makes it long), the labels go and the
    thread id shortens; then the thread goes, then the run's tokens when a budget line
    shows the goal's own; the spend against the budget stays."""
    room = width - 2  # the widget's padding
    content = _status(info, compact=width < 110)
    if content.cell_length > room:
        content = _status(info, compact=True)
    if content.cell_length > room and info.thread:
        info = replace(info, thread="")
        content = _status(info, compact=True)
    if content.cell_length > room and info.budget:  # the goal's spend says it
        content = _status(replace(info, tokens_in=0, tokens_out=0), compact=True)
    return content


def _status(info: StatusInfo, *, compact: bool) -> Content:
    dot, style, word = PROVIDER_STYLES.get(info.provider, PROVIDER_STYLES["unknown"])
    sep = (" │ ", "$text-muted")
    parts: list[tuple[str, str] | str] = []
    if info.running:
        parts += [("◐" if compact else "◐ running", "$warning"), sep]
    elif not compact:
        parts += [("idle", "$text-muted"), sep]
    parts += [(info.model, "bold")]
    if info.profile:
        parts += [" ", (info.profile if compact else f"{info.profile} profile", "$warning")]
    parts += [" ", (dot, style), " ", (word, style)]
    if info.thread:
        label = () if compact else (("thread ", "$text-muted"),)
        parts += [sep, *label, _short(info.thread, 10 if compact else 14)]
    if info.max_iterations:
        label = () if compact else (("iter ", "$text-muted"),)
        parts += [sep, *label, f"{info.iteration}/{info.max_iterations}"]
    if info.ctx_window:  # the latest call's prompt against the window: ctx 3.1k/8k
        parts += [
            sep,
            ("ctx ", "$text-muted"),
            f"{_tokens(info.ctx_used)}/{_window(info.ctx_window)}",
        ]
        if info.ctx_cut:
            parts += [" ", (CUT_MARK, "$error")]
    if info.tokens_in or info.tokens_out:  # none yet (or a reopened thread): no "0 in"
        tokens = (
            f"{_tokens(info.tokens_in)}↑ {_tokens(info.tokens_out)}↓"
            if compact
            else (f"{_tokens(info.tokens_in)} in · {_tokens(info.tokens_out)} out")
        )
        parts += [sep, ("tok ", "$text-muted"), tokens]
    if info.budget:
        parts += [sep, *(() if compact else (("budget ", "$text-muted"),)), info.budget]
    if info.elapsed is not None:
        parts += [sep, _elapsed(info.elapsed)]
    return Content.assemble(*parts)


def _short(thread_id: str, width: int) -> str:
    return thread_id if len(thread_id) <= width else thread_id[: width - 1] + "…"


class StatusLine(Static):
    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $foreground;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        self.info = StatusInfo()
        super().__init__(render_status(self.info), id=id)

    def set(self, **changes: object) -> None:
        info = replace(self.info, **changes)  # type: ignore[arg-type]
        if info != self.info:
            self.info = info
            self._redraw()

    def _redraw(self) -> None:
        # one row, always: no layout of the screen for a new status
        self.update(render_status(self.info, self.size.width or 200), layout=False)

    def on_resize(self) -> None:
        self._redraw()
