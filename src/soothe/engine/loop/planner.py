"""LLMPlanner: two-phase planning (a small assessment, then a plan only when needed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from soothe.engine.loop import prompts
from soothe.engine.loop.schemas import (
    Classification,
    GoalDecomposition,
    PlanGeneration,
    StatusAssessment,
)

if TYPE_CHECKING:
    from soothe.engine.llm.factory import Role
    from soothe.engine.llm.hub import ModelHub

T = TypeVar("T", bound=BaseModel)


@dataclass
class PlanningContext:
    """Everything the planner may show the model, already bounded by the caller."""

    goal: str
    projection: str = ""
    evidence: str = ""
    steps: str = ""
    history: str = ""
    skill: str = ""
    memory: str = ""

    def render(self) -> str:
        parts = [
            prompts.section("Goal", self.goal),
            prompts.section("Skill instructions", self.skill),
            prompts.section("Conversation so far", self.history),
            prompts.section("Context", self.projection),
            prompts.section("Recalled from earlier work", self.memory),
            prompts.section("Steps so far", self.steps),
            prompts.section("Evidence", self.evidence),
        ]
        return "\n".join(p for p in parts if p)


class PlanningFailed(Exception):
    """The model could not produce a valid plan after repair and re-asks."""

    def __init__(self, what: str, error: str, attempts: int) -> None:
        super().__init__(
            f"could not get a valid {what} from the model after {attempts} tries: {error}"
        )
        self.attempts = attempts


class LLMPlanner:
    def __init__(self, hub: ModelHub) -> None:
        self.hub = hub

    async def _ask(self, schema: type[T], system: str, user: str, role: Role, ids: Any) -> T:
        from langchain_core.messages import HumanMessage, SystemMessage

        result = await self.hub.structured(
            [SystemMessage(content=system), HumanMessage(content=user)],
            schema,
            role=role,
            ids=ids,
        )
        if result.value is None:
            reason = "; ".join(result.problems) or result.error or "invalid output"
            raise PlanningFailed(schema.__name__, reason, result.attempts)
        return result.value

    async def assess(self, ctx: PlanningContext, ids: Any = None) -> StatusAssessment:
        user = f"{ctx.render()}\n{prompts.ASSESS_RULES}"
        return await self._ask(StatusAssessment, prompts.PLANNER_SYSTEM, user, "fast", ids)

    async def generate(self, ctx: PlanningContext, ids: Any = None) -> PlanGeneration:
        user = f"{ctx.render()}\n{prompts.GENERATE_RULES}"
        return await self._ask(PlanGeneration, prompts.PLANNER_SYSTEM, user, "default", ids)

    async def classify(self, text: str, history: str = "", ids: Any = None) -> Classification:
        user = text if not history else f"{prompts.section('Conversation so far', history)}\n{text}"
        return await self._ask(Classification, prompts.CLASSIFY_SYSTEM, user, "fast", ids)

    async def decompose(self, ctx: PlanningContext, ids: Any = None) -> GoalDecomposition:
        user = f"{ctx.render()}\n{prompts.DECOMPOSE_RULES}"
        return await self._ask(GoalDecomposition, prompts.PLANNER_SYSTEM, user, "default", ids)
