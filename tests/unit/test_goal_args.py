"""The flags a goal takes: ``--done-when`` (repeatable) and ``--budget``."""

from __future__ import annotations

import pytest

from soothe.engine.context import GoalBudget
from soothe.engine.goal_args import format_budget, parse_budget, parse_goal_args


def test_budget_reads_units_and_keeps_the_order_free() -> None:
    assert parse_budget("calls=40,tokens=200k,time=30m") == GoalBudget(
        calls=40, tokens=200_000, time_s=1800.0
    )
    assert parse_budget("time=2h tokens=1.5m") == GoalBudget(tokens=1_500_000, time_s=7200.0)
    assert parse_budget("time=45") == GoalBudget(time_s=45.0)


def test_budget_raises_over_a_base_and_lifts_with_none() -> None:
    base = GoalBudget(calls=40, tokens=200_000)
    assert parse_budget("tokens=400k", base) == GoalBudget(calls=40, tokens=400_000)
    assert parse_budget("calls=none", base) == GoalBudget(tokens=200_000)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty budget"),
        ("cost=3", "bad budget 'cost=3'"),
        ("tokens=lots", "tokens takes a number"),
        ("calls=0", "above zero"),
        ("time=5d", "time takes a number"),
    ],
)
def test_a_bad_budget_says_what_is_wrong_in_one_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        parse_budget(text)
    assert "\n" not in str(caught.value)


def test_format_is_what_parse_reads() -> None:
    budget = GoalBudget(calls=40, tokens=200_000, time_s=1800.0)
    assert format_budget(budget) == "calls=40,tokens=200k,time=30m"
    assert parse_budget(format_budget(budget)) == budget
    assert format_budget(GoalBudget()) == ""


def test_goal_args_split_text_criteria_and_budget() -> None:
    args = parse_goal_args(
        'tidy the README --done-when "README has a Usage section" '
        "--done-when no TODO left --budget calls=20,time=10m"
    )
    assert args.text == "tidy the README"
    assert args.criteria == ["README has a Usage section", "no TODO left"]
    assert args.budget == GoalBudget(calls=20, time_s=600.0)
    assert parse_goal_args("just text").criteria == []
    assert parse_goal_args("x --budget=tokens=5k").budget == GoalBudget(tokens=5000)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--done-when x", "needs its text"),
        ("fix it --done-when", "--done-when needs a value"),
        ("fix it --frob 3", "unknown flag --frob"),
        ('fix it --done-when "open', "bad goal"),
    ],
)
def test_bad_goal_args_are_one_line_errors(line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_goal_args(line)
