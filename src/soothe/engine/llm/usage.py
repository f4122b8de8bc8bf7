"""Token and time accounting per call, aggregated per thread, goal and step."""

from __future__ import annotations

from dataclasses import dataclass, field

from soothe.engine.scope import Scope

__all__ = ["UsageCounts", "UsageTotals"]


@dataclass(slots=True)
class UsageCounts:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    duration_s: float = 0.0
    prompt_chars: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: UsageCounts) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.duration_s += other.duration_s
        self.prompt_chars += other.prompt_chars


@dataclass
class UsageTotals:
    """Running totals. Steps are keyed by ``(goal_id, step_id)``: plan step ids repeat
    across goals. Failed calls count as calls (with whatever tokens were reported)."""

    total: UsageCounts = field(default_factory=UsageCounts)
    by_thread: dict[str, UsageCounts] = field(default_factory=dict)
    by_goal: dict[str, UsageCounts] = field(default_factory=dict)
    by_step: dict[tuple[str | None, str], UsageCounts] = field(default_factory=dict)
    by_role: dict[str, UsageCounts] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return self.total.calls

    @property
    def prompt_chars(self) -> int:
        return self.total.prompt_chars

    @property
    def input_tokens(self) -> int:
        return self.total.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.total.output_tokens

    def record(self, counts: UsageCounts, ids: Scope | None = None, role: str = "default") -> None:
        self.total.add(counts)
        self.by_role.setdefault(role, UsageCounts()).add(counts)
        if ids is None:
            return
        if ids.thread_id:
            self.by_thread.setdefault(ids.thread_id, UsageCounts()).add(counts)
        if ids.goal_id:
            self.by_goal.setdefault(ids.goal_id, UsageCounts()).add(counts)
        if ids.step_id:
            self.by_step.setdefault((ids.goal_id, ids.step_id), UsageCounts()).add(counts)

    def thread(self, thread_id: str) -> UsageCounts:
        return self.by_thread.get(thread_id, UsageCounts())

    def goal(self, goal_id: str) -> UsageCounts:
        return self.by_goal.get(goal_id, UsageCounts())

    def step(self, goal_id: str | None, step_id: str) -> UsageCounts:
        return self.by_step.get((goal_id, step_id), UsageCounts())
