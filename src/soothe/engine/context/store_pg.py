"""PostgreSQL persistence for the ContextEngine, beside the SQLite store (``store.py``).

The same statements as the SQLite store (``store.py`` builds every change as a list of
``(sql, params)``), translated once per statement to PostgreSQL (``%s`` placeholders,
``ON CONFLICT`` upserts), run in ONE transaction per change on a connection of a shared
psycopg pool (the LangGraph checkpointer uses the same pool).

Many processes share one database, so the ids the engine hands out in memory are made
safe across processes:

- goal ids: ``reserve_goal_ids`` takes the next ids from the ``meta`` counter atomically;
- ledger and message ids: each open store takes an id block from a sequence
  (``BLOCK`` ids per block) and numbers its own entries inside it;
- transcript ids are the database's own (an identity column).

The schema version is the one row of ``soothe_schema``; a newer version, or a database
with other tables and no such row, is refused before anything is written.

The goal queue (claims with leases, for ``soothe worker``) is in ``queue.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from soothe.engine.context.errors import StoreError
from soothe.engine.context.models import (
    ThreadMessage,
)
from soothe.engine.context.store import (
    EVIDENCE_COLUMNS,
    GOAL_COLUMNS,
    LEDGER_COLUMNS,
    STEP_COLUMNS,
    Loaded,
    Op,
    decode_rows,
    ledger_trim_op,
    storable,
    transcript_page,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

T = TypeVar("T")

BLOCK = 1 << 32
"""Ledger and message ids per open store (a process numbers its entries in its block)."""

PG_MIGRATIONS: list[list[str]] = [
    # v1: the SQLite v1 + v2 tables, the goal lease, memory search, the id blocks
    [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE goals (
            id TEXT PRIMARY KEY, seq BIGINT NOT NULL, description TEXT NOT NULL,
            priority INTEGER NOT NULL, status TEXT NOT NULL, parent_id TEXT,
            source TEXT NOT NULL, retry_count INTEGER NOT NULL, max_retries INTEGER NOT NULL,
            send_back_count INTEGER NOT NULL, max_send_backs INTEGER NOT NULL,
            attempts_after_crash INTEGER NOT NULL, topic TEXT NOT NULL, findings TEXT NOT NULL,
            report TEXT NOT NULL, error TEXT NOT NULL, thread_id TEXT NOT NULL, loop_id TEXT,
            created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
            started_at DOUBLE PRECISION, finished_at DOUBLE PRECISION,
            lease_owner TEXT, lease_until TIMESTAMPTZ)""",
        "CREATE INDEX goals_thread ON goals (thread_id)",
        "CREATE INDEX goals_status ON goals (status, priority DESC, seq)",
        """CREATE TABLE goal_edges (
            n BIGINT GENERATED ALWAYS AS IDENTITY, kind TEXT NOT NULL, src TEXT NOT NULL,
            dst TEXT NOT NULL, PRIMARY KEY (kind, src, dst))""",
        "CREATE INDEX goal_edges_dst ON goal_edges (dst)",
        """CREATE TABLE steps (
            goal_id TEXT NOT NULL, id TEXT NOT NULL, position INTEGER NOT NULL,
            description TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
            dependencies TEXT NOT NULL, dropped_dependencies TEXT NOT NULL,
            iteration INTEGER NOT NULL, expected_output TEXT NOT NULL, questions TEXT NOT NULL,
            result_summary TEXT NOT NULL, error TEXT NOT NULL, tokens BIGINT NOT NULL,
            duration_s DOUBLE PRECISION NOT NULL, created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (goal_id, id))""",
        """CREATE TABLE evidence (
            id TEXT PRIMARY KEY, goal_id TEXT NOT NULL, n INTEGER NOT NULL, kind TEXT NOT NULL,
            summary TEXT NOT NULL, content TEXT NOT NULL, step_id TEXT,
            created_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX evidence_goal ON evidence (goal_id, n)",
        """CREATE TABLE ledger (
            id BIGINT PRIMARY KEY, goal_id TEXT, thread_id TEXT NOT NULL, role TEXT NOT NULL,
            content TEXT NOT NULL, phase TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX ledger_goal ON ledger (goal_id)",
        "CREATE INDEX ledger_thread ON ledger (thread_id)",
        """CREATE TABLE threads (
            id TEXT PRIMARY KEY, title TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
            last_active DOUBLE PRECISION NOT NULL)""",
        """CREATE TABLE thread_messages (
            id BIGINT PRIMARY KEY, thread_id TEXT NOT NULL, role TEXT NOT NULL,
            content TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX thread_messages_thread ON thread_messages (thread_id, id)",
        "CREATE TABLE module_versions (module TEXT PRIMARY KEY, version INTEGER NOT NULL)",
        """CREATE TABLE transcript (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, thread_id TEXT NOT NULL,
            data TEXT NOT NULL)""",
        "CREATE INDEX transcript_thread ON transcript (thread_id, id)",
        """CREATE TABLE memory (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, text TEXT NOT NULL,
            thread_id TEXT NOT NULL, goal_id TEXT NOT NULL, kind TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED)""",
        "CREATE INDEX memory_tsv ON memory USING GIN (tsv)",
        "CREATE INDEX memory_thread ON memory (thread_id)",
        "CREATE SEQUENCE soothe_id_block START 1",
    ],
    # v2: a goal's done-when criteria, its budget and its spend (JSON, see GOAL_JSON)
    [
        "ALTER TABLE goals ADD COLUMN criteria TEXT NOT NULL DEFAULT '[]'",
        "ALTER TABLE goals ADD COLUMN budget TEXT NOT NULL DEFAULT '{}'",
        "ALTER TABLE goals ADD COLUMN spent TEXT NOT NULL DEFAULT '{}'",
    ],
    # v3: the folder a goal is tied to ('' = none; soothe goals add --workspace)
    ["ALTER TABLE goals ADD COLUMN workspace TEXT NOT NULL DEFAULT ''"],
]
PG_SCHEMA_VERSION = len(PG_MIGRATIONS)

_LEDGER_TRIM = ledger_trim_op(0)[0]
_LEDGER_TRIM_OWN = "DELETE FROM ledger WHERE id >= %s AND id < %s"

_PRIMARY_KEYS = {
    "goals": ("id",),
    "steps": ("goal_id", "id"),
    "meta": ("key",),
    "module_versions": ("module",),
}
_REPLACE = re.compile(r"INSERT OR REPLACE INTO (\w+) \(([^)]*)\)(.*)", re.S)
_TRANSLATED: dict[str, str] = {}


def translate(sql: str) -> str:
    """One of ``store.py``'s SQLite statements in PostgreSQL (cached per statement)."""
    done = _TRANSLATED.get(sql)
    if done is not None:
        return done
    out = sql.replace("?", "%s")
    match = _REPLACE.match(out)
    if match:
        table, cols, rest = match.groups()
        keys = _PRIMARY_KEYS[table]
        names = [c.strip() for c in cols.split(",")]
        sets = [f"{c} = EXCLUDED.{c}" for c in names if c not in keys]
        if table == "meta":  # counters only grow, whichever process writes last
            sets = [
                "value = CASE WHEN meta.key = 'goal_counter' THEN "
                "greatest(meta.value::bigint, EXCLUDED.value::bigint)::text "
                "ELSE EXCLUDED.value END"
            ]
        out = (
            f"INSERT INTO {table} ({cols}){rest} ON CONFLICT ({', '.join(keys)}) "
            f"DO UPDATE SET {', '.join(sets)}"
        )
    elif out.startswith("INSERT OR IGNORE INTO "):
        out = (
            "INSERT INTO " + out.removeprefix("INSERT OR IGNORE INTO ") + " ON CONFLICT DO NOTHING"
        )
    _TRANSLATED[sql] = out
    return out


_GOAL_UPDATE = re.compile(r"UPDATE goals SET (.*) WHERE id = \?$", re.S)
RELEASE_LEASE = (
    "UPDATE goals SET lease_owner = NULL, lease_until = NULL "
    "WHERE id = %s AND lease_owner IS NOT NULL"
)
LEASE_RELEASING = frozenset({"suspended"})
"""A goal moved to one of these lets go of its worker's lease in the same transaction
(the loop_id is cleared by the move): resumed, any worker may claim it."""


def lease_release(sql: str, params: Sequence[Any]) -> tuple[str, tuple[Any, ...]] | None:
    """The statement releasing a goal's lease when ``sql`` (store.py's partial goal
    update) moves the goal to a status in LEASE_RELEASING, else None."""
    match = _GOAL_UPDATE.match(sql)
    if match is None:
        return None
    columns = [part.split("=")[0].strip() for part in match.group(1).split(",")]
    if "status" not in columns or params[columns.index("status")] not in LEASE_RELEASING:
        return None
    return RELEASE_LEASE, (params[-1],)


def redact_dsn(dsn: str) -> str:
    """The DSN with its password replaced by ``***`` (URL or key=value form)."""
    dsn = re.sub(r"(://[^:/@?]*:)[^@/?]*@", r"\1***@", dsn)
    return re.sub(r"(password\s*=\s*)('[^']*'|\S+)", r"\1***", dsn, flags=re.I)


def pool_kwargs() -> dict[str, Any]:
    """Connection settings that suit both this store and LangGraph's AsyncPostgresSaver."""
    from psycopg.rows import dict_row

    return {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


async def open_pool(dsn: str, *, schema: str | None = None, max_size: int = 8) -> Any:
    """A psycopg pool on ``dsn`` (``schema``: the search_path, for tests)."""
    from psycopg_pool import AsyncConnectionPool

    kwargs = pool_kwargs()
    if schema:
        kwargs["options"] = f"-c search_path={schema}"
    pool = AsyncConnectionPool(
        dsn, min_size=1, max_size=max_size, kwargs=kwargs, open=False, timeout=30
    )
    try:
        await pool.open(wait=True, timeout=15)
    except Exception as exc:
        await pool.close()
        raise StoreError(f"{redact_dsn(dsn)}: cannot connect to PostgreSQL: {exc}") from exc
    return pool


async def prune_checkpoints(pool: Any, thread_id: str) -> int:
    """Delete a thread's step checkpoints from AsyncPostgresSaver's tables (threads
    ``{thread}/...``, as ``agent.journal.prune_thread`` does on SQLite); the rows gone."""
    prefix = thread_id + "/"
    gone = 0
    async with pool.connection() as conn, conn.transaction():
        for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints"):
            rows = await _rows(conn, "SELECT to_regclass(%s)", (table,))
            if rows[0][0] is None:  # the checkpointer never set up on this database
                continue
            async with conn.cursor() as cur:
                await cur.execute(
                    f"DELETE FROM {table} WHERE left(thread_id, %s) = %s", (len(prefix), prefix)
                )
                gone += max(cur.rowcount, 0)
    return gone


async def _rows(conn: AsyncConnection[Any], sql: str, params: Sequence[Any] = ()) -> list[Any]:
    from psycopg.rows import tuple_row

    async with conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute(sql, params)
        return list(await cur.fetchall())


class PgStore:
    """The ContextEngine's store on PostgreSQL (the same interface as ``store.Store``)."""

    dialect = "postgresql"

    def __init__(self, pool: AsyncConnectionPool[Any], path: str, owns_pool: bool) -> None:
        self.pool = pool
        self.path = path
        self._owns_pool = owns_pool
        self.block = 0
        """This store's id block (ledger and message ids in [block*BLOCK, +BLOCK))."""

    @classmethod
    async def open(cls, dsn: str = "", *, pool: Any = None, schema: str | None = None) -> PgStore:
        """Open on ``pool`` (shared with the checkpointer) or a new pool on ``dsn``."""
        owns = pool is None
        if pool is None:
            pool = await open_pool(dsn, schema=schema)
        store = cls(pool, redact_dsn(dsn) or "postgresql", owns)
        try:
            await store.migrate()
            async with pool.connection() as conn:
                rows = await _rows(conn, "SELECT nextval('soothe_id_block')")
            store.block = int(rows[0][0])
        except BaseException:
            if owns:
                await pool.close()
            raise
        return store

    async def close(self) -> None:
        if self._owns_pool:
            await self.pool.close()

    @property
    def db(self) -> Any:
        return self.pool

    async def run(self, fn: Callable[[Any], T]) -> T:
        raise StoreError("run_in_transaction takes a sqlite3 connection: not on PostgreSQL")

    async def write(self, ops: Sequence[Op]) -> None:
        if not ops:
            return
        async with self.pool.connection() as conn, conn.transaction(), conn.pipeline():
            for sql, params in ops:
                if sql == _LEDGER_TRIM:
                    # The cap trims this process's own entries (its id block) only: the
                    # ids of other processes' blocks say nothing about their age.
                    low = self.block * BLOCK
                    cutoff = min(int(params[0]), low + BLOCK)
                    await conn.execute(_LEDGER_TRIM_OWN, (low, cutoff))
                    continue
                await conn.execute(translate(sql), storable(params))
                released = lease_release(sql, params)
                if released is not None:
                    await conn.execute(*released)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """One statement (PostgreSQL text) in its own transaction; rows as tuples."""
        async with self.pool.connection() as conn, conn.transaction():
            from psycopg.rows import tuple_row

            async with conn.cursor(row_factory=tuple_row) as cur:
                await cur.execute(sql, params)
                return list(await cur.fetchall()) if cur.description else []

    async def reserve_goal_ids(self, count: int, current: int) -> int:
        """Take ``count`` goal numbers atomically; returns the counter before them."""
        rows = await self.execute(
            "INSERT INTO meta (key, value) VALUES ('goal_counter', %s) ON CONFLICT (key) "
            "DO UPDATE SET value = (meta.value::bigint + %s)::text RETURNING value",
            (str(count), count),
        )
        return int(rows[0][0]) - count

    async def messages(self, thread_id: str, limit: int | None = None) -> list[ThreadMessage]:
        sql = (
            "SELECT id, thread_id, role, content, created_at FROM thread_messages "
            "WHERE thread_id = %s ORDER BY created_at DESC, id DESC"
        )
        params: tuple[Any, ...] = (thread_id,)
        if limit is not None:
            sql += " LIMIT %s"
            params = (thread_id, max(0, limit))
        rows = await self.execute(sql, params)
        return [
            ThreadMessage(id=r[0], thread_id=r[1], role=r[2], content=r[3], created_at=r[4])
            for r in reversed(rows)
        ]

    async def transcript(
        self,
        thread_id: str,
        before: int | None = None,
        limit: int | None = None,
        after: int | None = None,
    ) -> list[tuple[int, str]]:
        sql, params, newest_first = transcript_page(thread_id, before, limit, after)
        rows = list(await self.execute(translate(sql), params))
        return [(int(r[0]), str(r[1])) for r in (reversed(rows) if newest_first else rows)]

    async def transcript_id_of(self, thread_id: str, seq: int) -> int | None:
        sql = (
            "SELECT id FROM transcript WHERE thread_id = %s"
            " AND ((data::json -> 'event' ->> 'seq')::bigint) = %s ORDER BY id DESC LIMIT 1"
        )
        rows = await self.execute(sql, [thread_id, seq])
        return int(rows[0][0]) if rows else None

    async def migrate(self) -> int:
        async with self.pool.connection() as conn, conn.transaction():
            # One migrating process at a time; the others wait and find the work done.
            await conn.execute("SELECT pg_advisory_xact_lock(7357001)")
            tables = [
                str(r[0])
                for r in await _rows(
                    conn,
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema()",
                )
            ]
            version = 0
            if "soothe_schema" in tables:
                rows = await _rows(conn, "SELECT version FROM soothe_schema")
                version = int(rows[0][0]) if rows else 0
            elif tables:
                shown = ", ".join(sorted(tables)[:5])
                raise StoreError(
                    f"{self.path}: not a soothe database (it has other tables: {shown})"
                )
            if version > PG_SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: database schema v{version} is newer than this soothe "
                    f"(v{PG_SCHEMA_VERSION}); upgrade soothe or use another database"
                )
            if version == 0:
                await conn.execute("CREATE TABLE soothe_schema (version INTEGER NOT NULL)")
                await conn.execute("INSERT INTO soothe_schema VALUES (0)")
            for number in range(version + 1, PG_SCHEMA_VERSION + 1):
                for sql in PG_MIGRATIONS[number - 1]:
                    await conn.execute(sql)
                await conn.execute("UPDATE soothe_schema SET version = %s", (number,))
        return PG_SCHEMA_VERSION

    async def migrate_module(self, module: str, migrations: Sequence[Sequence[str]]) -> int:
        async with self.pool.connection() as conn, conn.transaction():
            rows = await _rows(
                conn, "SELECT version FROM module_versions WHERE module = %s FOR UPDATE", (module,)
            )
            version = int(rows[0][0]) if rows else 0
            if version > len(migrations):
                raise StoreError(
                    f"{self.path}: {module} schema v{version} is newer than this soothe"
                )
            for number in range(version + 1, len(migrations) + 1):
                for sql in migrations[number - 1]:
                    await conn.execute(translate(sql))
            await conn.execute(
                translate("INSERT OR REPLACE INTO module_versions (module, version) VALUES (?, ?)"),
                (module, len(migrations)),
            )
        return len(migrations)

    async def load(self, ledger_max_entries: int = 0) -> Loaded:
        low, high = self.block * BLOCK, (self.block + 1) * BLOCK
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            ledger_sql = f"SELECT {', '.join(LEDGER_COLUMNS)} FROM ledger"
            if ledger_max_entries > 0:
                ledger_sql = (
                    f"SELECT * FROM ({ledger_sql} ORDER BY created_at DESC, id DESC "
                    f"LIMIT {int(ledger_max_entries)}) newest"
                )
            raw = {
                "goals": await _rows(
                    conn, f"SELECT {', '.join(GOAL_COLUMNS)} FROM goals ORDER BY seq"
                ),
                "edges": await _rows(conn, "SELECT kind, src, dst FROM goal_edges ORDER BY n"),
                "steps": await _rows(
                    conn, f"SELECT {', '.join(STEP_COLUMNS)} FROM steps ORDER BY goal_id, position"
                ),
                "evidence": await _rows(
                    conn, f"SELECT {', '.join(EVIDENCE_COLUMNS)} FROM evidence ORDER BY goal_id, n"
                ),
                "ledger": await _rows(conn, f"{ledger_sql} ORDER BY created_at, id"),
                "threads": await _rows(
                    conn, "SELECT id, title, created_at, last_active FROM threads"
                ),
                "meta": await _rows(conn, "SELECT key, value FROM meta"),
                "ledger_top": await _rows(
                    conn,
                    "SELECT coalesce(max(id), %s) FROM ledger WHERE id >= %s AND id < %s",
                    (low, low, high),
                ),
                "message_top": await _rows(
                    conn,
                    "SELECT coalesce(max(id), %s) FROM thread_messages WHERE id >= %s AND id < %s",
                    (low, low, high),
                ),
            }
        edges: dict[str, dict[str, list[str]]] = {}
        for kind, src, dst in raw["edges"]:
            edges.setdefault(src, {}).setdefault(kind, []).append(dst)
        loaded = Loaded(
            meta=dict(raw["meta"]),
            last_message_id=int(raw["message_top"][0][0]),
            next_ledger_id=int(raw["ledger_top"][0][0]) + 1,
        )
        return decode_rows(loaded, raw, edges)
