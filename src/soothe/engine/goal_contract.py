"""What a goal promises and may spend: its done-when criteria (with the verifier's
verdicts) and its budget and spend. Plain frozen models with no heavy imports, so the
screen's views can hold them before the engine loads (the first frame)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Verdict = Literal["met", "unmet", "unknown"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Criterion(_Frozen):
    """One done-when criterion the user set on a goal, with the verifier's last verdict
    (None until a verifier has checked it) and the evidence ids that verdict rests on."""

    text: str
    verdict: Verdict | None = None
    reason: str = ""
    evidence: tuple[str, ...] = ()


class GoalBudget(_Frozen):
    """What one goal may spend; None is no cap."""

    calls: int | None = None
    tokens: int | None = None
    time_s: float | None = None


class GoalSpend(_Frozen):
    """What one goal has spent so far (model calls, tokens, wall time running)."""

    calls: int = 0
    tokens: int = 0
    time_s: float = 0.0
