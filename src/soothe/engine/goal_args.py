"""The flags a goal takes where it is typed: ``/goal TEXT --done-when "…" --budget …``
and ``soothe goals add TEXT --done-when "…" --budget …`` read the same words here.

A budget is ``calls=40,tokens=200k,time=30m``: any of the three keys, in any order;
``k``/``m`` multiply tokens and calls by 1,000/1,000,000; time takes ``s``, ``m`` or ``h``
(seconds when bare). Bad input raises ``ValueError`` with a one-line message.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from soothe.engine.goal_contract import GoalBudget

_COUNT = re.compile(r"^(\d+(?:\.\d+)?)([km]?)$", re.IGNORECASE)
_TIME = re.compile(r"^(\d+(?:\.\d+)?)([smh]?)$", re.IGNORECASE)
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000}
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}
BUDGET_KEYS = ("calls", "tokens", "time")


def parse_budget(text: str, base: GoalBudget | None = None) -> GoalBudget:
    """``calls=40,tokens=200k,time=30m`` over ``base`` (the keys not named keep its
    value). ``KEY=none`` lifts that cap."""
    values = (base or GoalBudget()).model_dump()
    parts = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()]
    if not parts:
        raise ValueError("empty budget: use calls=N,tokens=N,time=30m")
    for part in parts:
        key, sep, raw = part.partition("=")
        key = key.strip().lower()
        raw = raw.strip()
        if not sep or key not in BUDGET_KEYS or not raw:
            raise ValueError(f"bad budget '{part}': use calls=N, tokens=N or time=30m")
        name = "time_s" if key == "time" else key
        if raw.lower() in {"none", "off", "-"}:
            values[name] = None
            continue
        match = (_TIME if key == "time" else _COUNT).match(raw)
        if match is None:
            raise ValueError(f"bad budget '{part}': {key} takes a number, e.g. {_example(key)}")
        number = float(match.group(1))
        if key == "time":
            values[name] = number * _SECONDS[match.group(2).lower()]
        else:
            values[name] = int(number * _SCALE[match.group(2).lower()])
        if values[name] <= 0:
            raise ValueError(f"bad budget '{part}': a cap must be above zero")
    return GoalBudget(**values)


def _example(key: str) -> str:
    return {"calls": "calls=40", "tokens": "tokens=200k", "time": "time=30m"}[key]


def format_budget(budget: GoalBudget) -> str:
    """``calls=40,tokens=200k,time=30m`` (only the set caps; ``""`` for none)."""
    parts: list[str] = []
    if budget.calls is not None:
        parts.append(f"calls={budget.calls}")
    if budget.tokens is not None:
        parts.append(f"tokens={short_count(budget.tokens)}")
    if budget.time_s is not None:
        parts.append(f"time={short_time(budget.time_s)}")
    return ",".join(parts)


def short_count(n: int) -> str:
    """200000 -> 200k, 1500000 -> 1.5m, 950 -> 950."""
    for suffix, scale in (("m", 1_000_000), ("k", 1_000)):
        if n >= scale:
            text = f"{n / scale:.1f}".removesuffix(".0")
            return f"{text}{suffix}"
    return str(n)


def short_time(seconds: float) -> str:
    """1800 -> 30m, 5400 -> 90m, 7200 -> 2h, 45 -> 45s."""
    s = round(seconds)
    if s >= 3600 and s % 3600 == 0:
        return f"{s // 3600}h"
    if s >= 60 and s % 60 == 0:
        return f"{s // 60}m"
    return f"{s}s"


@dataclass(frozen=True)
class GoalArgs:
    """A goal's text and the flags typed with it."""

    text: str
    criteria: list[str] = field(default_factory=list)
    budget: GoalBudget | None = None


def parse_goal_args(line: str) -> GoalArgs:
    """Split what follows ``/goal``: the text, then any ``--done-when "…"`` (repeatable)
    and one ``--budget …``. Quotes group words; an unquoted criterion runs to the next
    flag. ``--done-when=…`` and ``--budget=…`` work too."""
    try:
        words = shlex.split(line)
    except ValueError as exc:  # an unclosed quote
        raise ValueError(f"bad goal: {exc}") from None
    text: list[str] = []
    criteria: list[str] = []
    budget: GoalBudget | None = None
    current: list[str] | None = None
    flag = ""

    def close() -> None:
        nonlocal budget
        if current is None:
            return
        value = " ".join(current).strip()
        if not value:
            raise ValueError(f"{flag} needs a value")
        if flag == "--done-when":
            criteria.append(value)
        else:
            budget = parse_budget(value, budget)

    for word in words:
        name, eq, rest = word.partition("=")
        if name in {"--done-when", "--budget"}:
            close()
            flag, current = name, ([rest] if eq else [])
        elif word.startswith("--"):
            raise ValueError(f"unknown flag {word}: /goal takes --done-when and --budget")
        elif current is not None:
            current.append(word)
        else:
            text.append(word)
    close()
    description = " ".join(text).strip()
    if not description:
        raise ValueError("a goal needs its text before the flags")
    return GoalArgs(description, criteria, budget)
