"""Engine events as ACP session updates: one translator for a live turn and for a
session loaded from the store (its transcript replayed), so both show the same.

- the answer (a goal's completion, streamed with no step) -> agent message chunks; the
  final answer closes it (only what was not streamed yet is sent);
- a model's thinking -> agent thought chunks as it comes; a step's own text -> one
  thought chunk per step and stretch (``[S-01] ...``), sent before that step's next
  event: parallel steps stream at once, and their words must not interleave;
- a tool call -> ``tool_call`` (kind, title, locations, a diff for a file change), then
  ``tool_call_update`` with its status and output;
- a plan and every step change -> ``plan``: the goal's step DAG as it stands (read from
  the ContextEngine, the one source of truth), entry by entry;
- a replayed request, or a clarification answered -> user message chunks.

Every text forwarded is made plain (``sanitize``); arguments shown for a decision are
shown visibly (``tool_calls.shown``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from soothe.engine import events as ev
from soothe.engine.sanitize import one_line, plain
from soothe.frontends.acp import tool_calls

if TYPE_CHECKING:
    from acp.schema import FileEditToolCallContent, PlanEntry

    from soothe.engine.context.models import StepNode

StepsOf = Callable[[str], "Sequence[StepNode] | None"]
CallKey = tuple[str | None, str | None, str]

PLAN_EVENTS = (
    ev.PlanCreated,
    ev.StepStarted,
    ev.StepCompleted,
    ev.StepFailed,
    ev.StepSkipped,
    ev.StepSuspended,
)


def plan_entries(steps: Sequence[StepNode]) -> list[PlanEntry]:
    """A step DAG as plan entries, in plan order: ``S-01 list the files``; a step that
    failed or was skipped is finished for the plan, and says so."""
    from acp.schema import PlanEntry

    status: dict[str, Literal["pending", "in_progress", "completed"]] = {
        "pending": "pending",
        "active": "in_progress",
    }
    out = []
    for step in sorted(steps, key=lambda s: (s.iteration, s.position, s.created_at)):
        text = f"{step.id} {one_line(step.description, 200)}"
        if step.status in ("failed", "skipped"):
            text += f" ({step.status})"
        if step.kind == "ask_user":
            text += " (asks you)"
        out.append(
            PlanEntry(
                content=text,
                priority="medium",
                status=status.get(step.status, "completed"),
            )
        )
    return out


class Translator:
    """Turns one ACP session's events into its updates (``updates(event)``)."""

    def __init__(self, workspace: Path, steps_of: StepsOf, *, replay: bool = False) -> None:
        self.workspace = workspace
        self.steps_of = steps_of
        self.replay = replay
        self.open_calls: dict[CallKey, str] = {}
        """Calls shown and not finished yet: their tool_call ids."""
        self.call_tools: dict[str, tuple[str, list[FileEditToolCallContent]]] = {}
        self._used: dict[str, int] = {}
        self.streamed: dict[str, str] = {}
        """The answer text streamed so far, by goal ("" for none)."""
        self.plan_goal: str | None = None
        self.step_text: dict[tuple[str | None, str], str] = {}
        """A step's text not sent yet, by (goal, step)."""

    # --- one event ----------------------------------------------------------------------

    def updates(self, event: ev.EventBase) -> list[Any]:
        if isinstance(event, ev.StepToken) and event.step_id is not None:
            key = (event.goal_id, event.step_id)
            self.step_text[key] = self.step_text.get(key, "") + event.text
            return []
        if event.step_id is not None:
            before = self.flush((event.goal_id, event.step_id))
        elif isinstance(event, ev.FinalAnswer):
            # a step whose text is the answer: the answer says it, once (as the app shows)
            for key, text in list(self.step_text.items()):
                if key[0] == event.goal_id and _same_text(text, event.text):
                    del self.step_text[key]
            before = self.flush()
        elif isinstance(event, ev.RunFailed | ev.RunFinished):
            before = self.flush()
        else:
            before = []
        return before + self._updates(event)

    def flush(self, key: tuple[str | None, str] | None = None) -> list[Any]:
        """The steps' text not sent yet (of one step, or all), as thought chunks."""
        import acp

        keys = [key] if key is not None else list(self.step_text)
        out = []
        for k in keys:
            text = plain(self.step_text.pop(k, "")).strip()
            if text:
                out.append(acp.update_agent_thought_text(f"[{k[1]}] {text}\n\n"))
        return out

    def _updates(self, event: ev.EventBase) -> list[Any]:
        import acp

        match event:
            case ev.RunStarted() if self.replay:
                return [acp.update_user_message_text(plain(event.text))]
            case ev.StepToken() if event.step_id is None:
                key = event.goal_id or ""
                self.streamed[key] = self.streamed.get(key, "") + event.text
                return [acp.update_agent_message_text(plain(event.text))] if event.text else []
            case ev.StepThinking():
                return [acp.update_agent_thought_text(plain(event.text))] if event.text else []
            case ev.ToolCalled():
                return [self._called(event)]
            case ev.ToolResult():
                return self._result(event)
            case ev.FinalAnswer():
                return self._final(event)
            case ev.ClarificationRequested():
                return [acp.update_agent_message_text(questions_text(event.questions))]
            case ev.ClarificationAnswered() if self.replay and event.answers:
                text = "\n".join(plain(a) for a in event.answers)
                return [acp.update_user_message_text(text)]
            case ev.RunFailed() if event.kind != "interrupted":
                return [acp.update_agent_message_text(f"\n\nerror: {one_line(event.error)}\n")]
            case ev.RunFailed() if self.replay:
                return [acp.update_agent_thought_text("(the run was interrupted)\n")]
            case ev.ErrorEvent():
                return [acp.update_agent_thought_text(f"! {one_line(event.message, 300)}\n")]
        if isinstance(event, PLAN_EVENTS) and event.goal_id and not self.replay:
            plan = self.plan(event.goal_id)
            return [] if plan is None else [plan]
        if isinstance(event, PLAN_EVENTS) and event.goal_id:
            self.plan_goal = event.goal_id  # replayed: the plan is sent once, at the end
        return []

    def plan(self, goal_id: str | None = None) -> Any:
        """The plan update of ``goal_id`` (default: the last goal that had one)."""
        import acp

        goal_id = goal_id or self.plan_goal
        if not goal_id:
            return None
        steps = self.steps_of(goal_id)
        if steps is None:
            return None
        self.plan_goal = goal_id
        return acp.update_plan(plan_entries(steps))

    # --- tool calls ---------------------------------------------------------------------

    def call_id(self, goal_id: str | None, step_id: str | None, call_id: str) -> str | None:
        """The tool_call id of an open call (an approval is asked for one)."""
        return self.open_calls.get((goal_id, step_id, call_id))

    def open_call_of(self, goal_id: str | None, step_id: str | None, tool: str) -> str | None:
        """The newest open call of ``tool`` in that step (what an approval is about)."""
        found = None
        for (goal, step, _), tool_call_id in self.open_calls.items():
            if (goal, step) == (goal_id, step_id) and self.call_tools[tool_call_id][0] == tool:
                found = tool_call_id
        return found

    def _new_id(self, goal_id: str | None, step_id: str | None, call_id: str) -> str:
        base = f"{goal_id or '-'}/{step_id or '-'}/{call_id or 'call'}"
        count = self._used.get(base, 0)
        self._used[base] = count + 1
        return base if count == 0 else f"{base}#{count + 1}"

    def _called(self, event: ev.ToolCalled) -> Any:
        import acp

        key = (event.goal_id, event.step_id, event.call_id)
        args = event.args
        locations = tool_calls.locations_of(self.workspace, event.tool, args)
        diff = (
            tool_calls.diff_of(self.workspace, event.tool, args)
            if tool_calls.complete_args(args) and not self.replay
            else None
        )
        if key in self.open_calls:  # published again once its approval was answered
            tool_call_id = self.open_calls[key]
            return acp.update_tool_call(tool_call_id, status="in_progress")
        tool_call_id = self._new_id(*key)
        self.open_calls[key] = tool_call_id
        diffs = [diff] if diff is not None else []
        self.call_tools[tool_call_id] = (event.tool, diffs)
        return acp.start_tool_call(
            tool_call_id,
            tool_calls.title_of(event.tool, args),
            kind=tool_calls.kind_of(event.tool),
            status="in_progress",
            content=diffs or None,
            locations=locations,
            raw_input={str(k): tool_calls.shown(str(v)) for k, v in args.items()},
        )

    def add_diff(self, tool_call_id: str, diff: FileEditToolCallContent) -> None:
        """The diff of a call, computed from its whole arguments (the approval's)."""
        if tool_call_id in self.call_tools:
            tool, _ = self.call_tools[tool_call_id]
            self.call_tools[tool_call_id] = (tool, [diff])

    def _result(self, event: ev.ToolResult) -> list[Any]:
        import acp

        key = (event.goal_id, event.step_id, event.call_id)
        out: list[Any] = []
        tool_call_id = self.open_calls.pop(key, None)
        if tool_call_id is None:  # a result without its call (a transcript cut short)
            out.append(self._called(ev.ToolCalled(**{**event.model_dump(), "args": {}})))
            tool_call_id = self.open_calls.pop(key)
        _, diffs = self.call_tools.get(tool_call_id, (event.tool, []))
        text = acp.tool_content(acp.text_block(tool_calls.output_text(event.output)))
        content: list[Any] = [*diffs, text] if event.ok else [text]
        out.append(
            acp.update_tool_call(
                tool_call_id,
                status="completed" if event.ok else "failed",
                content=content,
                raw_output=tool_calls.output_text(event.output),
            )
        )
        return out

    # --- the answer ---------------------------------------------------------------------

    def _final(self, event: ev.FinalAnswer) -> list[Any]:
        """What of the final answer was not streamed: all of it (a quick answer, a
        report), the rest of it, or the answer whole after a blank line when the one
        streamed was replaced (an answer check asked again)."""
        import acp

        key = event.goal_id or ""
        streamed = self.streamed.pop(key, "")
        final = event.text
        if streamed.strip() == final.strip():
            return []
        if streamed and final.startswith(streamed):
            rest = final[len(streamed) :]
        else:
            rest = ("\n\n" if streamed else "") + final
        return [acp.update_agent_message_text(plain(rest))]


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def questions_text(questions: Sequence[str]) -> str:
    """A clarification as the agent's message: the questions, and how to answer."""
    lines = [plain(q).strip() for q in questions if q.strip()]
    numbered = "\n".join(f"{i}. {q}" for i, q in enumerate(lines, 1))
    body = lines[0] if len(lines) == 1 else numbered
    how = "Reply to answer (one line per question)." if len(lines) > 1 else "Reply to answer."
    return f"{body}\n\n{how}"


def split_answers(text: str, count: int) -> list[str]:
    """The next prompt's text as the answers of ``count`` questions: one line each when
    it has exactly that many lines, else the whole text for each."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if count > 1 and len(lines) == count:
        return lines
    return [text.strip()] * max(count, 1)
