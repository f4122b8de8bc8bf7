"""A goal's done-when criteria, budget and spend are stored with it (schema v3)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from soothe.engine.context import ContextEngine, Criterion, GoalBudget, GoalSpend
from soothe.engine.context.store import MIGRATIONS, SCHEMA_VERSION


async def test_criteria_budget_and_spend_survive_a_reopen(db_path: Path) -> None:
    engine = await ContextEngine.open(db_path)
    goal = await engine.create_goal(
        "ship it",
        criteria=["the tests pass", "README names the flag"],
        budget=GoalBudget(calls=40, tokens=200_000, time_s=1800.0),
    )
    assert [c.text for c in goal.criteria] == ["the tests pass", "README names the flag"]
    assert all(c.verdict is None for c in goal.criteria)
    plain = await engine.create_goal("no contract")
    await engine.close()

    again = await ContextEngine.open(db_path)
    try:
        stored = again.get_goal(goal.id)
        assert stored.criteria == goal.criteria
        assert stored.budget == GoalBudget(calls=40, tokens=200_000, time_s=1800.0)
        assert stored.spent == GoalSpend()
        bare = again.get_goal(plain.id)
        assert bare.criteria == () and bare.budget == GoalBudget()
    finally:
        await again.close()


async def test_a_v2_database_gains_the_columns_with_empty_values(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    for statements in MIGRATIONS[:2]:
        for sql in statements:
            conn.execute(sql)
    conn.execute("PRAGMA user_version = 2")
    conn.execute(
        "INSERT INTO goals (id, seq, description, priority, status, parent_id, source,"
        " retry_count, max_retries, send_back_count, max_send_backs, attempts_after_crash,"
        " topic, findings, report, error, thread_id, loop_id, created_at, updated_at,"
        " started_at, finished_at) VALUES ('G1', 1, 'old goal', 50, 'completed', NULL,"
        " 'user', 0, 2, 0, 3, 0, '', 'found', '', '', '', NULL, 1.0, 2.0, NULL, 2.0)"
    )
    conn.commit()
    conn.close()

    engine = await ContextEngine.open(db_path)
    try:
        old = engine.get_goal("G1")
        assert old.description == "old goal" and old.findings == "found"
        assert old.criteria == () and old.budget == GoalBudget() and old.spent == GoalSpend()
        assert old.workspace == ""  # v4: tied to no folder
    finally:
        await engine.close()
    with sqlite3.connect(db_path) as check:
        assert check.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4


def test_a_criterion_keeps_its_verdict_and_evidence() -> None:
    checked = Criterion(text="x", verdict="met", reason="E-G1-2 shows it", evidence=("E-G1-2",))
    assert Criterion.model_validate(checked.model_dump()) == checked
