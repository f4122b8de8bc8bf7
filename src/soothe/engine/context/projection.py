"""Bounded projection of the goal graph for a prompt.

``build_bundle`` reads only what the bounds need: the focus goal, its parent chain (at most
``MAX_GOAL_DEPTH`` goals), a handful of direct neighbours, at most ``max_steps_per_goal`` steps
of the focus goal, and the newest ledger entries from per-goal deques. Nothing here scans
the whole graph, so its cost does not grow with the number of goals.

Bounds (``ProjectionSettings``): ``max_goals`` goals in the snapshot (focus included) and at
most that many informing goals; ``max_steps_per_goal`` steps listed; ``max_ledger_messages``
and ``max_ledger_chars`` for the ledger; ``max_lineage_chars`` for the lineage line, and
again for the focus goal's own findings and for the informing goals' findings together.
Every description and step result is clipped, so ``render()`` is bounded too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import islice

from pydantic import BaseModel, ConfigDict, Field

from soothe.engine.config import ProjectionSettings
from soothe.engine.context.graph import GoalGraph
from soothe.engine.context.ledger import Ledger
from soothe.engine.context.models import GoalNode, StepNode
from soothe.engine.context.steps import StepDAG
from soothe.engine.text import clip as text_clip

DESCRIPTION_CHARS = 240
STEP_TEXT_CHARS = 200


def clip(text: str, limit: int) -> str:
    return text_clip(text, limit, flatten=False)  # the one clip rule, keeping the lines


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class GoalBrief(_Model):
    id: str
    description: str
    status: str
    priority: int
    relation: str = "focus"
    """focus, parent, depends_on, informs (this goal informs the focus), child, conflicts_with"""


class StepBrief(_Model):
    id: str
    description: str
    status: str
    kind: str
    result: str = ""


class LedgerLine(_Model):
    id: int
    phase: str
    role: str
    content: str
    goal_id: str | None = None


class InformedFindings(_Model):
    goal_id: str
    description: str
    status: str
    findings: str


class ContextBundle(_Model):
    goal: GoalBrief
    findings: str = ""
    lineage: str = ""
    goals: list[GoalBrief] = Field(default_factory=list)
    steps: list[StepBrief] = Field(default_factory=list)
    step_counts: dict[str, int] = Field(default_factory=dict)
    steps_total: int = 0
    ledger: list[LedgerLine] = Field(default_factory=list)
    informed_findings: list[InformedFindings] = Field(default_factory=list)

    def render(self) -> str:
        g = self.goal
        out = [f"## Goal {g.id} [{g.status}, priority {g.priority}]", g.description]
        if self.lineage:
            out += ["", "## Lineage (root first)", self.lineage]
        others = [b for b in self.goals if b.relation != "focus"]
        if others:
            out += ["", "## Related goals"]
            out += [f"- {b.id} ({b.relation}) [{b.status}] {b.description}" for b in others]
        if self.steps_total:
            counts = ", ".join(f"{k} {v}" for k, v in sorted(self.step_counts.items()))
            out += ["", f"## Steps ({len(self.steps)} of {self.steps_total} shown; {counts})"]
            for s in self.steps:
                line = f"- [{s.status}] {s.id}: {s.description}"
                if s.result:
                    line += f" -> {s.result}"
                out.append(line)
        if self.findings:
            out += ["", "## Findings so far", self.findings]
        if self.informed_findings:
            out += ["", "## Findings from goals that inform this one"]
            for f in self.informed_findings:
                out.append(f"### {f.goal_id} [{f.status}] {f.description}")
                out.append(f.findings or "(no findings yet)")
        if self.ledger:
            out += ["", "## Recent ledger"]
            out += [f"[{e.phase}] {e.role}: {e.content}" for e in self.ledger]
        return "\n".join(out)


def _brief(goal: GoalNode, relation: str) -> GoalBrief:
    return GoalBrief(
        id=goal.id,
        description=clip(goal.description, DESCRIPTION_CHARS),
        status=goal.status,
        priority=goal.priority,
        relation=relation,
    )


def _lineage(graph: GoalGraph, ancestors: Sequence[str], limit: int) -> str:
    parts: list[str] = []
    used = 0
    for gid in ancestors:  # nearest first; the root side is dropped when over budget
        goal = graph.goals[gid]
        part = f"{gid} [{goal.status}]: {clip(goal.description, DESCRIPTION_CHARS)}"
        cost = len(part) + (3 if parts else 0)
        if used + cost > limit:
            if not parts:
                parts.append(clip(part, limit))
            else:
                parts.append("…")
            break
        parts.append(part)
        used += cost
    return " > ".join(reversed(parts))


_STEP_RANK = {"active": 0, "failed": 1, "pending": 2, "completed": 3, "skipped": 4}


def _pick_steps(dag: StepDAG, limit: int) -> list[StepNode]:
    steps = list(dag.steps.values())
    if len(steps) <= limit:
        return steps
    order = sorted(
        range(len(steps)),
        key=lambda i: (
            _STEP_RANK.get(steps[i].status, 5),
            -i if steps[i].status in ("completed", "skipped") else i,
        ),
    )
    return [steps[i] for i in sorted(order[:limit])]


def _neighbours(graph: GoalGraph, goal: GoalNode) -> Iterator[tuple[str, str]]:
    if goal.parent_id:
        yield goal.parent_id, "parent"
    for dep in goal.depends_on:
        yield dep, "depends_on"
    for src in reversed(graph.informed_by.get(goal.id, {})):
        yield src, "informs"
    for child in graph.children.get(goal.id, {}):
        yield child, "child"
    for other in goal.conflicts_with:
        yield other, "conflicts_with"


def build_bundle(
    graph: GoalGraph,
    dags: Mapping[str, StepDAG],
    ledger: Ledger,
    goal_id: str,
    bounds: ProjectionSettings,
    phases: Sequence[str] | None = None,
) -> ContextBundle:
    goal = graph.goals[goal_id]
    focus = _brief(goal, "focus").model_copy(
        update={"description": clip(goal.description, bounds.max_lineage_chars)}
    )
    goals = [focus]
    seen = {goal_id}
    for gid, relation in _neighbours(graph, goal):
        if len(goals) >= bounds.max_goals:
            break
        if gid in seen or gid not in graph.goals:
            continue
        seen.add(gid)
        goals.append(_brief(graph.goals[gid], relation))

    informers = list(islice(reversed(graph.informed_by.get(goal_id, {})), bounds.max_goals))
    informed: list[InformedFindings] = []
    if informers:
        share = max(40, bounds.max_lineage_chars // len(informers))
        for gid in informers:
            src = graph.goals[gid]
            informed.append(
                InformedFindings(
                    goal_id=gid,
                    description=clip(src.description, DESCRIPTION_CHARS),
                    status=src.status,
                    findings=clip(src.findings, share),
                )
            )

    dag = dags.get(goal_id)
    step_briefs: list[StepBrief] = []
    counts: dict[str, int] = {}
    total = 0
    if dag is not None and len(dag):
        total = len(dag)
        counts = dag.counts()
        for s in _pick_steps(dag, bounds.max_steps_per_goal):
            result = s.result_summary if s.status == "completed" else s.error
            step_briefs.append(
                StepBrief(
                    id=s.id,
                    description=clip(s.description, STEP_TEXT_CHARS),
                    status=s.status,
                    kind=s.kind,
                    result=clip(result, STEP_TEXT_CHARS),
                )
            )

    lines: list[LedgerLine] = []
    budget = bounds.max_ledger_chars
    for entry in reversed(ledger.tail(goal_id, goal.thread_id, bounds.max_ledger_messages, phases)):
        if budget <= 0:
            break
        content = clip(entry.content, budget)
        budget -= len(content)
        lines.append(
            LedgerLine(
                id=entry.id,
                phase=entry.phase,
                role=entry.role,
                content=content,
                goal_id=entry.goal_id,
            )
        )
    lines.reverse()

    return ContextBundle(
        goal=goals[0],
        findings=clip(goal.findings, bounds.max_lineage_chars),
        lineage=_lineage(graph, graph.ancestors(goal_id), bounds.max_lineage_chars),
        goals=goals,
        steps=step_briefs,
        step_counts=counts,
        steps_total=total,
        ledger=lines,
        informed_findings=informed,
    )
