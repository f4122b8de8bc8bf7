"""UnifiedClassifier: one small structured call routes a request (and answers a quiz)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from soothe.engine.loop.schemas import Classification

if TYPE_CHECKING:
    from soothe.engine.loop.planner import LLMPlanner


def precheck(text: str) -> Classification | None:
    """Skip the model where the answer is certain: skill invocations are always tasks."""
    if text.lstrip().startswith("/skill:"):
        return Classification(label="complex", reason="skill invocation")
    return None


class UnifiedClassifier:
    def __init__(self, planner: LLMPlanner) -> None:
        self.planner = planner

    async def classify(self, text: str, history: str = "", ids: Any = None) -> Classification:
        """Route the request. A model that cannot classify sends it down the agentic path."""
        from soothe.engine.loop.planner import PlanningFailed

        local = precheck(text)
        if local is not None:
            return local
        try:
            result = await self.planner.classify(text, history=history, ids=ids)
        except PlanningFailed as exc:
            return Classification(label="complex", reason=f"classification failed: {exc}"[:200])
        if result.label in ("quiz", "trivial") and not result.answer.strip():
            # A quiz label without an answer would cost a second call anyway: plan instead.
            return Classification(label="simple", reason="no answer given with the quiz label")
        return result
