"""SQLite persistence for the ContextEngine: schema, migrations, atomic writes, loading.

One database file in WAL mode, opened through aiosqlite with autocommit off the table
(``isolation_level=None``): every change the engine makes is a list of statements run as
ONE callable on aiosqlite's worker thread between ``BEGIN IMMEDIATE`` and ``COMMIT``, so no
other coroutine sharing the connection can slip a statement into the middle of it, and a
failure rolls the whole change back.

The schema version is ``PRAGMA user_version`` and belongs to this module. Other modules that
keep tables in the same file track their own versions in ``module_versions`` (see
``ContextEngine.migrate_module``).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from soothe.engine.bytesafe import escape_in
from soothe.engine.context.errors import StoreError
from soothe.engine.context.models import (
    EvidenceEntry,
    GoalNode,
    LedgerEntry,
    StepNode,
    ThreadMessage,
    ThreadRecord,
)

T = TypeVar("T")

Op = tuple[str, Sequence[Any]]

MIGRATIONS: list[list[str]] = [
    # v1
    [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE goals (
            id TEXT PRIMARY KEY, seq INTEGER NOT NULL, description TEXT NOT NULL,
            priority INTEGER NOT NULL, status TEXT NOT NULL, parent_id TEXT,
            source TEXT NOT NULL, retry_count INTEGER NOT NULL, max_retries INTEGER NOT NULL,
            send_back_count INTEGER NOT NULL, max_send_backs INTEGER NOT NULL,
            attempts_after_crash INTEGER NOT NULL, topic TEXT NOT NULL, findings TEXT NOT NULL,
            report TEXT NOT NULL, error TEXT NOT NULL, thread_id TEXT NOT NULL, loop_id TEXT,
            created_at REAL NOT NULL, updated_at REAL NOT NULL, started_at REAL,
            finished_at REAL)""",
        "CREATE INDEX goals_thread ON goals (thread_id)",
        """CREATE TABLE goal_edges (
            kind TEXT NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL,
            PRIMARY KEY (kind, src, dst))""",
        "CREATE INDEX goal_edges_dst ON goal_edges (dst)",
        """CREATE TABLE steps (
            goal_id TEXT NOT NULL, id TEXT NOT NULL, position INTEGER NOT NULL,
            description TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
            dependencies TEXT NOT NULL, dropped_dependencies TEXT NOT NULL,
            iteration INTEGER NOT NULL, expected_output TEXT NOT NULL, questions TEXT NOT NULL,
            result_summary TEXT NOT NULL, error TEXT NOT NULL, tokens INTEGER NOT NULL,
            duration_s REAL NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL,
            PRIMARY KEY (goal_id, id))""",
        """CREATE TABLE evidence (
            id TEXT PRIMARY KEY, goal_id TEXT NOT NULL, n INTEGER NOT NULL, kind TEXT NOT NULL,
            summary TEXT NOT NULL, content TEXT NOT NULL, step_id TEXT,
            created_at REAL NOT NULL)""",
        "CREATE INDEX evidence_goal ON evidence (goal_id, n)",
        """CREATE TABLE ledger (
            id INTEGER PRIMARY KEY, goal_id TEXT, thread_id TEXT NOT NULL, role TEXT NOT NULL,
            content TEXT NOT NULL, phase TEXT NOT NULL, created_at REAL NOT NULL)""",
        "CREATE INDEX ledger_goal ON ledger (goal_id)",
        "CREATE INDEX ledger_thread ON ledger (thread_id)",
        """CREATE TABLE threads (
            id TEXT PRIMARY KEY, title TEXT NOT NULL, created_at REAL NOT NULL,
            last_active REAL NOT NULL)""",
        """CREATE TABLE thread_messages (
            id INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, role TEXT NOT NULL,
            content TEXT NOT NULL, created_at REAL NOT NULL)""",
        "CREATE INDEX thread_messages_thread ON thread_messages (thread_id, id)",
        "CREATE TABLE module_versions (module TEXT PRIMARY KEY, version INTEGER NOT NULL)",
    ],
    # v2: what the screen showed, per thread (events in order, a step's tokens coalesced)
    [
        """CREATE TABLE transcript (
            id INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, data TEXT NOT NULL)""",
        "CREATE INDEX transcript_thread ON transcript (thread_id, id)",
    ],
    # v3: a goal's done-when criteria, its budget and its spend (JSON, see GOAL_JSON)
    [
        "ALTER TABLE goals ADD COLUMN criteria TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE goals ADD COLUMN budget TEXT NOT NULL DEFAULT '{}'",
        "ALTER TABLE goals ADD COLUMN spent TEXT NOT NULL DEFAULT '{}'",
    ],
    # v4: the folder a goal is tied to ('' = none; soothe goals add --workspace)
    ["ALTER TABLE goals ADD COLUMN workspace TEXT NOT NULL DEFAULT ''"],
]
SCHEMA_VERSION = len(MIGRATIONS)

GOAL_COLUMNS: tuple[str, ...] = (
    "id",
    "seq",
    "description",
    "priority",
    "status",
    "parent_id",
    "source",
    "retry_count",
    "max_retries",
    "send_back_count",
    "max_send_backs",
    "attempts_after_crash",
    "topic",
    "findings",
    "report",
    "error",
    "thread_id",
    "loop_id",
    "created_at",
    "updated_at",
    "started_at",
    "finished_at",
    "criteria",
    "budget",
    "spent",
    "workspace",
)
GOAL_JSON: frozenset[str] = frozenset({"criteria", "budget", "spent"})
"""Goal columns stored as JSON text (pydantic models and tuples of them)."""
EDGE_KINDS: tuple[str, ...] = ("depends_on", "informs", "conflicts_with")
STEP_COLUMNS: tuple[str, ...] = (
    "goal_id",
    "id",
    "position",
    "description",
    "kind",
    "status",
    "dependencies",
    "dropped_dependencies",
    "iteration",
    "expected_output",
    "questions",
    "result_summary",
    "error",
    "tokens",
    "duration_s",
    "created_at",
    "updated_at",
)
_STEP_JSON = ("dependencies", "dropped_dependencies", "questions")
EVIDENCE_COLUMNS = ("id", "goal_id", "n", "kind", "summary", "content", "step_id", "created_at")
LEDGER_COLUMNS = ("id", "goal_id", "thread_id", "role", "content", "phase", "created_at")

UPSERT_GOAL = (
    f"INSERT OR REPLACE INTO goals ({', '.join(GOAL_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(GOAL_COLUMNS))})"
)
UPSERT_STEP = (
    f"INSERT OR REPLACE INTO steps ({', '.join(STEP_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(STEP_COLUMNS))})"
)
INSERT_EVIDENCE = (
    f"INSERT INTO evidence ({', '.join(EVIDENCE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(EVIDENCE_COLUMNS))})"
)
INSERT_LEDGER = (
    f"INSERT INTO ledger ({', '.join(LEDGER_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(LEDGER_COLUMNS))})"
)
INSERT_EDGE = "INSERT OR IGNORE INTO goal_edges (kind, src, dst) VALUES (?, ?, ?)"
DELETE_EDGE = "DELETE FROM goal_edges WHERE kind = ? AND src = ? AND dst = ?"
SET_META = "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"


def goal_value(goal: GoalNode, column: str) -> Any:
    """A goal's column as stored: JSON text for the columns in ``GOAL_JSON``."""
    value = getattr(goal, column)
    if column not in GOAL_JSON:
        return value
    if isinstance(value, tuple):
        return json.dumps([item.model_dump() for item in value])
    return json.dumps(value.model_dump(exclude_defaults=True))


def goal_row(goal: GoalNode) -> tuple[Any, ...]:
    return tuple(goal_value(goal, c) for c in GOAL_COLUMNS)


def step_row(step: StepNode) -> tuple[Any, ...]:
    return tuple(
        json.dumps(list(getattr(step, c))) if c in _STEP_JSON else getattr(step, c)
        for c in STEP_COLUMNS
    )


def evidence_row(entry: EvidenceEntry) -> tuple[Any, ...]:
    return tuple(getattr(entry, c) for c in EVIDENCE_COLUMNS)


def ledger_row(entry: LedgerEntry) -> tuple[Any, ...]:
    return tuple(getattr(entry, c) for c in LEDGER_COLUMNS)


def goal_ops(old: GoalNode | None, new: GoalNode | None) -> list[Op]:
    """The statements that turn the stored ``old`` goal into ``new`` (None: absent)."""
    ops: list[Op] = []
    if new is None:
        if old is not None:
            ops.append(("DELETE FROM goals WHERE id = ?", (old.id,)))
            ops.append(("DELETE FROM goal_edges WHERE src = ?", (old.id,)))
        return ops
    if old is None:
        ops.append((UPSERT_GOAL, goal_row(new)))
    else:  # only the columns that changed: on a shared store the others may be newer
        changed = [c for c in GOAL_COLUMNS[1:] if getattr(old, c) != getattr(new, c)]
        if changed:
            sets = ", ".join(f"{c} = ?" for c in changed)
            values = tuple(goal_value(new, c) for c in changed)
            ops.append((f"UPDATE goals SET {sets} WHERE id = ?", (*values, new.id)))
    for kind in EDGE_KINDS:
        before: tuple[str, ...] = getattr(old, kind) if old is not None else ()
        after: tuple[str, ...] = getattr(new, kind)
        if before == after:
            continue
        gone = set(before) - set(after)
        ops.extend((DELETE_EDGE, (kind, new.id, dst)) for dst in before if dst in gone)
        kept = set(before)
        ops.extend((INSERT_EDGE, (kind, new.id, dst)) for dst in after if dst not in kept)
    return ops


def goal_removal_ops(goal_id: str) -> list[Op]:
    """What goes with a removed goal besides its row (see ``goal_ops``)."""
    return [
        ("DELETE FROM goal_edges WHERE dst = ?", (goal_id,)),
        ("DELETE FROM steps WHERE goal_id = ?", (goal_id,)),
        ("DELETE FROM evidence WHERE goal_id = ?", (goal_id,)),
        ("DELETE FROM ledger WHERE goal_id = ?", (goal_id,)),
    ]


def step_removal_op(goal_id: str, step_id: str) -> Op:
    return ("DELETE FROM steps WHERE goal_id = ? AND id = ?", (goal_id, step_id))


def ledger_trim_op(cutoff: int) -> Op:
    """Drop the ledger entries older than ``cutoff`` (the cap on its size)."""
    return ("DELETE FROM ledger WHERE id < ?", (cutoff,))


def insert_thread_op(record: ThreadRecord) -> Op:
    return (
        "INSERT INTO threads (id, title, created_at, last_active) VALUES (?, ?, ?, ?)",
        (record.id, record.title, record.created_at, record.last_active),
    )


def touch_thread_op(record: ThreadRecord) -> Op:
    return (
        "UPDATE threads SET last_active = ?, title = ? WHERE id = ?",
        (record.last_active, record.title, record.id),
    )


def thread_removal_ops(thread_id: str) -> list[Op]:
    """A thread's row, messages and thread-level ledger (its goals go one by one)."""
    return [
        ("DELETE FROM ledger WHERE thread_id = ?", (thread_id,)),
        ("DELETE FROM thread_messages WHERE thread_id = ?", (thread_id,)),
        ("DELETE FROM transcript WHERE thread_id = ?", (thread_id,)),
        ("DELETE FROM threads WHERE id = ?", (thread_id,)),
    ]


def insert_message_op(message: ThreadMessage) -> Op:
    return (
        "INSERT INTO thread_messages (id, thread_id, role, content, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (message.id, message.thread_id, message.role, message.content, message.created_at),
    )


def transcript_ops(thread_id: str, records: Sequence[str]) -> list[Op]:
    sql = "INSERT INTO transcript (thread_id, data) VALUES (?, ?)"
    return [(sql, (thread_id, record)) for record in records]


def _atomically(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


def _run_ops(conn: sqlite3.Connection, ops: Sequence[Op]) -> None:
    execute = conn.execute
    for sql, params in ops:
        execute(sql, storable(params))


def storable(params: Sequence[Any]) -> Sequence[Any]:
    """``params`` with lone surrogates in their text written out (``bytesafe.escape``):
    SQLite (and PostgreSQL) refuse text that is not UTF-8, so the store takes what it is
    given and keeps it escaped, as it was shown."""
    return escape_in(params)


@dataclass
class Loaded:
    """Everything read back from the file at open."""

    goals: list[GoalNode] = field(default_factory=list)
    steps: list[StepNode] = field(default_factory=list)
    evidence: list[EvidenceEntry] = field(default_factory=list)
    ledger: list[LedgerEntry] = field(default_factory=list)
    threads: list[ThreadRecord] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    last_message_id: int = 0
    next_ledger_id: int = 0
    """The next ledger id to hand out; 0: one past the newest loaded (a shared store
    numbers each process's entries in its own block)."""


async def _refuse_foreign(db: aiosqlite.Connection, path: str) -> None:
    """Leave a database that is not ours (another program's tables, or a newer soothe's
    schema) exactly as it is: refuse it before anything writes to it."""
    async with db.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: database schema v{version} is newer than this soothe "
            f"(v{SCHEMA_VERSION}); upgrade soothe or use another data dir"
        )
    if version == 0:
        async with db.execute("SELECT name FROM sqlite_master WHERE type = 'table'") as cursor:
            tables = [str(r[0]) for r in await cursor.fetchall()]
        if tables:
            shown = ", ".join(sorted(tables)[:5])
            raise StoreError(f"{path}: not a soothe database (it has other tables: {shown})")


async def connect(location: str, **kwargs: Any) -> aiosqlite.Connection:
    """``aiosqlite.connect``, but a file that cannot be opened (a directory in its place,
    no permission) ends its worker thread before the error is raised: aiosqlite queues
    the thread's stop without waiting for it, and a thread that answers after the event
    loop closed prints a traceback (``call_soon_threadsafe`` on a closed loop)."""
    pending = aiosqlite.connect(location, **kwargs)
    try:
        return await pending
    except Exception:
        await asyncio.to_thread(pending._thread.join, 5.0)
        raise


class Store:
    dialect = "sqlite"

    def __init__(self, db: aiosqlite.Connection, path: str) -> None:
        self.db = db
        self.path = path

    @classmethod
    async def open(cls, path: str | Path) -> Store:
        location = str(path)
        if location != ":memory:":
            Path(location).expanduser().parent.mkdir(parents=True, exist_ok=True)
            location = str(Path(location).expanduser())
        db = await connect(location, isolation_level=None)
        try:
            await db.execute("PRAGMA busy_timeout = 5000")
            await _refuse_foreign(db, location)  # before WAL mode rewrites the header
            if location != ":memory:":
                await db.execute("PRAGMA journal_mode = WAL")
            # WAL + NORMAL: a process crash loses nothing committed; only a power cut can
            # lose the last transactions.
            await db.execute("PRAGMA synchronous = NORMAL")
            store = cls(db, location)
            await store.migrate()
        except BaseException:
            await db.close()
            raise
        return store

    async def close(self) -> None:
        await self.db.close()

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(sqlite3_connection)`` on the worker thread inside one transaction."""
        # aiosqlite has no public "run this callable on your thread"; _execute is the
        # primitive every public method uses (stable across 0.17-0.22).
        return await self.db._execute(_atomically, self.db._conn, fn)

    async def write(self, ops: Sequence[Op]) -> None:
        if ops:
            await self.run(lambda conn: _run_ops(conn, ops))

    async def reserve_goal_ids(self, count: int, current: int) -> int:
        """The goal counter before ``count`` new goals (one process per file: memory's)."""
        return current

    async def messages(self, thread_id: str, limit: int | None = None) -> list[ThreadMessage]:
        """A thread's messages oldest first; with ``limit``, only the newest ``limit``."""
        sql = (
            "SELECT id, thread_id, role, content, created_at FROM thread_messages "
            "WHERE thread_id = ? ORDER BY id DESC"
        )
        params: tuple[Any, ...] = (thread_id,)
        if limit is not None:
            sql += " LIMIT ?"
            params = (thread_id, max(0, limit))
        async with self.db.execute(sql, params) as cursor:
            rows = await cursor.fetchall()
        return [
            ThreadMessage(id=r[0], thread_id=r[1], role=r[2], content=r[3], created_at=r[4])
            for r in reversed(list(rows))
        ]

    async def transcript(
        self,
        thread_id: str,
        before: int | None = None,
        limit: int | None = None,
        after: int | None = None,
    ) -> list[tuple[int, str]]:
        """A thread's transcript records ``(id, json)`` oldest first; ``before`` an id and
        ``limit`` give the newest ``limit`` older than it (paging back)."""
        sql, params, newest_first = transcript_page(thread_id, before, limit, after)
        async with self.db.execute(sql, params) as cursor:
            rows = list(await cursor.fetchall())
        return [(int(r[0]), str(r[1])) for r in (reversed(rows) if newest_first else rows)]

    async def transcript_id_of(self, thread_id: str, seq: int) -> int | None:
        """The id of the thread's newest record of the event numbered ``seq`` (a live
        block's origin, see ``Transcript``), or None."""
        sql = (
            "SELECT id FROM transcript WHERE thread_id = ?"
            " AND json_extract(data, '$.event.seq') = ? ORDER BY id DESC LIMIT 1"
        )
        async with self.db.execute(sql, (thread_id, seq)) as cursor:
            row = await cursor.fetchone()
        return int(row[0]) if row else None

    async def migrate(self) -> int:
        async with self.db.execute("PRAGMA user_version") as cursor:
            row = await cursor.fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: database schema v{version} is newer than this soothe "
                f"(v{SCHEMA_VERSION}); upgrade soothe or use another data dir"
            )
        for number in range(version + 1, SCHEMA_VERSION + 1):
            statements = MIGRATIONS[number - 1]

            def apply(
                conn: sqlite3.Connection, statements: list[str] = statements, number: int = number
            ) -> None:
                for sql in statements:
                    conn.execute(sql)
                conn.execute(f"PRAGMA user_version = {number}")

            try:
                await self.run(apply)
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: migration to v{number} failed: {exc}") from exc
        return SCHEMA_VERSION

    async def migrate_module(self, module: str, migrations: Sequence[Sequence[str]]) -> int:
        """Apply the forward migrations of another module that shares this file."""

        def apply(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT version FROM module_versions WHERE module = ?", (module,)
            ).fetchone()
            version = int(row[0]) if row else 0
            if version > len(migrations):
                raise StoreError(
                    f"{self.path}: {module} schema v{version} is newer than this soothe"
                )
            for number in range(version + 1, len(migrations) + 1):
                for sql in migrations[number - 1]:
                    conn.execute(sql)
            conn.execute(
                "INSERT OR REPLACE INTO module_versions (module, version) VALUES (?, ?)",
                (module, len(migrations)),
            )
            return len(migrations)

        return await self.run(apply)

    async def load(self, ledger_max_entries: int = 0) -> Loaded:
        def read(conn: sqlite3.Connection) -> dict[str, list[Any]]:
            if ledger_max_entries > 0:
                row = conn.execute(
                    "SELECT id FROM ledger ORDER BY id DESC LIMIT 1 OFFSET ?",
                    (ledger_max_entries - 1,),
                ).fetchone()
                if row is not None:
                    conn.execute("DELETE FROM ledger WHERE id < ?", (row[0],))
            return {
                "goals": conn.execute(
                    f"SELECT {', '.join(GOAL_COLUMNS)} FROM goals ORDER BY seq"
                ).fetchall(),
                "edges": conn.execute(
                    "SELECT kind, src, dst FROM goal_edges ORDER BY rowid"
                ).fetchall(),
                "steps": conn.execute(
                    f"SELECT {', '.join(STEP_COLUMNS)} FROM steps ORDER BY goal_id, position"
                ).fetchall(),
                "evidence": conn.execute(
                    f"SELECT {', '.join(EVIDENCE_COLUMNS)} FROM evidence ORDER BY goal_id, n"
                ).fetchall(),
                "ledger": conn.execute(
                    f"SELECT {', '.join(LEDGER_COLUMNS)} FROM ledger ORDER BY id"
                ).fetchall(),
                "threads": conn.execute(
                    "SELECT id, title, created_at, last_active FROM threads"
                ).fetchall(),
                "meta": conn.execute("SELECT key, value FROM meta").fetchall(),
                "last_message": conn.execute(
                    "SELECT coalesce(max(id), 0) FROM thread_messages"
                ).fetchall(),
            }

        raw = await self.run(read)
        edges: dict[str, dict[str, list[str]]] = {}
        for kind, src, dst in raw["edges"]:
            edges.setdefault(src, {}).setdefault(kind, []).append(dst)
        loaded = Loaded(meta=dict(raw["meta"]), last_message_id=int(raw["last_message"][0][0]))
        return decode_rows(loaded, raw, edges)


def decode_rows(
    loaded: Loaded, raw: Mapping[str, Any], edges: Mapping[str, Mapping[str, list[str]]]
) -> Loaded:
    """Fill ``loaded`` from the rows one load read (the same columns on every backend)."""
    empty: dict[str, list[str]] = {}
    for row in raw["goals"]:
        data = dict(zip(GOAL_COLUMNS, row, strict=True))
        mine = edges.get(data["id"], empty)
        for kind in EDGE_KINDS:
            data[kind] = tuple(mine.get(kind, ()))
        for key in GOAL_JSON:
            data[key] = json.loads(data[key])
        loaded.goals.append(GoalNode(**data))
    for row in raw["steps"]:
        data = dict(zip(STEP_COLUMNS, row, strict=True))
        for key in _STEP_JSON:
            data[key] = tuple(json.loads(data[key]))
        loaded.steps.append(StepNode(**data))
    loaded.evidence = [
        EvidenceEntry(**dict(zip(EVIDENCE_COLUMNS, row, strict=True))) for row in raw["evidence"]
    ]
    loaded.ledger = [
        LedgerEntry(**dict(zip(LEDGER_COLUMNS, row, strict=True))) for row in raw["ledger"]
    ]
    loaded.threads = [
        ThreadRecord(id=r[0], title=r[1], created_at=r[2], last_active=r[3]) for r in raw["threads"]
    ]
    return loaded


def transcript_page(
    thread_id: str, before: int | None, limit: int | None, after: int | None
) -> tuple[str, list[Any], bool]:
    """The query for a page of a thread's transcript (``?`` placeholders), its parameters,
    and whether its rows come newest first (paging back) and must be reversed."""
    sql = "SELECT id, data FROM transcript WHERE thread_id = ?"
    params: list[Any] = [thread_id]
    if before is not None:
        sql += " AND id < ?"
        params.append(before)
    newest_first = after is None
    if after is not None:  # the oldest ``limit`` newer than it (paging forward)
        sql += " AND id > ? ORDER BY id"
        params.append(after)
    else:
        sql += " ORDER BY id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(max(0, limit))
    return sql, params, newest_first
