"""The storage backend interface of the ContextEngine: SQLite (``store.Store``, the
default, one process per data dir) or PostgreSQL (``store_pg.PgStore``, many workers on
one goal store). Both take the same statements (``store.py`` builds them) and return the
same ``Loaded`` state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from soothe.engine.context.models import ThreadMessage
from soothe.engine.context.store import Loaded, Op

T = TypeVar("T")


class StoreBackend(Protocol):
    dialect: str
    """``"sqlite"`` or ``"postgresql"``."""

    path: str
    """Where it is, for messages (a DSN without its password)."""

    @property
    def db(self) -> Any:
        """The aiosqlite connection, or the psycopg pool."""

    async def close(self) -> None: ...

    async def run(self, fn: Callable[[Any], T]) -> T: ...

    async def write(self, ops: Sequence[Op]) -> None: ...

    async def reserve_goal_ids(self, count: int, current: int) -> int: ...

    async def messages(self, thread_id: str, limit: int | None = None) -> list[ThreadMessage]: ...

    async def transcript(
        self,
        thread_id: str,
        before: int | None = None,
        limit: int | None = None,
        after: int | None = None,
    ) -> list[tuple[int, str]]: ...

    async def transcript_id_of(self, thread_id: str, seq: int) -> int | None: ...

    async def migrate_module(self, module: str, migrations: Sequence[Sequence[str]]) -> int: ...

    async def load(self, ledger_max_entries: int = 0) -> Loaded: ...
