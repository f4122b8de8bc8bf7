"""tests/context/test_threads_ledger.py on PostgreSQL. The ledger cap differs on a shared
store: an engine trims only its own entries (its id block), and opening with a smaller cap
shows fewer entries but deletes none (other processes' entries are not its to drop)."""

from pathlib import Path
from typing import Any

from soothe.engine.context import ContextEngine
from tests.context.test_threads_ledger import *  # noqa: F403

globals().pop("test_ledger_cap", None)


async def test_ledger_cap_pg(db_path: Path, bus: Any) -> None:
    engine = await ContextEngine.open(db_path, bus=bus, ledger_max_entries=5)
    goal = await engine.create_goal("g")
    for n in range(12):
        await engine.append_ledger(goal.id if n % 3 else None, "a", f"m{n}", "p", thread_id="t")
    assert [e.content for e in engine.get_ledger_entries()] == [f"m{n}" for n in range(7, 12)]
    await engine.close()
    again = await ContextEngine.open(db_path, ledger_max_entries=5)
    assert [e.content for e in again.get_ledger_entries()] == [f"m{n}" for n in range(7, 12)]
    await again.close()
    smaller = await ContextEngine.open(db_path, ledger_max_entries=2)
    assert [e.content for e in smaller.get_ledger_entries()] == ["m10", "m11"]
    await smaller.close()
    everything = await ContextEngine.open(db_path)
    assert len(everything.get_ledger_entries()) == 5, "a load with a smaller cap deletes none"
    await everything.close()


async def test_ledger_trim_keeps_other_processes_entries(db_path: Path) -> None:
    """Two engines on one store, both capped: each trims its own entries only."""
    first = await ContextEngine.open(db_path, ledger_max_entries=3)
    await first.append_ledger(None, "a", "first's", "p", thread_id="t")
    second = await ContextEngine.open(db_path, ledger_max_entries=3)
    try:
        for n in range(6):
            await second.append_ledger(None, "a", f"second {n}", "p", thread_id="t")
        everything = await ContextEngine.open(db_path)
        try:
            kept = [e.content for e in everything.get_ledger_entries()]
        finally:
            await everything.close()
        assert kept == ["first's", "second 3", "second 4", "second 5"]
    finally:
        await first.close()
        await second.close()
