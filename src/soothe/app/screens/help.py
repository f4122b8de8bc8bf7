"""HelpScreen (F1): every key by scope, with the user's overrides, the slash commands and
the MCP servers with their tools (read from the Session's manager; nothing is started)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, Protocol

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from soothe.app.commands import COMMANDS
from soothe.app.keymap import help_rows
from soothe.app.screens.base import BOX_CSS
from soothe.engine.text import clip

KEY_WIDTH = 20
DESC_WIDTH = 22


class McpServerLike(Protocol):
    """What F1 reads of an MCP server (``engine.agent.mcp.ServerStatus``)."""

    name: str
    transport: str
    state: str
    error: str
    tools: list[tuple[str, str]]


_MCP_STATE = {
    "not started": "starts on the first request that needs tools",
    "disabled": "disabled in the config",
}


def mcp_servers(app: object) -> list[McpServerLike] | None:
    """The MCP servers as the Session's manager sees them, without starting any; None
    when the engine has not started (the config's server names are shown then)."""
    session = getattr(app, "session", None)
    manager = getattr(session, "mcp", None)
    if manager is None:
        return None
    return list(manager.status())


def mcp_content(servers: Sequence[McpServerLike] | None, configured: Sequence[str]) -> Content:
    """F1's MCP section: each server, its state (or why it failed) and its tools."""
    parts: list[Content | tuple[str, str] | str] = [("MCP servers\n", "bold $primary")]
    if servers is None:
        servers = []
        for name in configured:
            parts.append((f"  {name:<{KEY_WIDTH}}", "$accent"))
            parts.append(("engine starting…\n", "$text-muted"))
    if not servers and not configured:
        parts.append(("  none configured ([mcp.servers] in config.toml)\n", "$text-muted"))
    for server in servers:
        parts.append((f"  {server.name:<{KEY_WIDTH}}", "$accent"))
        state = _MCP_STATE.get(server.state, server.state)
        style = "$error" if server.state in ("failed", "died") else ""
        parts.append((f"{server.transport} · {state}", style))
        parts.append(f" · {len(server.tools)} tools\n" if server.state == "ready" else "\n")
        if server.error:
            parts.append((f"    {clip(server.error, 160)}\n", "$error"))
        for tool, description in server.tools:
            parts.append((f"    {tool:<{KEY_WIDTH - 2}}", "$accent"))
            parts.append((f"{clip(description, 56)}\n", "$text-muted"))
    return Content.assemble(*parts)


def help_content(
    overrides: Mapping[str, str],
    servers: Sequence[McpServerLike] | None = None,
    configured: Sequence[str] = (),
) -> Content:
    parts: list[Content | tuple[str, str] | str] = []
    scopes = help_rows(overrides)
    every = [row for _, rows in scopes for row in rows]
    # at least one space between the columns, however long a key or description is
    key_width = max([KEY_WIDTH, *(len(keys) + 1 for keys, _, _ in every)])
    desc_width = max([DESC_WIDTH, *(len(description) + 1 for _, description, _ in every)])
    for scope, rows in scopes:
        parts.append((f"{scope}\n", "bold $primary"))
        for keys, description, binding_id in rows:
            parts.append((f"  {keys:<{key_width}}", "$accent"))
            parts.append(f"{description:<{desc_width}}")
            parts.append((f"{binding_id}\n", "$text-muted"))
        parts.append("\n")
    parts.append(("Commands (type in the prompt)\n", "bold $primary"))
    for command in COMMANDS:
        parts.append((f"  {command.word:<{KEY_WIDTH}}", "$accent"))
        parts.append(f"{command.summary}\n")
    parts.append("\n")
    parts.append(mcp_content(servers, configured))
    parts.append("\n")
    parts.append(
        (
            "Change any key by its id in config.toml, for example\n"
            '  [ui.keymap]\n  "tree.cancel" = "delete"',
            "$text-muted",
        )
    )
    return Content.assemble(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="dialog.close"),
    ]
    DEFAULT_CSS = (
        BOX_CSS.format(name="HelpScreen")
        + """
    HelpScreen > Vertical { width: 84; max-width: 96%; height: 90%; }
    HelpScreen VerticalScroll { scrollbar-size-vertical: 1; }
    """
    )

    def __init__(self, overrides: Mapping[str, str]) -> None:
        super().__init__()
        self.overrides = dict(overrides)

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Soothe — keys and commands"
            box.border_subtitle = "esc closes"
            with VerticalScroll():
                yield Static(self._content(), id="help-text")

    def _content(self) -> Content:
        settings = getattr(self.app, "settings", None)
        mcp = getattr(settings, "mcp", None)
        configured = list(getattr(mcp, "servers", {}) or {})
        return help_content(self.overrides, mcp_servers(self.app), configured)

    def action_close(self) -> None:
        self.dismiss(None)
