"""The step DAG of one goal: plan application, readiness and dependency-token expansion.

A planner names steps like ``KFA-01``; a later plan often refers to that step as ``01`` or
``1``. A purely numeric dependency token therefore also matches a step by the number its id
ends with, but it counts as satisfied only when exactly one *completed* step has that number
(``expand_dependency_satisfaction_ids``). A token that names a step exactly always means that
step. A dependency that can no longer be satisfied (the step failed or was skipped, or the
number became ambiguous) is *dead*: the engine skips the dependent instead of leaving it stuck.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Literal

from soothe.engine.context.errors import PlanError, UnknownStepDependency
from soothe.engine.context.models import StepNode, StepSpec

_TRAILING_DIGITS = re.compile(r"(\d+)$")

DepState = Literal["satisfied", "waiting", "dead"]
UnknownPolicy = Literal["raise", "drop"]


def step_number(step_id: str) -> int | None:
    """The number a step id ends with (``KFA-01`` -> 1), or None."""
    match = _TRAILING_DIGITS.search(step_id)
    return int(match.group(1)) if match else None


def expand_dependency_satisfaction_ids(completed_ids: Iterable[str]) -> set[str]:
    """The completed ids plus their numeric aliases (``KFA-01`` adds ``01`` and ``1``),
    only for numbers that exactly one completed step has."""
    ids = set(completed_ids)
    owners: dict[int, list[str]] = {}
    for sid in ids:
        number = step_number(sid)
        if number is not None:
            owners.setdefault(number, []).append(sid)
    out = set(ids)
    for number, same in owners.items():
        if len(same) == 1:
            match = _TRAILING_DIGITS.search(same[0])
            assert match is not None
            out.add(match.group(1))
            out.add(str(number))
    return out


class StepDAG:
    """Steps of one goal in plan order. Read it freely; change it through the engine."""

    def __init__(self, goal_id: str, steps: Iterable[StepNode] = ()) -> None:
        self.goal_id = goal_id
        self._steps: dict[str, StepNode] = {s.id: s for s in steps}

    # --- reading ---------------------------------------------------------------------

    @property
    def steps(self) -> Mapping[str, StepNode]:
        return MappingProxyType(self._steps)

    def get(self, step_id: str) -> StepNode | None:
        return self._steps.get(step_id)

    def __len__(self) -> int:
        return len(self._steps)

    def __iter__(self) -> Iterator[StepNode]:
        return iter(list(self._steps.values()))

    def __contains__(self, step_id: object) -> bool:
        return step_id in self._steps

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for step in self._steps.values():
            out[step.status] = out.get(step.status, 0) + 1
        return out

    def is_finished(self) -> bool:
        """No step is pending or running."""
        return all(s.status not in ("pending", "active") for s in self._steps.values())

    def max_iteration(self) -> int:
        return max((s.iteration for s in self._steps.values()), default=0)

    def _completed_numbers(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for step in self._steps.values():
            if step.status == "completed":
                number = step_number(step.id)
                if number is not None:
                    counts[number] = counts.get(number, 0) + 1
        return counts

    def dependency_state(
        self, step: StepNode, token: str, completed_numbers: Mapping[int, int] | None = None
    ) -> tuple[DepState, str]:
        """Whether one dependency token of ``step`` is satisfied, still waiting, or dead."""
        exact = self._steps.get(token)
        if exact is not None:
            if exact.status == "completed":
                return "satisfied", ""
            if exact.status in ("failed", "skipped"):
                return "dead", f"dependency {token} {exact.status}"
            return "waiting", ""
        if not token.isdigit():
            return "dead", f"unknown dependency {token}"
        number = int(token)
        if completed_numbers is None:
            completed_numbers = self._completed_numbers()
        done = completed_numbers.get(number, 0)
        if done == 1:
            return "satisfied", ""
        if done > 1:
            return "dead", f"ambiguous dependency {token}: {done} completed steps end in {number}"
        alive = any(
            s.id != step.id and s.status in ("pending", "active") and step_number(s.id) == number
            for s in self._steps.values()
        )
        if alive:
            return "waiting", ""
        return "dead", f"dependency {token} matches no step that can still complete"

    def waiting_on(self, step_id: str) -> list[str]:
        step = self._steps[step_id]
        numbers = self._completed_numbers()
        state = self.dependency_state
        return [t for t in step.dependencies if state(step, t, numbers)[0] != "satisfied"]

    def ready_steps(self) -> list[StepNode]:
        """Pending steps whose every dependency is satisfied, in plan order."""
        numbers = self._completed_numbers()
        return [
            s
            for s in self._steps.values()
            if s.status == "pending"
            and all(self.dependency_state(s, t, numbers)[0] == "satisfied" for t in s.dependencies)
        ]

    def dead_steps(self) -> list[tuple[StepNode, str]]:
        """Pending steps with a dependency that can never be satisfied, and why."""
        numbers = self._completed_numbers()
        out: list[tuple[StepNode, str]] = []
        for step in self._steps.values():
            if step.status != "pending":
                continue
            for token in step.dependencies:
                state, why = self.dependency_state(step, token, numbers)
                if state == "dead":
                    out.append((step, why))
                    break
        return out

    # --- changing (engine only) ------------------------------------------------------

    def _clone(self) -> StepDAG:
        return StepDAG(self.goal_id, self._steps.values())

    def _put(self, step: StepNode) -> None:
        self._steps[step.id] = step

    def _adopt(self, other: StepDAG) -> None:
        self._steps = dict(other._steps)

    def planned(
        self,
        specs: Sequence[StepSpec],
        iteration: int,
        now: float,
        unknown_deps: UnknownPolicy = "raise",
    ) -> tuple[StepDAG, list[str], list[StepNode]]:
        """The DAG after applying a (re)plan, without touching this one.

        Replan rules: completed steps keep their results, and a spec reusing a completed
        step's id is taken as already done; pending, failed and skipped steps of older plans
        are dropped and replaced by the new plan; a running (active) step is kept, and a plan
        that redefines it is rejected. Returns (new DAG, removed step ids, the plan's nodes in
        spec order).
        """
        goal_id = self.goal_id
        seen: set[str] = set()
        for spec in specs:
            if spec.id in seen:
                raise PlanError(goal_id, f"duplicate step id {spec.id}")
            seen.add(spec.id)
        kept = {sid: s for sid, s in self._steps.items() if s.status in ("completed", "active")}
        for spec in specs:
            running = kept.get(spec.id)
            if running is not None and running.status == "active":
                raise PlanError(goal_id, f"step {spec.id} is running and cannot be redefined")
        removed = [sid for sid in self._steps if sid not in kept]
        fresh = [spec for spec in specs if spec.id not in kept]
        all_ids = set(kept) | {spec.id for spec in fresh}
        numbers: dict[int, list[str]] = {}
        for sid in all_ids:
            number = step_number(sid)
            if number is not None:
                numbers.setdefault(number, []).append(sid)

        def known(token: str) -> bool:
            return token in all_ids or (token.isdigit() and int(token) in numbers)

        unknown = {
            spec.id: [t for t in spec.dependencies if not known(t)]
            for spec in fresh
            if any(not known(t) for t in spec.dependencies)
        }
        if unknown and unknown_deps == "raise":
            raise UnknownStepDependency(goal_id, unknown)

        position = max((s.position for s in kept.values()), default=-1) + 1
        new = StepDAG(goal_id, sorted(kept.values(), key=lambda s: s.position))
        plan_nodes: list[StepNode] = []
        for spec in specs:
            if spec.id in kept:
                plan_nodes.append(kept[spec.id])
                continue
            bad = unknown.get(spec.id, [])
            deps = tuple(dict.fromkeys(t for t in spec.dependencies if t not in bad))
            node = StepNode(
                id=spec.id,
                goal_id=goal_id,
                description=spec.description,
                kind=spec.kind,
                dependencies=deps,
                dropped_dependencies=tuple(bad),
                iteration=iteration,
                position=position,
                expected_output=spec.expected_output,
                questions=tuple(spec.questions),
                created_at=now,
                updated_at=now,
            )
            position += 1
            new._put(node)
            plan_nodes.append(node)
        cycle = new._find_cycle([spec.id for spec in fresh], numbers)
        if cycle:
            raise PlanError(goal_id, "step cycle " + " -> ".join(cycle))
        return new, removed, plan_nodes

    def _find_cycle(
        self, among: Sequence[str], numbers: Mapping[int, list[str]]
    ) -> list[str] | None:
        """A dependency cycle through the given steps (unambiguous numeric aliases resolved)."""

        def targets(step: StepNode) -> list[str]:
            out = []
            for token in step.dependencies:
                if token in self._steps:
                    out.append(token)
                elif token.isdigit() and len(numbers.get(int(token), ())) == 1:
                    out.append(numbers[int(token)][0])
            return out

        color: dict[str, int] = {}
        for root in among:
            if color.get(root):
                continue
            stack: list[tuple[str, Iterator[str]]] = [(root, iter(targets(self._steps[root])))]
            path = [root]
            color[root] = 1
            while stack:
                node, children = stack[-1]
                advanced = False
                for child in children:
                    if child not in self._steps:
                        continue
                    state = color.get(child, 0)
                    if state == 1:
                        return [*path[path.index(child) :], child]
                    if state == 0:
                        color[child] = 1
                        path.append(child)
                        stack.append((child, iter(targets(self._steps[child]))))
                        advanced = True
                        break
                if not advanced:
                    color[node] = 2
                    stack.pop()
                    path.pop()
        return None
