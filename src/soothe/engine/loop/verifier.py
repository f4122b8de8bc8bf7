"""The verifier: when a goal with done-when criteria is assessed done, ONE structured call
checks each criterion against the goal's evidence (ids ``E-G1-3``) and the answer the
loop made, through the packer like every call. Each criterion comes back met, unmet or
unknown, with a one-line reason and the evidence ids it rests on; ids that are not the
goal's evidence are dropped (a model may invent them), and a criterion the reply left out
is unknown. Goals without criteria are never sent here (no extra call)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from soothe.engine.goal_contract import Criterion
from soothe.engine.llm.packer import REQUEST, RESULTS, RULES, STEP, Part, Prompt
from soothe.engine.loop import prompts
from soothe.engine.loop.schemas import CriterionCheck, Verification
from soothe.engine.text import clip

if TYPE_CHECKING:
    from soothe.engine.context import ContextEngine
    from soothe.engine.context.models import EvidenceEntry
    from soothe.engine.llm.hub import IdsLike, ModelHub

CONTENT_CHARS = 600
"""What an evidence entry's content shows beside its summary (the packer clips the whole
part to the call's window, newest entries kept)."""
CRITERIA_FLOOR_CHARS = 600
REASON_CHARS = 200
UNREAD = "the verifier gave no verdict for it"


def numbered(criteria: Sequence[Criterion]) -> str:
    """``1. text`` per criterion, with its last verdict when it has one (the planner's
    prompt shows what the verifier found unmet)."""
    lines = []
    for n, c in enumerate(criteria, 1):
        said = f"  [last check: {c.verdict}" + (f": {c.reason}]" if c.reason else "]")
        lines.append(f"{n}. {c.text}" + (said if c.verdict else ""))
    return "\n".join(lines)


def evidence_text(entries: Sequence[EvidenceEntry]) -> str:
    """One ``[E-G1-3] kind @step: summary`` line per entry, its content (clipped)
    indented under it when it says more than the summary line; oldest first."""
    lines: list[str] = []
    for e in entries:
        where = f" @{e.step_id}" if e.step_id else ""
        lines.append(f"[{e.id}] {e.kind}{where}: {clip(e.summary, 300)}")
        body = (e.content or "").strip()
        if body and " ".join(body.split()) not in " ".join(e.summary.split()):
            shown = clip(body, CONTENT_CHARS, flatten=False)
            lines.extend(f"    {line}" for line in shown.splitlines() if line.strip())
    return "\n".join(lines)


def verifier_parts(
    goal: str, criteria: Sequence[Criterion], answer: str, entries: Sequence[EvidenceEntry]
) -> list[Part]:
    """The verifier's prompt by parts: the goal and the criteria are kept as the request
    is; the answer next; the evidence (newest kept) fills what is left of the window."""
    plain = [Criterion(text=c.text) for c in criteria]  # judged afresh, not by the last check
    return [
        Part("Goal", goal, REQUEST, "ends", 400),
        Part(prompts.CRITERIA_TITLE, numbered(plain), REQUEST, "head", CRITERIA_FLOOR_CHARS),
        Part("The answer the goal produced", answer, STEP, "ends", 300),
        Part("Evidence", evidence_text(entries) or "(none)", RESULTS, keep="tail"),
        Part("", prompts.VERIFY_RULES, RULES),
    ]


def problems(got: Verification, count: int) -> list[str]:
    """What a schema-valid reply gets wrong: numbers that are no criterion, a criterion
    given twice or left out (sent back to the model in the re-ask)."""
    out: list[str] = []
    seen: set[int] = set()
    for check in got.criteria:
        if not 1 <= check.number <= count:
            out.append(f"there is no criterion {check.number} (they are 1-{count})")
        elif check.number in seen:
            out.append(f"criterion {check.number} is given twice")
        seen.add(check.number)
    missing = [str(n) for n in range(1, count + 1) if n not in seen]
    if missing:
        out.append("give a verdict for every criterion; missing: " + ", ".join(missing))
    return out


def verdicts(
    criteria: Sequence[Criterion], got: Verification | None, known: set[str], error: str = ""
) -> tuple[Criterion, ...]:
    """The criteria with the reply's verdicts. Evidence ids not in ``known`` are dropped;
    a criterion without a verdict (or an unreadable reply: ``error``) is unknown."""
    checks: dict[int, CriterionCheck] = {}
    for given in got.criteria if got is not None else []:
        checks.setdefault(given.number, given)
    out: list[Criterion] = []
    for n, c in enumerate(criteria, 1):
        check = checks.get(n)
        if check is None:
            why = f"the verifier's reply was unreadable: {error}" if error else UNREAD
            out.append(Criterion(text=c.text, verdict="unknown", reason=clip(why, REASON_CHARS)))
            continue
        ids = (i.strip().strip("[]").strip() for i in check.evidence)
        out.append(
            Criterion(
                text=c.text,
                verdict=check.verdict,
                reason=clip(check.reason, REASON_CHARS),
                evidence=tuple(dict.fromkeys(i for i in ids if i in known)),
            )
        )
    return tuple(out)


def unmet_text(criteria: Sequence[Criterion]) -> str:
    """The criteria not met, for a send-back's feedback and a failed goal's error:
    ``done-when not met: "A" (unmet: why); "B" (unknown: why)``."""
    parts = [
        f'"{clip(c.text, 120)}" ({c.verdict}' + (f": {c.reason})" if c.reason else ")")
        for c in criteria
        if c.verdict != "met"
    ]
    return "done-when not met: " + "; ".join(parts) if parts else ""


class Verifier:
    def __init__(self, hub: ModelHub, context: ContextEngine) -> None:
        self.hub = hub
        self.context = context

    async def check(self, goal_id: str, answer: str, ids: IdsLike = None) -> tuple[Criterion, ...]:
        """One verifier call on ``goal_id``'s criteria; the verdicts are stored on the goal
        and published (goal.verified). Transport failures raise as for any call."""
        goal = self.context.get_goal(goal_id)
        criteria = goal.criteria
        entries = self.context.evidence(goal_id)
        prompt = Prompt(
            prompts.VERIFY_SYSTEM, verifier_parts(goal.description, criteria, answer, entries)
        )
        result = await self.hub.structured(
            prompt,
            Verification,
            role="default",
            ids=ids,
            validate=lambda got: problems(got, len(criteria)),
        )
        value = result.value
        if value is None:
            value = _lenient(result.raw)
        error = "" if value is not None else (result.error or "invalid output")
        judged = verdicts(criteria, value, {e.id for e in entries}, error)
        await self.context.record_verdicts(goal_id, judged)
        return judged


def _lenient(raw: str) -> Verification | None:
    """A reply that stayed wrong after the re-asks may still hold some verdicts (a
    criterion left out): those count, the rest are unknown."""
    from soothe.engine.llm.structured import parse_structured

    return parse_structured(raw, Verification).value if raw else None
