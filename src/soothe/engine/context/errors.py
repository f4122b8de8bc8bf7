"""Typed errors of the ContextEngine. Every message names the goal or step involved."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


class ContextError(Exception):
    """Base class for every ContextEngine error."""


class GoalNotFound(ContextError, KeyError):
    def __init__(self, goal_id: str) -> None:
        super().__init__(goal_id)
        self.goal_id = goal_id

    def __str__(self) -> str:
        return f"no goal {self.goal_id!r}"


class StepNotFound(ContextError, KeyError):
    def __init__(self, goal_id: str, step_id: str) -> None:
        super().__init__(step_id)
        self.goal_id = goal_id
        self.step_id = step_id

    def __str__(self) -> str:
        return f"goal {self.goal_id} has no step {self.step_id!r}"


class ThreadNotFound(ContextError, KeyError):
    def __init__(self, thread_id: str) -> None:
        super().__init__(thread_id)
        self.thread_id = thread_id

    def __str__(self) -> str:
        return f"no thread {self.thread_id!r}"


class IllegalTransition(ContextError):
    """A goal status move the lifecycle table (or one of its guards) does not allow."""

    def __init__(self, goal_id: str, from_status: str, to_status: str, why: str = "") -> None:
        self.goal_id = goal_id
        self.from_status = from_status
        self.to_status = to_status
        self.why = why
        text = f"goal {goal_id}: illegal transition {from_status} -> {to_status}"
        super().__init__(f"{text} ({why})" if why else text)


class IllegalStepTransition(ContextError):
    def __init__(self, goal_id: str, step_id: str, from_status: str, to_status: str) -> None:
        self.goal_id = goal_id
        self.step_id = step_id
        self.from_status = from_status
        self.to_status = to_status
        super().__init__(
            f"goal {goal_id} step {step_id}: illegal transition {from_status} -> {to_status}"
        )


class GoalNotReady(ContextError):
    """Activation refused: a dependency is not completed or a conflicting goal is active."""

    def __init__(self, goal_id: str, why: str) -> None:
        self.goal_id = goal_id
        self.why = why
        super().__init__(f"goal {goal_id} is not ready: {why}")


class StepNotReady(ContextError):
    def __init__(self, goal_id: str, step_id: str, waiting_on: Sequence[str]) -> None:
        self.goal_id = goal_id
        self.step_id = step_id
        self.waiting_on = list(waiting_on)
        super().__init__(
            f"goal {goal_id} step {step_id} is waiting on: {', '.join(self.waiting_on)}"
        )


class CycleError(ContextError):
    """An edge that would close a cycle; ``cycle`` lists it, first node repeated at the end."""

    def __init__(self, relation: str, cycle: Sequence[str]) -> None:
        self.relation = relation
        self.cycle = list(cycle)
        super().__init__(f"{relation} would close the cycle {' -> '.join(self.cycle)}")


class DepthLimitExceeded(ContextError):
    def __init__(self, goal_id: str, depth: int, limit: int) -> None:
        self.goal_id = goal_id
        self.depth = depth
        self.limit = limit
        super().__init__(
            f"goal {goal_id} would be at depth {depth}; sub-goals nest at most {limit} levels"
        )


class GoalInUse(ContextError):
    """A goal cannot be removed while others depend on it, descend from it, or it runs."""

    def __init__(self, goal_id: str, why: str) -> None:
        self.goal_id = goal_id
        self.why = why
        super().__init__(f"goal {goal_id} cannot be removed: {why}")


class InvalidGoal(ContextError, ValueError):
    """Bad input for a goal (priority out of range, self edge, unknown reference...)."""


class PlanError(ContextError, ValueError):
    """A plan that cannot be applied: duplicate ids, a step cycle, a running step redefined."""

    def __init__(self, goal_id: str, why: str) -> None:
        self.goal_id = goal_id
        self.why = why
        super().__init__(f"goal {goal_id}: plan rejected: {why}")


class UnknownStepDependency(PlanError):
    """A plan names dependencies that match no step; ``unknown`` maps step id -> tokens."""

    def __init__(self, goal_id: str, unknown: Mapping[str, Sequence[str]]) -> None:
        self.unknown = {k: list(v) for k, v in unknown.items()}
        parts = "; ".join(f"{s} -> {', '.join(d)}" for s, d in self.unknown.items())
        super().__init__(goal_id, f"unknown step dependencies: {parts}")


class StoreError(ContextError):
    """The database cannot be used (a newer schema, a failed migration)."""
