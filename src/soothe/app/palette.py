"""Command palette (ctrl+p) providers: goals, threads, models, themes, actions."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from soothe.app.commands import COMMANDS, Command
from soothe.themes import BUILTIN_THEMES

if TYPE_CHECKING:
    from soothe.app.main import SootheApp
    from soothe.app.session_api import ThreadView


class _SootheProvider(Provider):
    @property
    def soothe(self) -> SootheApp:
        return self.app  # type: ignore[return-value]

    def _entries(self) -> list[tuple[str, Callable[[], object], str]]:
        return []

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, command, help_text in self._entries():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), command, text=text, help=help_text)

    async def discover(self) -> Hits:
        for text, command, help_text in self._entries():
            yield DiscoveryHit(text, command, text=text, help=help_text)


class GoalsProvider(_SootheProvider):
    def _entries(self) -> list[tuple[str, Callable[[], object], str]]:
        app = self.soothe
        out: list[tuple[str, Callable[[], object], str]] = []
        for goal in app.handler.goals.values():
            out.append(
                (
                    f"Goal {goal.id}: {goal.description}",
                    partial(app.show_goal, goal.id),
                    goal.status,
                )
            )
        return out


class ThreadsProvider(_SootheProvider):
    async def startup(self) -> None:
        self.threads: list[ThreadView] = []
        session = self.soothe.session
        if session is None or not self.soothe.session_ready:
            return
        try:
            self.threads = await session.list_threads()
        except Exception as exc:  # the palette must open even when the store fails
            self.soothe.log.error(f"palette: list_threads failed: {exc!r}")

    def _entries(self) -> list[tuple[str, Callable[[], object], str]]:
        app = self.soothe
        return [
            (
                f"Open thread: {thread.title or thread.id}",
                partial(app.open_thread, thread.id),
                f"{thread.goal_count} goal{'' if thread.goal_count == 1 else 's'} · {thread.id}",
            )
            for thread in self.threads
        ]


class ModelsProvider(_SootheProvider):
    async def startup(self) -> None:
        self.models: list[str] = []
        session = self.soothe.session
        if session is None or not self.soothe.session_ready:
            return
        try:
            self.models = await session.list_models()
        except Exception as exc:
            self.soothe.log.error(f"palette: list_models failed: {exc!r}")
        self.soothe.models = list(self.models)

    def _entries(self) -> list[tuple[str, Callable[[], object], str]]:
        app = self.soothe
        return [
            (f"Use model: {name}", partial(app.switch_model, name), "from the model server")
            for name in self.models
        ]


class ThemesProvider(_SootheProvider):
    def _entries(self) -> list[tuple[str, Callable[[], object], str]]:
        app = self.soothe
        return [
            (
                f"Theme: {name}",
                partial(app.switch_theme, name),
                "built-in" if name in BUILTIN_THEMES else "",
            )
            for name in app.theme_names()
        ]


class McpProvider(_SootheProvider):
    """The MCP servers and their tools, as the Session's manager knows them (a server not
    started yet is listed by name; nothing is started to fill the palette). Choosing one
    opens F1, which shows each server's state, error and tools."""

    def _entries(self) -> list[tuple[str, Callable[[], object], str]]:
        from soothe.app.screens.help import mcp_servers

        app = self.soothe
        out: list[tuple[str, Callable[[], object], str]] = []
        for server in mcp_servers(app) or []:
            state = server.state if not server.error else f"{server.state}: {server.error}"
            out.append((f"MCP server: {server.name}", app.action_help, state[:120]))
            for tool, description in server.tools:
                out.append((f"MCP tool: {tool}", app.action_help, description[:120]))
        return out


class ActionsProvider(_SootheProvider):
    """The slash commands that have a palette label (the registry), and the evidence key."""

    def _entries(self) -> list[tuple[str, Callable[[], object], str]]:
        app = self.soothe
        entries: list[tuple[str, Callable[[], object], str]] = [
            (command.palette, partial(self._dispatch, command), command.palette_help)
            for command in COMMANDS
            if command.palette
        ]
        entries.append(("Toggle evidence panel", app.action_evidence, ""))
        return entries

    def _dispatch(self, command: Command) -> None:
        getattr(self.soothe, command.handler)()


PROVIDERS: set[type[Provider]] = {
    GoalsProvider,
    ThreadsProvider,
    ModelsProvider,
    ThemesProvider,
    McpProvider,
    ActionsProvider,
}
