"""Recall of past findings across threads: SQLite FTS5 with BM25 ranking, no network.

The table lives in the ContextEngine's database file; its schema version is tracked in
its own ``memory_meta`` row so the ContextEngine's migrations stay its own.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from soothe.engine.text import clip

SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
    text, thread_id UNINDEXED, goal_id UNINDEXED, kind UNINDEXED, created_at UNINDEXED
);
"""

_WORD = re.compile(r"[A-Za-z0-9_]{3,}")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "what",
        "how",
        "are",
        "was",
        "were",
        "you",
        "your",
        "about",
        "into",
        "have",
        "has",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "please",
        "tell",
        "show",
        "give",
        "list",
        "make",
    ]
)


@dataclass(frozen=True)
class Recalled:
    text: str
    thread_id: str
    goal_id: str
    kind: str
    score: float


def fts_query(text: str) -> str:
    """Turn free text into a safe FTS5 OR-query of its content words."""
    words = []
    for word in _WORD.findall(text.lower()):
        if word not in _STOP and word not in words:
            words.append(word)
    return " OR ".join(f'"{w}"' for w in words[:16])


class Memory:
    def __init__(self, db: Any, cross_thread: bool = True, max_chars: int = 1200) -> None:
        self.db = db
        self.cross_thread = cross_thread
        self.max_chars = max_chars

    async def setup(self) -> None:
        await self.db.executescript(SCHEMA)
        await self.db.commit()

    async def store(self, text: str, *, thread_id: str, goal_id: str = "", kind: str) -> None:
        text = text.strip()
        if not text:
            return
        await self.db.execute(
            "INSERT INTO memory_fts(text, thread_id, goal_id, kind, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (text[:4000], thread_id, goal_id, kind, time.time()),
        )
        await self.db.commit()

    async def recall(self, query: str, *, thread_id: str, limit: int = 3) -> list[Recalled]:
        match = fts_query(query)
        if not match or limit <= 0:
            return []
        sql = (
            "SELECT text, thread_id, goal_id, kind, bm25(memory_fts) AS score FROM memory_fts "
            "WHERE memory_fts MATCH ?"
        )
        params: list[Any] = [match]
        if not self.cross_thread:
            sql += " AND thread_id = ?"
            params.append(thread_id)
        sql += " ORDER BY score LIMIT ?"
        params.append(limit)
        async with self.db.execute(sql, params) as cursor:
            rows = await cursor.fetchall()
        return [Recalled(r[0], r[1], r[2], r[3], float(r[4])) for r in rows]

    def render(self, items: list[Recalled]) -> str:
        out: list[str] = []
        used = 0
        for item in items:
            # Only findings of goals that truly completed are stored (runner.agentic._verify).
            source = f"{item.kind} of goal {item.goal_id or '?'}, thread {item.thread_id}"
            line = f"- ({source}, completed) {' '.join(item.text.split())}"
            if used + len(line) > self.max_chars:
                line = clip(line, self.max_chars - used, flatten=False)
            out.append(line)
            used += len(line)
            if used >= self.max_chars:
                break
        return "\n".join(out)

    async def delete_thread(self, thread_id: str) -> None:
        await self.setup()
        await self.db.execute("DELETE FROM memory_fts WHERE thread_id = ?", (thread_id,))
        await self.db.commit()


class PgMemory(Memory):
    """The same recall on PostgreSQL: full-text search (``to_tsvector('english')``, the
    ``memory`` table of store_pg.py) ranked by ``ts_rank``; ``db`` is the psycopg pool."""

    async def setup(self) -> None:
        """The table comes with the store's schema (store_pg.PG_MIGRATIONS)."""

    async def _sql(self, sql: str, params: list[Any] | tuple[Any, ...]) -> list[Any]:
        from psycopg.rows import tuple_row

        async with self.db.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(sql, params)
            return list(await cur.fetchall()) if cur.description else []

    async def store(self, text: str, *, thread_id: str, goal_id: str = "", kind: str) -> None:
        text = text.strip()
        if not text:
            return
        await self._sql(
            "INSERT INTO memory (text, thread_id, goal_id, kind, created_at) "
            "VALUES (%s, %s, %s, %s, %s)",
            (text[:4000], thread_id, goal_id, kind, time.time()),
        )

    async def recall(self, query: str, *, thread_id: str, limit: int = 3) -> list[Recalled]:
        words = fts_query(query).replace('"', "").split(" OR ")
        words = [w for w in words if w]
        if not words or limit <= 0:
            return []
        sql = (
            "SELECT text, thread_id, goal_id, kind, -ts_rank(tsv, q) AS score "
            "FROM memory, to_tsquery('english', %s) q WHERE tsv @@ q"
        )
        params: list[Any] = [" | ".join(words)]
        if not self.cross_thread:
            sql += " AND thread_id = %s"
            params.append(thread_id)
        sql += " ORDER BY score, id LIMIT %s"
        params.append(limit)
        rows = await self._sql(sql, params)
        return [Recalled(r[0], r[1], r[2], r[3], float(r[4])) for r in rows]

    async def delete_thread(self, thread_id: str) -> None:
        await self._sql("DELETE FROM memory WHERE thread_id = %s", (thread_id,))


def memory_for(context: Any, cross_thread: bool = True) -> Memory:
    """The recall that suits the ContextEngine's store (SQLite FTS5 or PostgreSQL)."""
    if getattr(context.store, "dialect", "sqlite") == "postgresql":
        return PgMemory(context.db, cross_thread=cross_thread)
    return Memory(context.db, cross_thread=cross_thread)
