"""The in-memory goal graph: snapshots by id plus reverse indexes kept in step with them.

``put`` and ``drop`` are the only ways to change it; both diff the old and new snapshot so
the reverse indexes (dependents, children, informers, by-status) never drift from the
edge lists stored on the goals themselves.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from soothe.engine.context.models import GoalNode

MAX_GOAL_DEPTH = 5
"""A decomposition chain holds at most 5 goals: a root and four levels of sub-goals."""


def _ordered_set() -> dict[str, None]:
    return {}


class GoalGraph:
    def __init__(self) -> None:
        self.goals: dict[str, GoalNode] = {}
        self.dependents: dict[str, dict[str, None]] = {}
        self.children: dict[str, dict[str, None]] = {}
        self.informed_by: dict[str, dict[str, None]] = {}
        self.by_status: dict[str, dict[str, None]] = {}

    def __len__(self) -> int:
        return len(self.goals)

    def __contains__(self, goal_id: object) -> bool:
        return goal_id in self.goals

    # --- changing ----------------------------------------------------------------------

    @staticmethod
    def _relink(
        index: dict[str, dict[str, None]], owner: str, old: Iterable[str], new: Iterable[str]
    ) -> None:
        old_set, new_set = set(old), set(new)
        for target in old_set - new_set:
            bucket = index.get(target)
            if bucket is not None:
                bucket.pop(owner, None)
                if not bucket:
                    del index[target]
        for target in new:
            if target not in old_set:
                index.setdefault(target, _ordered_set())[owner] = None

    def put(self, goal: GoalNode) -> None:
        old = self.goals.get(goal.id)
        self.goals[goal.id] = goal
        if old is None or old.status != goal.status:
            if old is not None:
                self.by_status.get(old.status, {}).pop(goal.id, None)
            self.by_status.setdefault(goal.status, _ordered_set())[goal.id] = None
        if old is None or old.depends_on != goal.depends_on:
            self._relink(self.dependents, goal.id, old.depends_on if old else (), goal.depends_on)
        if old is None or old.informs != goal.informs:
            self._relink(self.informed_by, goal.id, old.informs if old else (), goal.informs)
        if old is None or old.parent_id != goal.parent_id:
            self._relink(
                self.children,
                goal.id,
                [old.parent_id] if old and old.parent_id else [],
                [goal.parent_id] if goal.parent_id else [],
            )

    def drop(self, goal_id: str) -> None:
        old = self.goals.pop(goal_id, None)
        if old is None:
            return
        self.by_status.get(old.status, {}).pop(goal_id, None)
        self._relink(self.dependents, goal_id, old.depends_on, ())
        self._relink(self.informed_by, goal_id, old.informs, ())
        if old.parent_id:
            self._relink(self.children, goal_id, [old.parent_id], ())
        self.dependents.pop(goal_id, None)
        self.children.pop(goal_id, None)
        self.informed_by.pop(goal_id, None)

    # --- reading -----------------------------------------------------------------------

    def ids_with_status(self, status: str) -> Iterator[str]:
        return iter(list(self.by_status.get(status, {})))

    def count(self, status: str) -> int:
        return len(self.by_status.get(status, {}))

    def dependency_path(self, start: str, target: str) -> list[str] | None:
        """A depends_on path start -> ... -> target, or None (breadth first)."""
        if start == target:
            return [start]
        came_from: dict[str, str] = {start: start}
        queue = deque([start])
        goals = self.goals
        while queue:
            node = queue.popleft()
            goal = goals.get(node)
            if goal is None:
                continue
            for nxt in goal.depends_on:
                if nxt in came_from:
                    continue
                came_from[nxt] = node
                if nxt == target:
                    path = [nxt]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                queue.append(nxt)
        return None

    def ancestors(self, goal_id: str) -> list[str]:
        """Parent chain, nearest first; stops at a repeated id rather than looping."""
        out: list[str] = []
        seen = {goal_id}
        goal = self.goals.get(goal_id)
        while goal is not None and goal.parent_id and goal.parent_id not in seen:
            out.append(goal.parent_id)
            seen.add(goal.parent_id)
            goal = self.goals.get(goal.parent_id)
        return out

    def depth(self, goal_id: str) -> int:
        """1 for a root goal, 2 for its sub-goal, ..."""
        return len(self.ancestors(goal_id)) + 1

    def descendants_deepest_first(self, goal_id: str) -> list[str]:
        """Every sub-goal below goal_id, children after their own sub-goals (post-order)."""
        out: list[str] = []
        top = self.children.get(goal_id, {})
        stack: list[tuple[str, bool]] = [(c, False) for c in reversed(top)]
        seen: set[str] = {goal_id}
        while stack:
            node, expanded = stack.pop()
            if expanded:
                out.append(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(self.children.get(node, {})))
        return out

    def is_ready(self, goal: GoalNode) -> bool:
        if goal.status != "pending":
            return False
        goals = self.goals
        for dep in goal.depends_on:
            if goals[dep].status != "completed":
                return False
        return all(goals[c].status != "active" for c in goal.conflicts_with)

    def ready(self) -> list[GoalNode]:
        """Pending goals whose dependencies are complete and no conflict is active;
        highest priority first, then oldest."""
        goals = self.goals
        out = [goals[gid] for gid in self.by_status.get("pending", {}) if self.is_ready(goals[gid])]
        out.sort(key=lambda g: (-g.priority, g.seq))
        return out
