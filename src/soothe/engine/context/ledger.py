"""The message ledger in memory: every entry in order, plus per-goal and per-thread tails.

``max_entries=0`` keeps everything (the default: later model calls benefit from full
history); a positive value drops the oldest entries past the cap. The per-goal and
per-thread deques let the projection read the newest entries without scanning the rest.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence

from soothe.engine.context.models import LedgerEntry


class Ledger:
    def __init__(self, max_entries: int = 0) -> None:
        self.max_entries = max(0, max_entries)
        self._all: deque[LedgerEntry] = deque()
        self._by_goal: dict[str, deque[LedgerEntry]] = {}
        self._thread_level: dict[str, deque[LedgerEntry]] = {}
        self.next_id = 1

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(list(self._all))

    def _bucket(self, entry: LedgerEntry) -> deque[LedgerEntry]:
        if entry.goal_id is not None:
            return self._by_goal.setdefault(entry.goal_id, deque())
        return self._thread_level.setdefault(entry.thread_id, deque())

    def add(self, entry: LedgerEntry) -> None:
        self._all.append(entry)
        self._bucket(entry).append(entry)
        self.next_id = max(self.next_id, entry.id + 1)
        self.prune()

    def overflow_cutoff(self, adding: int = 1) -> int | None:
        """The smallest id that survives after adding ``adding`` entries, if any must go."""
        if not self.max_entries:
            return None
        excess = len(self._all) + adding - self.max_entries
        if excess <= 0:
            return None
        if excess >= len(self._all):
            return self.next_id
        return self._all[excess].id

    def prune(self) -> None:
        while self.max_entries and len(self._all) > self.max_entries:
            old = self._all.popleft()
            bucket = self._bucket(old)
            if bucket and bucket[0] is old:
                bucket.popleft()
            else:  # not expected: buckets keep the global order
                bucket.remove(old)

    def drop_goal(self, goal_id: str) -> None:
        if self._by_goal.pop(goal_id, None) is not None:
            self._all = deque(e for e in self._all if e.goal_id != goal_id)

    def drop_thread(self, thread_id: str) -> None:
        self._all = deque(e for e in self._all if e.thread_id != thread_id)
        self._thread_level.pop(thread_id, None)
        for goal_id, bucket in list(self._by_goal.items()):
            kept = deque(e for e in bucket if e.thread_id != thread_id)
            if kept:
                self._by_goal[goal_id] = kept
            else:
                del self._by_goal[goal_id]

    def entries(
        self,
        goal_id: str | None = None,
        phases: Sequence[str] | None = None,
        thread_id: str | None = None,
    ) -> list[LedgerEntry]:
        source: Iterable[LedgerEntry]
        source = self._by_goal.get(goal_id, ()) if goal_id is not None else self._all
        wanted = set(phases) if phases is not None else None
        return [
            e
            for e in source
            if (wanted is None or e.phase in wanted)
            and (thread_id is None or e.thread_id == thread_id)
        ]

    def tail(
        self, goal_id: str, thread_id: str, limit: int, phases: Sequence[str] | None = None
    ) -> list[LedgerEntry]:
        """The newest ``limit`` entries of the goal and of its thread (entries without a
        goal), oldest first. Reads only as far back as it needs."""
        wanted = set(phases) if phases is not None else None

        def newest(bucket: deque[LedgerEntry] | None) -> list[LedgerEntry]:
            out: list[LedgerEntry] = []
            if bucket:
                for entry in reversed(bucket):
                    if wanted is None or entry.phase in wanted:
                        out.append(entry)
                        if len(out) >= limit:
                            break
            return out

        merged = newest(self._by_goal.get(goal_id))
        if thread_id:
            merged += newest(self._thread_level.get(thread_id))
        merged.sort(key=lambda e: e.id)
        return merged[-limit:] if limit > 0 else []
