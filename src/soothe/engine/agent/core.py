"""CoreAgent: the tool-calling loop that carries out one action step.

The model streams (tokens go out as StepToken events), its tool calls run one after the
other through ``run_tool_call`` (which publishes ToolCalled / ToolResult and asks for
approval where needed), and the results go back as ToolMessages, until the model answers
without tools or the step's tool budget is spent; then one last call without tools asks
for the answer. A model transport failure ends the step with ``ok=False``; cancellation
propagates (the hub closes the stream, run_shell kills its process group).

LangChain is imported inside the methods, so importing this module stays light.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from soothe.engine.agent.judge import (
    REPEAT_NOTE,
    REPEATS_SPENT,
    RepeatGuard,
    facts_prompt,
    last_outputs,
    no_answer_reason,
    raw_result,
)
from soothe.engine.agent.prompts import BUDGET_SPENT, step_prompt, system_prompt
from soothe.engine.agent.tools import (
    ToolContext,
    ToolOutcome,
    event_ids,
    run_tool_call,
)
from soothe.engine.events import StepToken, ToolCalled, ToolResult
from soothe.engine.llm.errors import LLMError

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, BaseMessage

    from soothe.engine.bus import EventBus
    from soothe.engine.config import Settings
    from soothe.engine.llm.hub import ModelHub

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
    ) -> None:
        self.hub = hub
        self.tool_ctx_factory = tool_ctx_factory
        self.settings = settings
        self.bus = bus

    async def run_step(
        self,
        *,
        goal: str,
        step_id: str,
        description: str,
        expected_output: str,
        context_text: str,
        evidence_text: str,
        ids: dict[str, Any],
    ) -> StepOutcome:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

        ids = {**ids, "step_id": ids.get("step_id") or step_id}
        ctx = self.tool_ctx_factory(ids)
        fields = event_ids(ids)
        budget = self.settings.loop.step_tool_budget
        history_limit = max(8000, 4 * ctx.max_output_chars)
        messages: list[BaseMessage] = [
            SystemMessage(content=system_prompt(ctx.workspace, budget)),
            HumanMessage(
                content=step_prompt(
                    goal=goal,
                    step_id=step_id,
                    description=description,
                    expected_output=expected_output,
                    context_text=context_text,
                    evidence_text=evidence_text,
                )
            ),
        ]
        specs = await ctx.specs()  # ours + MCP servers' (started on first need)
        outcomes: list[ToolOutcome] = []
        guard = RepeatGuard()
        model_calls = 0
        used = 0
        system = str(messages[0].content)

        def on_token(text: str) -> None:
            self.bus.publish(StepToken(text=text, **fields))

        async def ask(msgs: list[BaseMessage], tools: list[Any] | None) -> AIMessage:
            nonlocal model_calls
            model_calls += 1
            # run_tool_call normalises the arguments (after its alias renaming).
            return await self.hub.stream_text(
                msgs, tools=tools, on_token=on_token, ids=ids, coerce=False
            )

        def failed(exc: LLMError) -> StepOutcome:
            return StepOutcome(
                ok=False,
                answer="",
                tool_outcomes=outcomes,
                model_calls=model_calls,
                error=str(exc),
                error_kind=exc.kind.value,
            )

        while True:
            final = used >= budget or guard.spent
            if final:
                closing = REPEATS_SPENT if guard.spent else BUDGET_SPENT.format(budget=budget)
                messages.append(HumanMessage(content=closing))
            compact_tool_history(messages, history_limit)
            try:
                reply = await ask(messages, None if final else specs)
            except LLMError as exc:
                return failed(exc)
            calls = pending_calls(reply)
            if final or not calls:
                break
            messages.append(
                AIMessage(
                    content=reply.content,
                    tool_calls=[
                        {
                            "name": c["name"],
                            "args": c["args"] if isinstance(c["args"], dict) else {},
                            "id": c["id"],
                        }
                        for c in calls
                    ],
                )
            )
            for call in calls:
                earlier = guard.earlier(call)
                if earlier is not None:
                    messages.append(self._repeat(call, earlier, fields))
                    continue
                if used >= budget:
                    messages.append(
                        ToolMessage(
                            content="not run: the step's tool budget is spent",
                            tool_call_id=call["id"],
                            name=call["name"],
                            status="error",
                        )
                    )
                    continue
                outcome = await run_tool_call(ctx, call)
                guard.remember(call, outcome)
                used += 1
                outcomes.append(outcome)
                messages.append(
                    ToolMessage(
                        content=outcome.output,
                        tool_call_id=outcome.call_id,
                        name=outcome.tool,
                        status="success" if outcome.ok else "error",
                    )
                )

        answer = reply.text.strip()
        instructions = [system, BUDGET_SPENT.format(budget=budget), REPEATS_SPENT, REPEAT_NOTE]
        reason = no_answer_reason(answer, instructions)
        if reason is None:
            return StepOutcome(
                ok=True, answer=answer, tool_outcomes=outcomes, model_calls=model_calls
            )
        # Once more, compactly: the facts found so far and the question, no tools.
        facts = last_outputs(outcomes)
        prompt = facts_prompt(step_id, description, expected_output, facts)
        instructions.append(prompt)
        try:
            retry = await ask([HumanMessage(content=prompt)], None)
        except LLMError as exc:
            return failed(exc)
        answer = retry.text.strip()
        if no_answer_reason(answer, instructions) is None:
            return StepOutcome(
                ok=True,
                answer=answer,
                tool_outcomes=outcomes,
                model_calls=model_calls,
                no_answer=reason,
            )
        if facts:
            return StepOutcome(
                ok=True,
                answer=raw_result(facts),
                tool_outcomes=outcomes,
                model_calls=model_calls,
                raw=True,
                no_answer=reason,
            )
        error = (
            "the model gave no answer after spending the step's tool budget"
            if used >= budget
            else "the model returned an empty answer"
            if reason == "empty answer"
            else f"the model gave no answer ({reason})"
        )
        return StepOutcome(
            ok=False,
            answer="",
            tool_outcomes=outcomes,
            model_calls=model_calls,
            error=error,
            no_answer=reason,
        )

    def _repeat(
        self, call: dict[str, Any], earlier: ToolOutcome, fields: dict[str, Any]
    ) -> BaseMessage:
        """The answer to a repeated call: the earlier result and a note; not run again."""
        from langchain_core.messages import ToolMessage

        self.bus.publish(
            ToolCalled(call_id=call["id"], tool=earlier.tool, args=earlier.args, **fields)
        )
        self.bus.publish(
            ToolResult(
                call_id=call["id"],
                tool=earlier.tool,
                output="not run again: the same call was made earlier in this step",
                ok=False,
                **fields,
            )
        )
        return ToolMessage(
            content=earlier.output + REPEAT_NOTE,
            tool_call_id=call["id"],
            name=earlier.tool,
            status="success" if earlier.ok else "error",
        )
