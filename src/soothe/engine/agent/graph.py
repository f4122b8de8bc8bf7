"""The step graph: CoreAgent's tool loop as a checkpointed LangGraph StateGraph.

Nodes: ``model`` (one streamed model call; tokens go out on the bus as they arrive),
``tools`` (OUR tools node: exactly one pending tool call per super-step, so with
``durability="sync"`` every completed tool result is on disk before the next call or
model request; invalid calls are answered, not skipped as LangGraph's ToolNode does) and
``conclude`` (the no-answer rule: one compact re-ask, else the raw tool output).

Approvals are LangGraph interrupts: the tools node's broker is ``InterruptBroker``, whose
``ask`` calls ``interrupt()``; the driver (``CoreAgent.run_step``) answers the interrupt
through the real InteractBroker and resumes with ``Command(resume=...)``. The interrupt is
in the checkpoint, so an approval pending when the process died is asked again when the
step resumes. The node that interrupted runs again from its top on resume: that is the
one tool call that asked, whose only earlier effect is its ToolCalled event.

State holds plain data (LangChain messages, dicts, ints): nothing that needs a registered
type to come back from the checkpoint. This module imports LangGraph; import it lazily.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from soothe.engine.agent import journal as journal_mod
from soothe.engine.agent.judge import (
    MAX_REPEATS,
    REPEAT_NOTE,
    REPEATS_SPENT,
    call_key,
    facts_prompt,
    last_outputs,
    no_answer_reason,
    raw_result,
)
from soothe.engine.agent.prompts import BUDGET_SPENT
from soothe.engine.agent.tools import ToolOutcome, run_tool_call
from soothe.engine.events import StepThinking, StepToken, ToolCalled, ToolResult
from soothe.engine.interact import ApprovalRequest, ApprovalResponse
from soothe.engine.llm.errors import LLMError

if TYPE_CHECKING:
    from soothe.engine.agent.core import CoreAgent
    from soothe.engine.agent.tools import ToolContext


def _extend(state: list[Any], writes: Sequence[list[Any]]) -> list[Any]:
    """Append-only: each node writes only its new items."""
    return [*state, *(item for batch in writes for item in batch)]


def _appended() -> Any:
    """The channel of an append-only list. A DeltaChannel stores each node's new items
    only (in the checkpoint's writes), with a whole snapshot every 100 updates, where a
    plain reducer would store the whole list again in every checkpoint (quadratic in the
    step's length). ``SOOTHE_STEP_STATE=plain`` gives the plain reducer (the bench)."""
    if os.environ.get("SOOTHE_STEP_STATE") == "plain":
        import operator

        return operator.add
    return DeltaChannel(_extend)


class StepState(TypedDict, total=False):
    messages: Annotated[list[BaseMessage], _appended()]
    """Append-only: a node returns only the messages it adds."""
    pending: list[dict[str, Any]]
    outcomes: Annotated[list[dict[str, Any]], _appended()]
    """Append-only: the tools node returns only the call it ran."""
    seen: dict[str, int]
    repeats: int
    used: int
    model_calls: int
    answer: str
    final: bool
    result: dict[str, Any]


class InterruptBroker:
    """What the tools see as the broker inside the graph: asking is an interrupt."""

    async def ask(self, request: ApprovalRequest, timeout: float | None = None) -> Any:
        value = interrupt(
            {"kind": "approval", "request": request.model_dump(mode="json"), "timeout": timeout}
        )
        return ApprovalResponse.model_validate(value)


class StepRun:
    """What the nodes of one step need that is not state: the agent, the tool context,
    the step's text and its instructions (for the echo check)."""

    def __init__(
        self,
        agent: CoreAgent,
        ctx: ToolContext,
        *,
        ids: dict[str, Any],
        step_id: str,
        description: str,
        expected_output: str,
        specs: list[dict[str, Any]],
        journal_key: journal_mod.CallKey | None,
    ) -> None:
        self.agent = agent
        self.ctx = ctx
        self.ids = ids
        self.fields = ctx.event_ids()
        self.step_id = step_id
        self.description = description
        self.expected_output = expected_output
        self.specs = specs
        self.budget = agent.settings.loop.step_tool_budget
        self.history_limit = max(8000, 4 * ctx.max_output_chars)
        self.journal_key = journal_key

    def instructions(self, state: StepState) -> list[str]:
        system = str(state["messages"][0].content)
        return [system, BUDGET_SPENT.format(budget=self.budget), REPEATS_SPENT, REPEAT_NOTE]

    async def ask(self, messages: list[BaseMessage], tools: list[Any] | None) -> Any:
        def on_token(text: str) -> None:
            self.agent.bus.publish(StepToken(text=text, **self.fields))

        def on_thinking(text: str) -> None:
            self.agent.bus.publish(StepThinking(text=text, **self.fields))

        # run_tool_call normalises the arguments (after its alias renaming).
        return await self.agent.hub.stream_text(
            messages,
            tools=tools,
            on_token=on_token,
            ids=self.ids,
            coerce=False,
            on_thinking=on_thinking,
        )

    def failure(self, state: StepState, exc: LLMError, calls: int) -> StepState:
        return {
            "model_calls": calls,
            "result": {
                "ok": False,
                "answer": "",
                "error": str(exc),
                "error_kind": exc.kind.value,
            },
        }


def build_graph(checkpointer: Any, run_of: Any) -> Any:
    """The compiled step graph; ``run_of(config)`` gives the StepRun of a config."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from soothe.engine.agent.core import compact_tool_history, pending_calls

    async def model(state: StepState, config: RunnableConfig) -> StepState:
        run: StepRun = run_of(config)
        # What is sent: the history with the oldest tool results shortened (on copies:
        # the state keeps every result whole); the state gets only the new messages.
        messages = [m.model_copy() if isinstance(m, ToolMessage) else m for m in state["messages"]]
        added: list[BaseMessage] = []
        used, repeats = state.get("used", 0), state.get("repeats", 0)
        final = used >= run.budget or repeats >= MAX_REPEATS
        if final:
            closing = (
                REPEATS_SPENT if repeats >= MAX_REPEATS else BUDGET_SPENT.format(budget=run.budget)
            )
            added.append(HumanMessage(content=closing))
            messages.append(added[-1])
        compact_tool_history(messages, run.history_limit)
        calls = state.get("model_calls", 0) + 1
        try:
            reply = await run.ask(messages, None if final else run.specs)
        except LLMError as exc:
            return run.failure(state, exc, calls)
        pending = pending_calls(reply)
        if final or not pending:
            return {
                "messages": added,
                "model_calls": calls,
                "answer": reply.text.strip(),
                "final": final,
            }
        ai = AIMessage(
            content=reply.content,
            tool_calls=[
                {
                    "name": c["name"],
                    "args": c["args"] if isinstance(c["args"], dict) else {},
                    "id": c["id"],
                }
                for c in pending
            ],
        )
        return {"messages": [*added, ai], "model_calls": calls, "pending": pending}

    async def tools(state: StepState, config: RunnableConfig) -> StepState:
        run: StepRun = run_of(config)
        call, rest = state["pending"][0], state["pending"][1:]
        outcomes = state.get("outcomes", [])
        ran: list[dict[str, Any]] = []
        seen = dict(state.get("seen", {}))
        used, repeats = state.get("used", 0), state.get("repeats", 0)
        key = call_key(call)
        if key is not None and key in seen:
            earlier = ToolOutcome.model_validate(outcomes[seen[key]])
            message = _repeat(run, call, earlier)
            repeats += 1
        elif used >= run.budget:
            message = ToolMessage(
                content="not run: the step's tool budget is spent",
                tool_call_id=call["id"],
                name=call["name"],
                status="error",
            )
        else:
            outcome = await _run_once(run, call)
            used += 1
            ran.append(outcome.model_dump())
            if key is not None:
                seen.setdefault(key, len(outcomes))
            message = ToolMessage(
                content=outcome.output,
                tool_call_id=outcome.call_id,
                name=outcome.tool,
                status="success" if outcome.ok else "error",
            )
        return {
            "messages": [message],
            "pending": rest,
            "outcomes": ran,
            "seen": seen,
            "used": used,
            "repeats": repeats,
        }

    async def conclude(state: StepState, config: RunnableConfig) -> StepState:
        run: StepRun = run_of(config)
        answer = state.get("answer", "")
        calls = state.get("model_calls", 0)
        instructions = run.instructions(state)
        reason = no_answer_reason(answer, instructions)
        if reason is None:
            return {"result": {"ok": True, "answer": answer}}
        outcomes = [ToolOutcome.model_validate(o) for o in state.get("outcomes", [])]
        facts = last_outputs(outcomes)
        prompt = facts_prompt(run.step_id, run.description, run.expected_output, facts)
        instructions.append(prompt)
        calls += 1
        try:
            retry = await run.ask([HumanMessage(content=prompt)], None)
        except LLMError as exc:
            return run.failure(state, exc, calls)
        answer = retry.text.strip()
        if no_answer_reason(answer, instructions) is None:
            result = {"ok": True, "answer": answer, "no_answer": reason}
        elif facts:
            result = {"ok": True, "answer": raw_result(facts), "raw": True, "no_answer": reason}
        else:
            error = (
                "the model gave no answer after spending the step's tool budget"
                if state.get("used", 0) >= run.budget
                else "the model returned an empty answer"
                if reason == "empty answer"
                else f"the model gave no answer ({reason})"
            )
            result = {"ok": False, "answer": "", "error": error, "no_answer": reason}
        return {"model_calls": calls, "result": result}

    def after_model(state: StepState) -> str:
        if state.get("result"):
            return END
        return "conclude" if "answer" in state else "tools"

    def after_tools(state: StepState) -> str:
        return "tools" if state.get("pending") else "model"

    graph = StateGraph(StepState)
    graph.add_node("model", model)
    graph.add_node("tools", tools)
    graph.add_node("conclude", conclude)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", after_model, ["tools", "conclude", END])
    graph.add_conditional_edges("tools", after_tools, ["tools", "model"])
    graph.add_edge("conclude", END)
    return graph.compile(checkpointer=checkpointer)


async def _run_once(run: StepRun, call: dict[str, Any]) -> ToolOutcome:
    """Run a call, unless the journal says an earlier process already started it."""
    key = run.journal_key
    journal = run.agent.journal
    if key is None or journal is None:
        return await run_tool_call(run.ctx, call)
    ck = key.at(call_id=str(call.get("id") or ""))
    known = journal.call_state(ck)
    if known is not None:
        return _recovered(run, call, known)
    token = journal_mod.CURRENT.set((journal, ck))
    try:
        outcome = await run_tool_call(run.ctx, call)
    finally:
        journal_mod.CURRENT.reset(token)
    journal.record_output(ck, outcome.output, outcome.ok)  # what a resume would reuse
    return outcome


def _recovered(run: StepRun, call: dict[str, Any], entry: journal_mod.Entry) -> ToolOutcome:
    """A call the journal saw start before a crash: reported, never run again."""
    if entry.state == "started":
        what = f"{entry.tool} of {entry.path}" if entry.path else f"{entry.tool}"
        output = (
            f"not run again: {what} was interrupted by a crash while it ran; the journal "
            "says it started but did not finish, so its effect is unknown. Check it "
            "before relying on it (`soothe undo --list` shows it)."
        )
        ok = False
    else:
        output = entry.output or f"{entry.tool} finished before the crash"
        ok = entry.state == "finished"
    name = str(call.get("name") or entry.tool)
    call_id = str(call.get("id") or "")
    args = call.get("args") if isinstance(call.get("args"), dict) else {}
    bus = run.agent.bus
    bus.publish(ToolCalled(call_id=call_id, tool=name, args=args or {}, **run.fields))
    bus.publish(ToolResult(call_id=call_id, tool=name, output=output, ok=ok, **run.fields))
    return ToolOutcome(call_id=call_id, tool=name, args=args or {}, ok=ok, output=output)


def _repeat(run: StepRun, call: dict[str, Any], earlier: ToolOutcome) -> Any:
    """The answer to a repeated call: the earlier result and a note; not run again."""
    from langchain_core.messages import ToolMessage

    bus = run.agent.bus
    bus.publish(ToolCalled(call_id=call["id"], tool=earlier.tool, args=earlier.args, **run.fields))
    bus.publish(
        ToolResult(
            call_id=call["id"],
            tool=earlier.tool,
            output="not run again: the same call was made earlier in this step",
            ok=False,
            **run.fields,
        )
    )
    return ToolMessage(
        content=earlier.output + REPEAT_NOTE,
        tool_call_id=call["id"],
        name=earlier.tool,
        status="success" if earlier.ok else "error",
    )
