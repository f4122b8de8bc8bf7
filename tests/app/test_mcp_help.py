"""MCP servers in the app: F1 and the command palette read the Session's MCP manager
(real FastMCP servers over stdio, tests/mcp/words_server.py) and never start a server to
draw themselves; once the servers ran, F1 shows each one's state, error and tools."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from textual.widgets import Static

from soothe.app.palette import McpProvider
from soothe.app.screens.help import HelpScreen
from tests.app.real_harness import Rig, ready, settle

SERVER = str(Path(__file__).parents[1] / "mcp" / "words_server.py")


def help_text(app: Any) -> str:
    assert isinstance(app.screen, HelpScreen)
    return str(app.screen.query_one("#help-text", Static).render())


async def test_f1_and_the_palette_show_mcp_servers_without_starting_them(rig: Rig) -> None:
    rig.configure(
        mcp={
            "servers": {
                "words": {"command": sys.executable, "args": [SERVER]},
                "broken": {"command": sys.executable, "args": [SERVER, "--crash"]},
            }
        }
    )
    app = rig.app()
    async with app.run_test(size=(120, 60)) as pilot:
        await ready(app, pilot)
        manager = app.session.mcp
        await pilot.press("f1")
        await settle(app, pilot)
        before = help_text(app)
        assert [s.state for s in manager.status()] == ["not started", "not started"]
        assert "MCP servers" in before
        assert "words" in before and "broken" in before
        assert before.count("starts on the first request that needs tools") == 2
        await pilot.press("escape")

        await manager.start()  # what the first request that needs tools does
        await pilot.press("f1")
        await settle(app, pilot)
        after = help_text(app)
        assert "stdio · ready · " in after and "count_words" in after
        assert "stdio · failed" in after and "cannot open the dictionary" in after
        await pilot.press("escape")

        provider = McpProvider(app.screen)
        await provider.startup()
        hits = [hit async for hit in provider.search("count_words")]
        assert [h.text for h in hits] == ["MCP tool: count_words"]
        servers = [hit.text async for hit in provider.search("MCP server")]
        assert set(servers) >= {"MCP server: words", "MCP server: broken"}
        hits[0].command()
        await settle(app, pilot)
        assert isinstance(app.screen, HelpScreen)


async def test_f1_says_when_no_mcp_server_is_configured(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(120, 60)) as pilot:
        await ready(app, pilot)
        await pilot.press("f1")
        await settle(app, pilot)
        assert "none configured ([mcp.servers] in config.toml)" in help_text(app)
