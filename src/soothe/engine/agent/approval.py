"""The approval gate for tools that change things (write_file, edit_file, run_shell, and
every MCP tool), and the per-tool rules.

Rules (``[tools.rules]``) map a tool to ``ask``, ``auto`` or ``deny``::

    write_file = "auto"           # one of our tools, or an MCP tool by the name the model sees
    "words.*" = "ask"             # every tool of MCP server 'words'
    "words.count" = "auto"        # one tool of a server, by its own name
    [tools.rules.run_shell]       # run_shell by program (the command's first word)
    pytest = "auto"
    rm = "deny"

The most specific rule wins (program, tool, ``server.tool``, ``server.*``); with no rule
the tool is ``ask``, and ``ask`` is then answered by the policy ``tools.approval``: ``auto``
(``--yes``) lets it run, ``deny`` refuses it, ``ask`` asks through the InteractBroker
unless the user already chose "approve always" for the same rule key in this session
(``rule_key``: the tool, or ``run_shell:PROGRAM``) - "always" records a rule of the same
kind as the config's. When run_shell has no sandbox (``sandbox.detect()`` is ``none``),
``auto`` does not cover commands: a person approves each one. A refusal is an
``ApprovalRefused`` carrying the message the model sees.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from soothe.engine.agent.workspace import ToolError
from soothe.engine.interact import ApprovalRequest, ApprovalResponse
from soothe.engine.scope import Scope

if TYPE_CHECKING:
    from soothe.engine.agent.tools import ToolContext
    from soothe.engine.interact import InteractBroker

Decision = Literal["ask", "auto", "deny"]
_SHELL_WRAPPERS = frozenset({"sudo", "env", "nice", "nohup", "time", "command", "exec"})


class ApprovalRefused(ToolError):
    pass


def shell_program(command: str) -> str:
    """The program a command runs: its first word after ``VAR=value`` assignments, as a
    basename (``/usr/bin/pytest -q`` -> ``pytest``). A compound command (``a && b``, a
    pipe, ``;``) or one that cannot be parsed has no single program: ``""``, which no
    program rule matches."""
    if any(op in command for op in ("&&", "||", ";", "|", "`", "$(", "\n", "&", ">", "<")):
        return ""
    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    for word in words:
        if "=" in word and not word.startswith("=") and word.split("=", 1)[0].isidentifier():
            continue
        name = os.path.basename(word)
        return "" if name in _SHELL_WRAPPERS else name
    return ""


def rule_key(tool: str, args: Mapping[str, Any]) -> str:
    """What an "approve always" remembers: the tool, or run_shell and its program."""
    if tool == "run_shell":
        program = shell_program(str(args.get("command", "")))
        # A compound command has no one program: "always" then covers that exact command.
        return f"run_shell:{program}" if program else f"run_shell:={args.get('command', '')}"
    return tool


def rule_for(
    rules: Mapping[str, Any],
    tool: str,
    args: Mapping[str, Any],
    *,
    server: str | None = None,
    original: str | None = None,
) -> Decision | None:
    """The configured rule for this call, most specific first; None when none applies."""
    if tool == "run_shell":
        by_program = rules.get("run_shell")
        program = shell_program(str(args.get("command", "")))
        if isinstance(by_program, Mapping):
            if program and program in by_program:
                return by_program[program]
            if "*" in by_program:
                return by_program["*"]
            return None
    value = rules.get(tool)
    if isinstance(value, str):
        return value  # type: ignore[return-value]
    if server is not None:
        for key in (f"{server}.{original or tool}", f"{server}.*"):
            value = rules.get(key)
            if isinstance(value, str):
                return value  # type: ignore[return-value]
    return None


def decide(
    ctx: ToolContext,
    tool: str,
    args: Mapping[str, Any],
    server: str | None = None,
    original: str | None = None,
) -> tuple[Decision, str]:
    """(decision, why) for a call that may need approval, before anyone is asked."""
    rule = rule_for(ctx.rules, tool, args, server=server, original=original)
    why = "a rule in [tools.rules]" if rule else "the tool approval policy"
    decision: Decision = rule or ("ask" if ctx.approval == "ask" else ctx.approval)
    if decision == "auto" and tool == "run_shell" and not ctx.shell_confined:
        return "ask", "no sandbox"
    return decision, why


def apply_always(
    broker: InteractBroker,
    always: set[str],
    asked: ApprovalRequest,
    response: ApprovalResponse,
) -> int:
    """An "always" is the session's rule from the moment it is given (``always``, the
    set ``require_approval`` reads), not once the step's tool node runs again; and it
    answers the open requests it covers: parallel steps ask at once, and the second
    dialog, for the same rule, would ask what the user just answered. How many open
    requests it answered."""
    if response.outcome != "approve_always":
        return 0
    key = rule_key(asked.tool, asked.args)
    always.add(key)
    return broker.answer_open(
        lambda open_: (
            isinstance(open_, ApprovalRequest) and rule_key(open_.tool, open_.args) == key
        ),
        response,
    )


async def require_approval(
    ctx: ToolContext,
    tool: str,
    args: dict[str, Any],
    path: str,
    *,
    server: str | None = None,
    original: str | None = None,
) -> None:
    """Return when ``tool`` may run; raise ApprovalRefused otherwise."""
    decision, why = decide(ctx, tool, args, server, original)
    if decision == "auto":
        return
    if decision == "deny":
        if why.startswith("a rule"):
            raise ApprovalRefused(
                f"{tool} was not run: {why} denies it. Do not call it again; work with the "
                "other tools, or say in your answer what you would have done."
            )
        raise ApprovalRefused(
            f"{tool} was not run: the tool approval policy is 'deny', so files cannot be "
            "changed and commands cannot be run. Work with the read-only tools, or say in "
            "your answer what you would have done."
        )
    key = rule_key(tool, args)
    if key in ctx.always_approved:
        return
    unconfined = why == "no sandbox"
    note = (
        " (no sandbox is available for commands here, so each one needs a person's approval)"
        if unconfined
        else ""
    )
    if ctx.broker is None:
        raise ApprovalRefused(
            f"{tool} was not run: it needs approval and nobody can be asked{note}"
        )
    scope = Scope(
        ctx.ids.get("thread_id") or "",
        *(ctx.ids.get(k) for k in ("loop_id", "goal_id", "step_id")),
    )
    # the whole arguments (the dialog diffs them against the file); the event shortens them
    request = ApprovalRequest.within(scope, tool=tool, args=dict(args), path=path)
    response: ApprovalResponse = await ctx.broker.ask(request, timeout=ctx.approval_timeout)
    if response.outcome == "approve_always":
        ctx.always_approved.add(key)
        return
    if response.outcome == "approve_once":
        return
    if response.outcome == "deny":
        reason = f" ({response.reason})" if response.reason else ""
        raise ApprovalRefused(
            f"the user denied {tool}{reason}{note}; it was not run. Do not repeat the same call."
        )
    if response.outcome == "timeout":
        raise ApprovalRefused(f"{tool} was not run: nobody answered the approval request in time")
    raise ApprovalRefused(f"{tool} was not run: the approval request was cancelled")
