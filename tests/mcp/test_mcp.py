"""MCP servers: a real FastMCP server over stdio (tests/mcp/words_server.py) through the
manager, then end to end through ``soothe -p`` against the fake Ollama server. Each test
starts real processes, so there are few of them."""

from __future__ import annotations

import sys
from pathlib import Path

from soothe.engine.agent.mcp import McpManager, content_text, sendable_schema
from soothe.engine.agent.tools import TOOLS
from soothe.engine.config import McpSettings
from tests.fakes._base import FakeReply
from tests.faults.harness import (
    ONE_STEP,
    SIMPLE,
    Brain,
    Env,
    Result,
    brain,
    env,
    fake,
    read_store,
    soothe,
)

__all__ = ["brain", "env", "fake", "soothe"]  # fixtures used here

SERVER = str(Path(__file__).with_name("words_server.py"))


def servers(**extra: list[str]) -> McpSettings:
    return McpSettings.model_validate(
        {
            "servers": {
                n: {"command": sys.executable, "args": [SERVER, *a]} for n, a in extra.items()
            }
        }
    )


def test_schema_bounds_and_content_blocks() -> None:
    schema = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "maxLength": 5000},
            "tags": {
                "type": "array",
                "items": {"type": "string", "maxLength": 20},
                "maxItems": 2000,
            },
            "short": {"type": "string", "maxLength": 50},
        },
    }
    out, changes = sendable_schema(schema)
    assert out["properties"]["text"]["maxLength"] == 999
    assert out["properties"]["tags"]["maxItems"] == 999
    assert out["properties"]["short"]["maxLength"] == 50
    assert schema["properties"]["text"]["maxLength"] == 5000  # a copy
    assert len(changes) == 2 and ".text: maxLength 5000 -> 999" in changes
    blocks = [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert content_text(blocks) == "one\ntwo"
    assert content_text("plain") == "plain"


async def test_collisions_crash_and_death() -> None:
    manager = McpManager(servers(words=[], words2=[], broken=["--crash"]), reserved=set(TOOLS))
    try:
        names = {s["function"]["name"] for s in await manager.specs()}
        # count_words and die are in both servers: prefixed; read_file is one of ours.
        assert names == {
            "words_count_words",
            "words2_count_words",
            "words_die",
            "words2_die",
            "words_read_file",
            "words2_read_file",
        }
        state = {s.name: s for s in manager.status()}
        assert state["words"].state == state["words2"].state == "ready"
        broken = state["broken"]
        assert broken.state == "failed" and broken.tools == []
        assert "cannot open the dictionary /nonexistent/dict.txt" in broken.error
        assert await manager.call("words2_count_words", {"text": "a b c"}, {}) == "3 words"
        try:
            await manager.call("words_die", {}, {})
        except Exception as exc:
            assert "mcp server 'words' is not usable" in str(exc)
        else:
            raise AssertionError("a dead server's call succeeded")
        state = {s.name: s for s in manager.status()}
        assert (
            state["words"].state == "died" and "segfault in the dictionary" in state["words"].error
        )
        assert manager.get("words_count_words") is None  # gone with its server
        assert await manager.call("words2_count_words", {"text": "x"}, {}) == "1 words"
    finally:
        await manager.aclose()


def write_config(env: Env, text: str) -> None:
    path = env.home / "xdg-config" / "soothe" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_model_calls_an_mcp_tool_through_soothe_p(
    soothe: object, brain: Brain, env: Env
) -> None:
    """The fake Ollama model calls the FastMCP tool; the result is text (not content
    blocks), capped, recorded as evidence naming the server; a crashing server beside it
    is one line and the run goes on. MCP tools default to ask: the rule lets it run."""
    py = sys.executable
    write_config(
        env,
        f'[mcp.servers.words]\ncommand = "{py}"\nargs = ["{SERVER}"]\n'
        f'[mcp.servers.broken]\ncommand = "{py}"\nargs = ["{SERVER}", "--crash"]\n'
        '[tools.rules]\n"words.*" = "auto"\n"words.die" = "deny"\n',
    )
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "count_words", "args": {"text": "one two three"}}]),
        FakeReply(tool_calls=[{"name": "die", "args": {}}]),
        "The text has 3 words.",
    )
    r: Result = soothe("-p", "count the words", "--json")  # type: ignore[operator]
    assert r.code == 0, r.err
    events = r.json_lines()
    results = [e for e in events if e["type"] == "step.tool_result"]
    assert [(e["tool"], e["ok"]) for e in results] == [("count_words", True), ("die", False)]
    assert results[0]["output"] == "3 words"
    assert "a rule in [tools.rules] denies it" in results[1]["output"]
    errors = [e["message"] for e in events if e["type"] == "error" and e["kind"] == "mcp"]
    assert len(errors) == 1 and "mcp server 'broken' failed to start" in errors[0]
    assert "cannot open the dictionary" in errors[0]
    step_calls = [body for kind, body in brain.calls if kind == "step:S-01"]
    sent = {t["function"]["name"]: t for t in step_calls[0]["tools"]}
    assert {"count_words", "words_read_file", "die", "read_file"} <= set(sent)
    text = sent["count_words"]["function"]["parameters"]["properties"]["text"]
    assert text.get("maxLength", 0) < 1000  # the client may drop it; never >= 1,000
    stored = read_store(env.db_path)
    summaries = [e.summary for entries in stored.evidence.values() for e in entries]
    assert any(s.startswith("mcp:words count_words(") for s in summaries), summaries


def test_soothe_mcp_lists_servers(soothe: object, env: Env) -> None:
    write_config(
        env, f'[mcp.servers.broken]\ncommand = "{sys.executable}"\nargs = ["{SERVER}", "--crash"]\n'
    )
    r: Result = soothe("mcp")  # type: ignore[operator]
    assert r.code == 1
    first, error = r.out.splitlines()[:2]
    assert first == "broken  (stdio)  failed"
    assert error.startswith("  error: ") and "cannot open the dictionary" in error
