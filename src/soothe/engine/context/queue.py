"""The goal queue for ``soothe worker``: claim a ready goal, hold it by a lease, let go.

On PostgreSQL many workers share one store. The ready query runs IN the database (never
on a worker's in-memory copy): pending, every ``depends_on`` completed, no
``conflicts_with`` goal active or leased, highest priority then oldest. A claim takes a
transaction-level advisory lock (so two workers never both pass the conflict check for
two conflicting goals), picks the row with ``FOR UPDATE SKIP LOCKED`` and writes
``lease_owner`` / ``lease_until``. The worker renews the lease while the goal runs; a
worker that dies stops renewing, and once ``lease_until`` has passed the goal (still
``active`` in the store) is claimable again: the next worker resumes it from its
checkpoints. The status moves themselves still go through the ContextEngine's one
transition function (the worker activates the goal after a claim).

On SQLite the data-dir lock allows one process, so the queue is the engine's own ready
list and a lease is not needed.

A goal tied to a folder (``soothe goals add --workspace DIR``) is claimed only by a worker
whose workspace is that folder (``runs_here``); a goal tied to none, by any worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CLAIM_LOCK = 7357002

READY_SQL = """
SELECT g.id, g.status FROM goals g
WHERE (g.status = 'pending' OR (g.status = 'active' AND g.lease_owner IS NOT NULL))
  AND (g.workspace = '' OR g.workspace = %(workspace)s)
  AND (g.lease_until IS NULL OR g.lease_until < clock_timestamp())
  AND NOT EXISTS (
    SELECT 1 FROM goal_edges e JOIN goals d ON d.id = e.dst
    WHERE e.kind = 'depends_on' AND e.src = g.id AND d.status <> 'completed')
  AND NOT EXISTS (
    SELECT 1 FROM goal_edges e JOIN goals c ON c.id = e.dst
    WHERE e.kind = 'conflicts_with' AND e.src = g.id
      AND (c.status = 'active' OR c.lease_until > clock_timestamp()))
ORDER BY g.priority DESC, g.seq
LIMIT 1
FOR UPDATE OF g SKIP LOCKED
"""


@dataclass(frozen=True)
class Claim:
    goal_id: str
    resumed: bool
    """The goal was active under a lease that expired (its worker died): resume it."""


def runs_here(goal: Any, workspace: str) -> bool:
    """A goal tied to a folder (``goals add --workspace DIR``) runs only where that folder
    is the workspace; a goal tied to none runs anywhere."""
    return not goal.workspace or goal.workspace == workspace


class GoalQueue:
    def __init__(
        self, context: Any, owner: str, lease_s: float = 30.0, workspace: str = ""
    ) -> None:
        self.context = context
        self.owner = owner
        self.lease_s = lease_s
        self.workspace = workspace
        """This worker's workspace (resolved): goals tied to another folder are not ours."""

    @property
    def shared(self) -> bool:
        return bool(self.context.shared)

    async def claim(self) -> Claim | None:
        """The next ready goal, now leased to us (None: nothing is ready)."""
        if not self.shared:
            ready = [g for g in self.context.ready_goals() if runs_here(g, self.workspace)]
            return Claim(ready[0].id, False) if ready else None
        from psycopg.rows import tuple_row

        pool = self.context.store.pool
        async with pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (CLAIM_LOCK,))
            async with conn.cursor(row_factory=tuple_row) as cur:
                await cur.execute(READY_SQL, {"workspace": self.workspace})
                row = await cur.fetchone()
                if row is None:
                    return None
                await cur.execute(
                    "UPDATE goals SET lease_owner = %s, lease_until = clock_timestamp() "
                    "+ make_interval(secs => %s) WHERE id = %s",
                    (self.owner, self.lease_s, row[0]),
                )
        await self.context.refresh()  # the goal as the store has it now
        return Claim(str(row[0]), row[1] == "active")

    async def renew(self, goal_id: str) -> bool:
        """Extend our lease; False when it is no longer ours (it expired and was taken).
        A lease released by the goal's move (suspended: nobody holds it) is not lost:
        the worker's follower sees the move and stops the work itself."""
        if not self.shared:
            return True
        rows = await self.context.store.execute(
            "UPDATE goals SET lease_until = clock_timestamp() + make_interval(secs => %s) "
            "WHERE id = %s AND lease_owner = %s RETURNING id",
            (self.lease_s, goal_id, self.owner),
        )
        if rows:
            return True
        rows = await self.context.store.execute(
            "SELECT lease_owner FROM goals WHERE id = %s", (goal_id,)
        )
        return bool(rows) and rows[0][0] is None

    async def release(self, goal_id: str) -> None:
        if not self.shared:
            return
        await self.context.store.execute(
            "UPDATE goals SET lease_owner = NULL, lease_until = NULL "
            "WHERE id = %s AND lease_owner = %s",
            (goal_id, self.owner),
        )

    async def lease_of(self, goal_id: str) -> tuple[str | None, Any]:
        """(owner, until) of a goal's lease, for tests and ``goals list``."""
        if not self.shared:
            return None, None
        rows = await self.context.store.execute(
            "SELECT lease_owner, lease_until FROM goals WHERE id = %s", (goal_id,)
        )
        return (rows[0][0], rows[0][1]) if rows else (None, None)
