"""CoreAgent: carries out one action step as a checkpointed LangGraph graph (graph.py).

The model streams (tokens go out as StepToken events), its tool calls run one after the
other through ``run_tool_call`` (which publishes ToolCalled / ToolResult and asks for
approval where needed), and the results go back as ToolMessages, until the model answers
without tools or the step's tool budget is spent; then one last call without tools asks
for the answer. An identical call is not run twice and an echo is no answer (judge.py).
A model transport failure ends the step with ``ok=False``; cancellation propagates (the
hub closes the stream, run_shell kills its process group).

Each step runs under its own checkpoint thread, ``{thread}/{loop}/{step}/{attempt}``, in
the loop's checkpoint database, with ``durability="sync"``: a step killed between tool
calls continues from its checkpoint when it runs again (the same thread), and no tool
call that completed runs again. A finished attempt's thread is never reused: running the
step again (a retry) starts attempt n+1. Approvals are graph interrupts answered through
the InteractBroker, so a pending approval is asked again after a restart.

LangChain and LangGraph are imported inside the methods, so importing this module stays
light.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from soothe.engine.agent.approval import apply_always
from soothe.engine.agent.prompts import (
    STEP_SHARE,
    packed_step_prompt,
    step_parts,
    system_prompt,
)
from soothe.engine.agent.read_only import change_tools_asked, offered_tools
from soothe.engine.agent.tools import (
    ToolContext,
    ToolOutcome,
    tool_specs,
)
from soothe.engine.interact import ApprovalRequest, ApprovalResponse
from soothe.engine.llm.packer import MESSAGE_OVERHEAD, select_tools

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, BaseMessage

    from soothe.engine.agent.graph import StepRun
    from soothe.engine.agent.journal import Journal
    from soothe.engine.bus import EventBus
    from soothe.engine.config import Settings
    from soothe.engine.llm.hub import ModelHub
    from soothe.engine.scope import Scope

ELIDED_HEAD_CHARS = 200


class StepOutcome(BaseModel):
    ok: bool
    answer: str
    tool_outcomes: list[ToolOutcome] = Field(default_factory=list)
    model_calls: int = 0
    error: str | None = None
    error_kind: str | None = None
    """The ``ModelErrorKind`` when a model call ended the step."""
    raw: bool = False
    """The model gave no answer; ``answer`` is the raw tool output, marked so."""
    no_answer: str | None = None
    """Why the model's first answer was not one (empty, a tool call as text, an echo)."""


def pending_calls(message: AIMessage) -> list[dict[str, Any]]:
    """Valid and invalid tool calls alike, as ``{"name", "args", "id"}``.

    Invalid ones (bad JSON, unknown tool) still run through ``run_tool_call`` so the
    model gets a message saying what was wrong, and the screen sees the attempt.
    """
    calls: list[dict[str, Any]] = []
    for i, tc in enumerate(message.tool_calls):
        calls.append({"name": tc["name"], "args": tc["args"], "id": tc.get("id") or f"tc{i}"})
    for i, bad in enumerate(message.invalid_tool_calls):
        calls.append(
            {
                "name": bad.get("name") or "",
                "args": bad.get("args"),
                "id": bad.get("id") or f"itc{i}",
                "error": bad.get("error"),
            }
        )
    return calls


async def matching_mcp_specs(ctx: ToolContext, request: str) -> list[dict[str, Any]]:
    """The specs of the MCP tools ``request`` is about (``classify.mcp_match``), for a
    step that is otherwise offered only read-only tools."""
    if ctx.mcp is None or not ctx.mcp.configured:
        return []
    from soothe.engine.classify import mcp_match, mcp_offered

    ctx.mcp.ids = ctx.event_ids()
    tools = await ctx.mcp.tools()
    return [
        tool.spec()
        for tool, seen in zip(tools, mcp_offered(tools), strict=True)
        if mcp_match(request, [seen]) is not None
    ]


def compact_tool_history(messages: list[BaseMessage], limit: int) -> None:
    """Shorten the oldest tool results (in place) until all of them fit in ``limit``."""
    from langchain_core.messages import ToolMessage

    tool_msgs = [m for m in messages if isinstance(m, ToolMessage)]
    total = sum(len(str(m.content)) for m in tool_msgs)
    for msg in tool_msgs[:-1]:
        if total <= limit:
            return
        text = str(msg.content)
        if len(text) <= ELIDED_HEAD_CHARS * 2:
            continue
        short = (
            text[:ELIDED_HEAD_CHARS]
            + f"\n… [older output elided: {len(text)} chars; call the tool again if needed]"
        )
        total -= len(text) - len(short)
        msg.content = short


class CoreAgent:
    def __init__(
        self,
        hub: ModelHub,
        tool_ctx_factory: Callable[[dict[str, Any]], ToolContext],
        settings: Settings,
        bus: EventBus,
        *,
        checkpointer: Any = None,
        journal: Journal | None = None,
    ) -> None:
        self.hub = hub
        self.tool_ctx_factory = tool_ctx_factory
        self.settings = settings
        self.bus = bus
        self.checkpointer = checkpointer
        """The loop's AsyncSqliteSaver; None: an in-memory saver (tests, one process)."""
        self.journal = journal
        self._graph: Any = None
        self._runs: dict[str, StepRun] = {}

    def graph(self) -> Any:
        if self._graph is None:
            from soothe.engine.agent.graph import build_graph

            if self.checkpointer is None:
                from langgraph.checkpoint.memory import InMemorySaver

                self.checkpointer = InMemorySaver()
            self._graph = build_graph(
                self.checkpointer, lambda config: self._runs[config["configurable"]["thread_id"]]
            )
        return self._graph

    @staticmethod
    def step_thread(ids: dict[str, Any], step_id: str, attempt: int) -> str:
        parts = [ids.get("thread_id") or "-", ids.get("loop_id") or "direct", step_id]
        return "/".join(str(p) for p in parts) + f"/{attempt}"

    async def _attempt(self, ids: dict[str, Any], step_id: str) -> tuple[str, Any]:
        """The step's checkpoint thread to use: an unfinished one (resume) or a new one."""
        graph = self.graph()
        attempt = 1
        while True:
            thread = self.step_thread(ids, step_id, attempt)
            snapshot = await graph.aget_state({"configurable": {"thread_id": thread}})
            if not snapshot.values:  # never started
                return thread, None
            if snapshot.next or snapshot.interrupts:  # unfinished: continue it
                return thread, snapshot
            attempt += 1

    async def run_step(
        self,
        *,
        goal: str,
        step_id: str,
        description: str,
        expected_output: str,
        context_text: str,
        evidence_text: str,
        scope: Scope,
    ) -> StepOutcome:
        from langchain_core.messages import HumanMessage, SystemMessage

        from soothe.engine.agent.graph import InterruptBroker, StepRun
        from soothe.engine.agent.journal import CallKey

        ids: dict[str, Any] = dict(scope.at(step_id=scope.step_id or step_id).fields())
        ctx = self.tool_ctx_factory(ids)
        broker = ctx.broker
        if broker is not None:
            ctx.broker = InterruptBroker()  # type: ignore[assignment]
        small = self.settings.small_model
        ctx.offered = offered_tools(goal, small=small)
        if ctx.offered is None:
            specs = await ctx.specs()  # ours + MCP servers' (started on first need)
        else:  # small profile, read-only request: no writes, no shell, no MCP server...
            specs = [s for s in tool_specs() if s["function"]["name"] in ctx.offered]
            # ... but the MCP tools the request is about (routing sent it here for them)
            matched = await matching_mcp_specs(ctx, goal)
            ctx.offered = ctx.offered | {s["function"]["name"] for s in matched}
            specs += matched
        listed = ctx.offered
        est = self.hub.estimator
        room = self.hub.prompt_budget("step")
        about = f"{goal}\n{description}\n{expected_output}"
        fitting = select_tools(specs, about, room, est, change_tools_asked(about))
        if len(fitting) < len(specs):  # tight: only the tools this step may need
            specs = fitting
            names = frozenset(s["function"]["name"] for s in specs)
            listed = names if listed is None else listed & names
        budget = self.settings.loop.step_tool_budget
        thread, snapshot = await self._attempt(ids, step_id)
        key = CallKey(
            thread_id=ids.get("thread_id") or "",
            loop_id=ids.get("loop_id"),
            goal_id=ids.get("goal_id"),
            step_id=ids["step_id"],
        )
        self._runs[thread] = StepRun(
            self,
            ctx,
            ids=ids,
            step_id=step_id,
            description=description,
            expected_output=expected_output,
            specs=specs,
            journal_key=key,
        )
        config = {"configurable": {"thread_id": thread}, "recursion_limit": 4 * budget + 50}
        graph = self.graph()
        payload: Any
        if snapshot is None:
            system = system_prompt(ctx.workspace, budget, small=small, tools=listed)
            parts = step_parts(
                goal=goal,
                step_id=step_id,
                description=description,
                expected_output=expected_output,
                context_text=context_text,
                evidence_text=evidence_text,
            )
            # The step prompt gets a share of what the first call may send; the rest is
            # for its tool calls and results (the hub fits each call whole: packer).
            left = room - est.tools(specs) - est.text(system) - 2 * MESSAGE_OVERHEAD
            chars = est.chars(int(max(left, 0) * STEP_SHARE))
            payload = {
                "messages": [
                    SystemMessage(content=system),
                    HumanMessage(content=packed_step_prompt(parts, chars)),
                ],
            }
        else:
            payload = await self._answer(snapshot, broker, ctx)
        try:
            while True:
                # "sync": each tool result is on disk before the next model call.
                values = await graph.ainvoke(payload, config, durability="sync")
                if "__interrupt__" not in values:  # the state as it ended: no re-read
                    break
                snapshot = await graph.aget_state(config)
                payload = await self._answer(snapshot, broker, ctx)
        finally:
            self._runs.pop(thread, None)
        return self._outcome(values)

    async def _answer(self, snapshot: Any, broker: Any, ctx: ToolContext) -> Any:
        """The resume value of a pending interrupt (an approval): asked through the
        real broker, so the TUI shows its dialog (again, after a restart)."""
        from langgraph.types import Command

        if not snapshot.interrupts:
            return None  # continue from the checkpoint
        value = snapshot.interrupts[0].value
        request = ApprovalRequest.model_validate(value["request"])
        if broker is None:
            response = ApprovalResponse(outcome="cancelled")
        else:
            response = await broker.ask(request, timeout=value.get("timeout"))
            apply_always(broker, ctx.always_approved, request, response)
        return Command(resume=response.model_dump(mode="json"))

    @staticmethod
    def _outcome(values: dict[str, Any]) -> StepOutcome:
        result = dict(values.get("result") or {})
        outcomes = [ToolOutcome.model_validate(o) for o in values.get("outcomes", [])]
        if not result:
            result = {"ok": False, "answer": "", "error": "the step ended without a result"}
        return StepOutcome(
            tool_outcomes=outcomes, model_calls=values.get("model_calls", 0), **result
        )
