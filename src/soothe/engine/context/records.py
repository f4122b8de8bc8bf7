"""Evidence (what a goal's steps found, with stable ids) and the message ledger."""

from __future__ import annotations

from collections.abc import Sequence

from soothe.engine.context.errors import StepNotFound
from soothe.engine.context.models import EvidenceEntry, LedgerEntry
from soothe.engine.context.store import (
    INSERT_EVIDENCE,
    INSERT_LEDGER,
    evidence_row,
    ledger_row,
    ledger_trim_op,
)
from soothe.engine.context.unit import UnitOfWork
from soothe.engine.events import EvidenceAdded, EvidenceKind, GoalSteered
from soothe.engine.text import clip

STEER_PHASE = "steer"
"""The ledger phase of the user's notes to a running goal (``/steer``)."""


class RecordOps:
    def __init__(self, uow: UnitOfWork) -> None:
        self._uow = uow

    async def add_evidence(
        self,
        goal_id: str,
        *,
        kind: EvidenceKind,
        summary: str,
        content: str,
        step_id: str | None,
    ) -> EvidenceEntry:
        state = self._uow.state
        async with self._uow.write() as change:
            change.goal(goal_id)
            if step_id is not None and step_id not in state.dags[goal_id]:
                raise StepNotFound(goal_id, step_id)
            mine = state.evidence.get(goal_id, [])
            n = (mine[-1].n if mine else 0) + 1
            entry = EvidenceEntry(
                id=f"E-{goal_id}-{n}",
                goal_id=goal_id,
                n=n,
                kind=kind,
                summary=summary,
                content=content,
                step_id=step_id,
                created_at=change.now,
            )
            change.ops.append((INSERT_EVIDENCE, evidence_row(entry)))
            change.after.append(lambda: state.evidence.setdefault(goal_id, []).append(entry))
            change.emit(
                EvidenceAdded(
                    **change.scope(goal_id, step_id).fields(),
                    evidence_id=entry.id,
                    kind=entry.kind,
                    summary=summary,
                    content=content,
                )
            )
        return entry

    def evidence_summary(self, entries: Sequence[EvidenceEntry], max_chars: int) -> str:
        """One line per entry, newest kept when over ``max_chars`` (never longer)."""
        lines: list[str] = []
        used = 0
        for entry in reversed(entries):
            where = f" @{entry.step_id}" if entry.step_id else ""
            line = f"[{entry.id}] {entry.kind}{where}: {clip(entry.summary, 300, flatten=False)}"
            if used + len(line) + 1 > max_chars - 48:
                break
            lines.append(line)
            used += len(line) + 1
        omitted = len(entries) - len(lines)
        if omitted:
            lines.append(f"({omitted} earlier evidence entries omitted)")
        return clip("\n".join(reversed(lines)), max_chars, flatten=False)

    async def append_ledger(
        self,
        goal_id: str | None,
        role: str,
        content: str,
        phase: str,
        thread_id: str,
        *,
        steer: bool = False,
    ) -> LedgerEntry:
        """One ledger entry; ``steer``: the user's note to the goal, published as
        GoalSteered in the same change (kept in the ledger and the transcript alike)."""
        ledger = self._uow.state.ledger
        async with self._uow.write() as change:
            if steer and goal_id is not None:
                change.emit(GoalSteered(**change.scope(goal_id).fields(), text=content))
            if goal_id is not None:
                thread_id = thread_id or change.goal(goal_id).thread_id
            entry = LedgerEntry(
                id=ledger.next_id,
                goal_id=goal_id,
                thread_id=thread_id,
                role=role,
                content=content,
                phase=phase,
                created_at=change.now,
            )
            change.ops.append((INSERT_LEDGER, ledger_row(entry)))
            cutoff = ledger.overflow_cutoff(1)
            if cutoff is not None:
                change.ops.append(ledger_trim_op(cutoff))
            change.after.append(lambda: ledger.add(entry))
        return entry
