"""``rule_for`` precedence ([tools.rules]): run_shell by program, then the tool's name as
the model sees it, then SERVER.TOOL (the server's own tool name), then SERVER.*, else no
rule (the approval policy decides: ``decide``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from soothe.engine.agent.approval import decide, rule_for
from soothe.engine.agent.sandbox import Confinement
from soothe.engine.agent.tools import ToolContext

RULES: dict[str, Any] = {
    "write_file": "deny",
    "words_read_file": "auto",  # the unique name of the words server's read_file
    "words.count_words": "deny",
    "words.*": "auto",
    "other.*": "deny",
    "run_shell": {"pytest": "auto", "rm": "deny", "*": "ask"},
}


@pytest.mark.parametrize(
    ("tool", "args", "server", "original", "expected"),
    [
        # built-in tools: by name, or no rule
        ("write_file", {"path": "a"}, None, None, "deny"),
        ("edit_file", {"path": "a"}, None, None, None),
        # the name the model sees beats SERVER.TOOL and SERVER.*
        ("words_read_file", {}, "words", "read_file", "auto"),
        # SERVER.TOOL (the server's own name) beats SERVER.*
        ("count_words", {}, "words", "count_words", "deny"),
        ("words_count_words", {}, "words", "count_words", "deny"),
        ("shout", {}, "words", "shout", "auto"),
        ("shout", {}, "other", "shout", "deny"),
        # a server with no rule: none (MCP tools then default to ask, see decide)
        ("shout", {}, "third", "shout", None),
        # SERVER.* applies only to that server's tools, never to a built-in of that name
        ("grep", {}, None, None, None),
        # run_shell by program; '*' for any other program; a compound command has none
        ("run_shell", {"command": "pytest -q tests"}, None, None, "auto"),
        ("run_shell", {"command": "/usr/bin/pytest -x"}, None, None, "auto"),
        ("run_shell", {"command": "FOO=1 rm -rf build"}, None, None, "deny"),
        ("run_shell", {"command": "ls -la"}, None, None, "ask"),
        ("run_shell", {"command": "pytest && rm -rf /"}, None, None, "ask"),
    ],
)
def test_rule_for_precedence(
    tool: str, args: dict[str, Any], server: str | None, original: str | None, expected: str
) -> None:
    assert rule_for(RULES, tool, args, server=server, original=original) == expected


def test_a_run_shell_table_without_star_leaves_other_programs_to_the_policy() -> None:
    rules = {"run_shell": {"pytest": "auto"}}
    assert rule_for(rules, "run_shell", {"command": "make"}) is None
    assert rule_for(rules, "run_shell", {"command": "pytest"}) == "auto"


def _ctx(tmp_path: Path, approval: str, rules: dict[str, Any], confined: bool) -> ToolContext:
    return ToolContext(
        workspace=tmp_path,
        broker=None,
        approval=approval,  # type: ignore[arg-type]
        max_output_chars=1000,
        max_read_bytes=1000,
        rules=rules,
        confinement=Confinement(kind="bwrap" if confined else "none", detail="test"),
    )


def test_decide_falls_back_to_the_policy_and_keeps_an_unconfined_shell_asking(
    tmp_path: Path,
) -> None:
    ctx = _ctx(tmp_path, "auto", RULES, confined=True)
    assert decide(ctx, "write_file", {"path": "a"}) == ("deny", "a rule in [tools.rules]")
    assert decide(ctx, "edit_file", {"path": "a"}) == ("auto", "the tool approval policy")
    assert decide(ctx, "run_shell", {"command": "pytest"})[0] == "auto"
    unconfined = _ctx(tmp_path, "auto", RULES, confined=False)
    # No sandbox: an approved-by-rule command is still asked (issue 15 item 3).
    assert decide(unconfined, "run_shell", {"command": "pytest"}) == ("ask", "no sandbox")


def test_an_mcp_tool_without_a_rule_gets_the_policy(tmp_path: Path) -> None:
    asking = _ctx(tmp_path, "ask", RULES, confined=True)
    assert decide(asking, "shout", {}, "third", "shout") == ("ask", "the tool approval policy")
    assert decide(asking, "shout", {}, "words", "shout") == ("auto", "a rule in [tools.rules]")
