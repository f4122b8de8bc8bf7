"""The approval gate for tools that change things (write_file, edit_file, run_shell).

Policy ``auto`` lets them run, ``deny`` refuses them, ``ask`` asks through the
InteractBroker unless the user already chose "approve always" for that tool in this
session. A refusal is an ``ApprovalRefused`` carrying the message the model sees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from soothe.engine.agent.capping import preview
from soothe.engine.agent.workspace import ToolError
from soothe.engine.interact import ApprovalRequest, ApprovalResponse

if TYPE_CHECKING:
    from soothe.engine.agent.tools import ToolContext


class ApprovalRefused(ToolError):
    pass


async def require_approval(ctx: ToolContext, tool: str, args: dict[str, Any], path: str) -> None:
    """Return when ``tool`` may run; raise ApprovalRefused otherwise."""
    if ctx.approval == "auto" or tool in ctx.always_approved:
        return
    if ctx.approval == "deny":
        raise ApprovalRefused(
            f"{tool} was not run: the tool approval policy is 'deny', so files cannot be "
            "changed and commands cannot be run. Work with the read-only tools, or say in "
            "your answer what you would have done."
        )
    if ctx.broker is None:
        raise ApprovalRefused(f"{tool} was not run: it needs approval and nobody can be asked")
    request = ApprovalRequest(
        tool=tool,
        args=preview(args),
        path=path,
        **{k: ctx.ids.get(k) for k in ("loop_id", "goal_id", "step_id")},
        thread_id=ctx.ids.get("thread_id") or "",
    )
    response: ApprovalResponse = await ctx.broker.ask(request, timeout=ctx.approval_timeout)
    if response.outcome == "approve_always":
        ctx.always_approved.add(tool)
        return
    if response.outcome == "approve_once":
        return
    if response.outcome == "deny":
        reason = f" ({response.reason})" if response.reason else ""
        raise ApprovalRefused(
            f"the user denied {tool}{reason}; it was not run. Do not repeat the same call."
        )
    if response.outcome == "timeout":
        raise ApprovalRefused(f"{tool} was not run: nobody answered the approval request in time")
    raise ApprovalRefused(f"{tool} was not run: the approval request was cancelled")
