"""``soothe -p`` with a crashing MCP server: one line on stderr naming the server and its
stderr tail, even when stderr is not a terminal (a script must learn that a configured
tool was not there), and the run goes on without it."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.faults.harness import ONE_STEP, SIMPLE, Brain, Env, Result, brain, env, fake, soothe

__all__ = ["brain", "env", "fake", "soothe"]  # fixtures used here

SERVER = str(Path(__file__).with_name("words_server.py"))


def test_a_failed_mcp_server_is_one_stderr_line_without_a_terminal(
    soothe: object, brain: Brain, env: Env
) -> None:
    path = env.home / "xdg-config" / "soothe" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[mcp.servers.broken]\ncommand = "{sys.executable}"\nargs = ["{SERVER}", "--crash"]\n'
    )
    for _ in range(2):  # plain, then --json
        brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
        brain.step("S-01", "Done without the server.")
    for extra in ((), ("--json",)):
        # capsys: stderr is not a terminal, so no progress lines, but this one is shown.
        r: Result = soothe("-p", "count the words in notes.txt", *extra)  # type: ignore[operator]
        assert r.code == 0, r.err
        lines = [line for line in r.err.splitlines() if "mcp server" in line]
        assert len(lines) == 1, r.err
        assert lines[0].startswith("! mcp server 'broken' failed to start: ")
        assert "cannot open the dictionary" in lines[0]
        assert lines[0].endswith("continuing without its tools")
