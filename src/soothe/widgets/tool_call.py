"""ToolCallBlock: one tool call in a stream, collapsed to a line until opened."""

from __future__ import annotations

import json
from typing import Any

from textual.content import Content
from textual.widgets import Collapsible, Static

from soothe.widgets.transcript import ToolRun

MAX_BODY_CHARS = 8000


def args_preview(args: dict[str, Any], width: int = 48) -> str:
    parts = []
    for key, value in args.items():
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        parts.append(f"{key}={shown}")
    text = " ".join(parts).replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _body(run: ToolRun) -> str:
    args = json.dumps(run.args, indent=2, ensure_ascii=False, default=str)
    if run.output is None:
        result = "(running…)"
    else:
        result = run.output if len(run.output) <= MAX_BODY_CHARS else run.output[:MAX_BODY_CHARS]
        if run.truncated or len(run.output) > MAX_BODY_CHARS:
            result += "\n… (output truncated)"
    return f"arguments:\n{args}\n\nresult:\n{result}"


def _title(run: ToolRun) -> Content:
    if run.ok is None:
        mark = ("…", "$text-muted")
    elif run.ok:
        mark = ("✓", "$success")
    else:
        mark = ("✗", "$error")
    # what the user said of the call goes before its arguments: the row is one line,
    # cut at the panel's width, and the arguments are what can be cut
    approval: list[tuple[str, str]] = []
    if run.approval:
        denied = run.approval in (
            "denied",
            "approval timed out",
            "approval cancelled",
            "not answered",
        )
        approval = [(" · ", "$text-muted"), (run.approval, "$warning" if denied else "$accent")]
    return Content.assemble(
        mark,
        " ",
        ("⚙ ", "$secondary"),
        (run.tool, "bold"),
        *approval,
        " ",
        (args_preview(run.args), "$text-muted"),
    )


class ToolCallBlock(Collapsible):
    DEFAULT_CSS = """
    ToolCallBlock {
        padding-bottom: 0;
        border-top: none;
        background: $surface;
        margin: 0 0 0 2;
    }
    ToolCallBlock > Contents {
        padding: 0 0 0 2;
    }
    ToolCallBlock .tool-body {
        color: $text-muted;
    }
    """

    def __init__(self, run: ToolRun) -> None:
        self.seen_version = run.version
        self._body = Static(Content(_body(run)), classes="tool-body")
        super().__init__(self._body, title=_title(run), collapsed=True)  # type: ignore[arg-type]
        self.add_class("-failed" if run.ok is False else "-ok")

    def sync(self, run: ToolRun) -> None:
        if run.version == self.seen_version:
            return
        self.seen_version = run.version
        self.title = _title(run)  # type: ignore[assignment]
        self._body.update(Content(_body(run)))
