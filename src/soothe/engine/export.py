"""A thread as a Markdown report: conversation, goals, steps, evidence and answers.

Control characters are taken out (``sanitize.plain``): escape sequences removed, CR made
a line break."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from soothe.engine.glyphs import GOAL_GLYPHS
from soothe.engine.goal_verdicts import criterion_line
from soothe.engine.sanitize import plain

if TYPE_CHECKING:
    from soothe.engine.context import ContextEngine

ICON = GOAL_GLYPHS
"""The screen's glyphs (goal and step statuses): one meaning per glyph everywhere."""


def _when(ts: float | None) -> str:
    if not ts:
        return ""
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


async def thread_markdown(context: ContextEngine, thread_id: str) -> str:
    thread = context.get_thread(thread_id)
    if thread is None:
        raise LookupError(f"no thread '{thread_id}'")
    out = [
        f"# {thread.title}",
        "",
        f"Thread `{thread.id}` · started {_when(thread.created_at)}",
        "",
    ]
    messages = await context.messages(thread_id, limit=1000)
    if messages:
        out += ["## Conversation", ""]
        for msg in messages:
            out += [f"**{msg.role}:** {msg.content}", ""]
    goals = context.list_goals(thread_id=thread_id)
    if goals:
        out += ["## Goals", ""]
    for goal in goals:
        icon = ICON.get(goal.status, "•")
        out += [f"### {icon} {goal.id} — {goal.description}", ""]
        meta = [f"status: {goal.status}", f"priority: {goal.priority}"]
        if goal.depends_on:
            meta.append("after " + ", ".join(goal.depends_on))
        if goal.parent_id:
            meta.append(f"part of {goal.parent_id}")
        out += [" · ".join(meta), ""]
        if goal.criteria:  # with the verifier's last verdicts (✓ met, ✗ unmet, ? unknown)
            out += ["Done when:", ""]
            out += [f"- {criterion_line(c)}" for c in goal.criteria]
            out.append("")
        steps = list(context.step_dag(goal.id).steps.values())
        if steps:
            out += ["| step | status | description | result |", "|---|---|---|---|"]
            for step in steps:
                result = (step.result_summary or step.error or "").replace("|", "\\|")
                desc = step.description.replace("|", "\\|")
                out.append(f"| {step.id} | {step.status} | {desc} | {result[:200]} |")
            out.append("")
        evidence = context.evidence(goal.id)
        if evidence:
            out += ["Evidence:", ""]
            out += [f"- `{e.id}` ({e.kind}, {e.step_id or '-'}) {e.summary}" for e in evidence]
            out.append("")
        if goal.findings:
            out += ["Answer:", "", goal.findings, ""]
        if goal.error:
            out += [f"Error: {goal.error}", ""]
    # titles, answers, evidence and errors are the user's, a model's, a tool's or a
    # file's words: an export printed (``threads show``) or opened in a terminal must not
    # carry their control sequences
    return plain("\n".join(out)).rstrip() + "\n"
