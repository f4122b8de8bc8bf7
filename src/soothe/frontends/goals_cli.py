"""``soothe goals VERB``: the goal queue that ``soothe worker`` drains, from the shell.

Verbs (``cli.GOAL_VERBS``): list, add, show, cancel, retry, suspend, resume, priority,
depend, undepend, remove. Each acts through the ContextEngine's public methods (its one
transition function, its one cycle check), never SQL; each takes ``--json`` (one JSON
object on stdout, stable keys; ``list`` one object per line).

Errors are one ``error:`` line: an unknown goal (exit 1, naming it), a move the goal's
state does not allow (exit 1, naming the state: ``error: G3 is completed: it cannot be
cancelled``), a dependency that closes a cycle (exit 1, naming the cycle), a missing or
extra argument (exit 2).

``--workspace DIR`` ties a goal to a folder (add): only a worker whose workspace is DIR
(``soothe worker --workspace DIR``, or one started in DIR) or a session working there runs
it; ``list --workspace DIR`` shows that folder's goals.

Works on both backends. On SQLite the data-dir lock allows one process at a time: a
change while the app or a worker holds the data dir says so in one line (exit 1); the
read-only verbs (list, show) read beside them. On PostgreSQL any number of processes
change the store at once, and a worker running a goal sees a change to it within a
second (``worker._follow``: a cancel or a suspend stops its run).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from soothe.engine.config import Settings
from soothe.engine.sanitize import one_line

QUEUE_THREAD = "goal queue"
"""The thread goals added without ``--thread`` go to."""

READ_ONLY = frozenset({"list", "show"})

# The participle each verb's refusal uses: "error: G3 is completed: it cannot be cancelled"
_PAST = {
    "cancel": "cancelled",
    "retry": "retried",
    "suspend": "suspended",
    "resume": "resumed",
}


class Refused(Exception):
    """One ``error:`` line and its exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


async def _queue_thread(session: Any) -> str:
    for thread in session.context.list_threads():
        if thread.title == QUEUE_THREAD:
            return str(thread.id)
    return str((await session.context.create_thread(QUEUE_THREAD)).id)


def _goal_id(text: str) -> str:
    """``g3`` or ``3`` is ``G3`` (goal ids are ``G<n>``)."""
    text = text.strip()
    if text.isdigit():
        return f"G{text}"
    if text[:1] in "gG" and text[1:].isdigit():
        return f"G{text[1:]}"
    return text


def _ids(text: str | None) -> list[str]:
    return [_goal_id(a) for a in (text or "").replace(" ", "").split(",") if a]


def _known(context: Any, goal_id: str) -> str:
    if not context.has_goal(goal_id):
        raise Refused(f"no goal {one_line(goal_id, 40)} (see `soothe goals list`)")
    return goal_id


# --- what a goal looks like on stdout ----------------------------------------------------


def goal_row(goal: Any) -> dict[str, Any]:
    """The keys of ``goals list --json`` (one object per goal), stable."""
    return {
        "id": goal.id,
        "status": goal.status,
        "description": goal.description,
        "depends_on": list(goal.depends_on),
        "priority": goal.priority,
        "thread_id": goal.thread_id,
        "loop_id": goal.loop_id,
        "workspace": goal.workspace or None,
    }


def goal_detail(context: Any, goal: Any) -> dict[str, Any]:
    """``goals show --json``: the row, the goal's other fields, its steps, its evidence
    (ids and summaries), its criteria with their verdicts, its budget and spend."""
    steps = sorted(context.step_dag(goal.id).steps.values(), key=lambda s: s.position)
    return {
        **goal_row(goal),
        "parent_id": goal.parent_id,
        "informs": list(goal.informs),
        "conflicts_with": list(goal.conflicts_with),
        "source": goal.source,
        "retry_count": goal.retry_count,
        "max_retries": goal.max_retries,
        "send_back_count": goal.send_back_count,
        "max_send_backs": goal.max_send_backs,
        "error": goal.error,
        "findings": goal.findings,
        "created_at": goal.created_at,
        "started_at": goal.started_at,
        "finished_at": goal.finished_at,
        "steps": [
            {
                "id": s.id,
                "status": s.status,
                "kind": s.kind,
                "description": s.description,
                "dependencies": list(s.dependencies),
                "result": s.result_summary,
                "error": s.error,
            }
            for s in steps
        ],
        "evidence": [
            {"id": e.id, "kind": e.kind, "step_id": e.step_id, "summary": e.summary}
            for e in context.evidence(goal.id)
        ],
        "criteria": [c.model_dump(mode="json") for c in goal.criteria],
        "budget": goal.budget.model_dump(mode="json"),
        "spent": goal.spent.model_dump(mode="json"),
    }


def _show_text(context: Any, goal: Any) -> list[str]:
    """``goals show``: the goal for a person (every stored text on one plain line)."""
    from soothe.engine.goal_args import format_budget, short_count, short_time

    detail = goal_detail(context, goal)
    lines = [f"{goal.id}  {goal.status}  p{goal.priority}  {one_line(goal.description)}"]
    for label, value in (
        ("thread", goal.thread_id),
        ("workspace", goal.workspace),
        ("depends on", ", ".join(goal.depends_on)),
        ("informs", ", ".join(goal.informs)),
        ("conflicts with", ", ".join(goal.conflicts_with)),
        ("parent", goal.parent_id or ""),
        ("retries", f"{goal.retry_count}/{goal.max_retries}" if goal.retry_count else ""),
        ("error", goal.error),
        ("findings", goal.findings),
    ):
        if value:
            lines.append(f"  {label}: {one_line(str(value), 300)}")
    if goal.criteria:
        from soothe.engine.goal_verdicts import criterion_line  # the app's and export's

        lines.append("  done when:")
        lines += [f"    {one_line(criterion_line(c), 400)}" for c in goal.criteria]
    caps = format_budget(goal.budget)
    spent = goal.spent
    if caps or spent.calls or spent.tokens:
        used = (
            f"calls {spent.calls}, tokens {short_count(spent.tokens)}, "
            f"time {short_time(spent.time_s)}"
        )
        lines.append(f"  budget: {caps or 'no caps'}; spent {used}")
    if detail["steps"]:
        lines.append("  steps:")
        for s in detail["steps"]:
            lines.append(f"    {s['id']:8} {s['status']:9} {one_line(s['description'], 120)}")
    if detail["evidence"]:
        lines.append("  evidence:")
        for e in detail["evidence"]:
            lines.append(f"    {e['id']:8} {e['kind']:10} {one_line(e['summary'], 120)}")
    return lines


def _print_goal(goal: Any, said: str, as_json: bool) -> None:
    print(json.dumps(goal_row(goal)) if as_json else said)


# --- the verbs ---------------------------------------------------------------------------


def _one(args: Any, verb: str, what: str = "ID") -> str:
    words = list(args.words or [])
    if len(words) != 1:
        problem = "needs" if not words else "takes one"
        raise Refused(f"`soothe goals {verb}` {problem} {what} (soothe goals {verb} {what})", 2)
    return _goal_id(words[0])


async def _add(session: Any, args: Any) -> int:
    context = session.context
    words = list(args.words or [])
    if not words or not words[0].strip():
        raise Refused("`soothe goals add` needs the goal's text", 2)
    if len(words) > 1:
        extra = one_line(" ".join(words[1:]), 60)
        raise Refused(f"`soothe goals add` takes one text; '{extra}' is extra (quote it)", 2)
    after = _ids(args.after)
    missing = [a for a in after if not context.has_goal(a)]
    if missing:
        raise Refused(f"no goal {', '.join(missing)} (see `soothe goals list`)")
    thread_id = args.thread or await _queue_thread(session)
    if context.get_thread(thread_id) is None:
        raise Refused(f"no thread '{one_line(thread_id, 40)}' (see `soothe threads`)")
    priority = 50 if args.priority is None else args.priority
    if not 0 <= priority <= 100:
        raise Refused(f"priority {priority} is outside 0-100", 2)
    criteria = [c.strip() for c in getattr(args, "done_when", None) or [] if c.strip()]
    goal = await context.create_goal(
        words[0],
        priority=priority,
        depends_on=after,
        thread_id=thread_id,
        source="user",
        criteria=criteria,
        workspace=_workspace(session, args),
        budget=_budget(args, None),  # None: the goals.budget default
    )
    _print_goal(goal, f"added {goal.id}", args.json)
    return 0


async def _list(session: Any, args: Any) -> int:
    if args.words:
        raise Refused("`soothe goals list` takes no argument (soothe goals show ID)", 2)
    folder = _workspace(session, args)
    for goal in session.context.list_goals():
        if folder and goal.workspace != folder:
            continue
        if args.json:
            print(json.dumps(goal_row(goal)))
        else:
            waits = f" after {','.join(goal.depends_on)}" if goal.depends_on else ""
            where = f" (in {one_line(goal.workspace)})" if goal.workspace and not folder else ""
            text = one_line(goal.description)  # a model's or a user's words
            print(f"{goal.id:6} {goal.status:10} p{goal.priority:<3} {text}{waits}{where}")
    return 0


def _workspace(session: Any, args: Any) -> str:
    """``--workspace DIR`` resolved ('' without it): add ties the goal to DIR (only a
    worker or a session working in DIR runs it), list shows DIR's goals."""
    if not getattr(args, "workspace", None):
        return ""
    return str(session.settings.tools.resolved_workspace())


async def _show(session: Any, args: Any) -> int:
    context = session.context
    goal = context.get_goal(_known(context, _one(args, "show")))
    if args.json:
        print(json.dumps(goal_detail(context, goal)))
    else:
        print("\n".join(_show_text(context, goal)))
    return 0


async def _move(session: Any, args: Any) -> int:
    """cancel, retry, suspend, resume: one move through the engine's transition path."""
    context, verb = session.context, args.action
    goal_id = _known(context, _one(args, verb))
    before = context.get_goal(goal_id).status
    reason = args.reason or f"soothe goals {verb}"
    if verb == "cancel":
        goal = await context.cancel_goal(goal_id, reason=reason)
    elif verb == "suspend":
        goal = await context.suspend_goal(goal_id, reason=reason)
    elif verb == "resume":
        await _raise_budget(context, goal_id, args)
        goal = await context.resume_goal(goal_id, reason=reason)
    else:  # the user asked for it: a retry with a fresh budget (retry_count back to 0)
        goal = await context.retry_goal_fresh(goal_id)
    said = f"{goal.id} {goal.status}" + (" (no change)" if goal.status == before else "")
    _print_goal(goal, said, args.json)
    return 0


def _budget(args: Any, base: Any) -> Any:
    """``--budget`` read over ``base`` (None when not given); a bad one is refused."""
    from soothe.engine.goal_args import parse_budget

    if not getattr(args, "budget", None):
        return None
    try:
        return parse_budget(args.budget, base)
    except ValueError as exc:
        raise Refused(f"--budget: {exc}", 2) from None


async def _raise_budget(context: Any, goal_id: str, args: Any) -> None:
    """resume [--budget CAPS]: the caps named replace the goal's (the others stay); a
    goal still at one of its caps is not resumed (it would stop at once): one line says
    so and offers the cap raised."""
    from soothe.engine.goal_args import format_budget
    from soothe.engine.goal_budget import budget_reason, raised_budget, spend_line

    goal = context.get_goal(goal_id)
    budget = _budget(args, goal.budget) or goal.budget
    spent = context.goal_spend(goal_id)
    reached = budget_reason(budget, spent)
    if reached:
        offer = format_budget(raised_budget(budget, spent))
        raise Refused(
            f"{goal_id} is still at its {reached} (spent {spend_line(budget, spent)}): "
            f"resume it with a raised cap, e.g. soothe goals resume {goal_id} --budget {offer}"
        )
    if budget != goal.budget:
        await context.set_budget(goal_id, budget)


async def _priority(session: Any, args: Any) -> int:
    context = session.context
    words = list(args.words or [])
    if len(words) != 2 or not words[1].lstrip("-").isdigit():
        raise Refused(
            "`soothe goals priority` takes ID and N (0-100): soothe goals priority G3 80", 2
        )
    goal_id = _known(context, _goal_id(words[0]))
    priority = int(words[1])
    if not 0 <= priority <= 100:
        raise Refused(f"priority {priority} is outside 0-100", 2)
    goal = await context.set_priority(goal_id, priority)
    _print_goal(goal, f"{goal.id} priority {goal.priority}", args.json)
    return 0


async def _edges(session: Any, args: Any) -> int:
    """depend / undepend ID --on ID[,ID]."""
    context, verb = session.context, args.action
    goal_id = _known(context, _one(args, verb, "ID --on ID"))
    others = _ids(args.on)
    if not others:
        raise Refused(
            f"`soothe goals {verb}` needs --on ID (soothe goals {verb} {goal_id} --on G1)", 2
        )
    for other in others:
        _known(context, other)
    goal = context.get_goal(goal_id)
    if verb == "depend":
        from soothe.engine.context.errors import CycleError

        for other in others:
            try:
                goal = await context.add_dependency(goal_id, other)
            except CycleError as exc:
                cycle = " -> ".join(exc.cycle)
                why = f"{goal_id} cannot depend on {other}: that closes the cycle {cycle}"
                raise Refused(why) from exc
    else:
        for other in others:
            goal = await context.remove_dependency(goal_id, other)
    waits = ", ".join(goal.depends_on) or "nothing"
    _print_goal(goal, f"{goal.id} waits for {waits}", args.json)
    return 0


async def _remove(session: Any, args: Any) -> int:
    context = session.context
    goal_id = _known(context, _one(args, "remove"))
    await context.remove_goal(goal_id)
    print(json.dumps({"removed": goal_id}) if args.json else f"removed {goal_id}")
    return 0


VERBS: dict[str, Callable[[Any, Any], Coroutine[Any, Any, int]]] = {
    "list": _list,
    "add": _add,
    "show": _show,
    "cancel": _move,
    "retry": _move,
    "suspend": _move,
    "resume": _move,
    "priority": _priority,
    "depend": _edges,
    "undepend": _edges,
    "remove": _remove,
}


# The options of some verbs only: given with another verb they are refused, not ignored.
_OPTION_VERBS = {
    "after": ("--after", ("add",)),
    "priority": ("--priority", ("add",)),
    "thread": ("--thread", ("add",)),
    "done_when": ("--done-when", ("add",)),
    "budget": ("--budget", ("add", "resume")),
    "on": ("--on", ("depend", "undepend")),
    "reason": ("--reason", ("cancel", "suspend", "resume")),
    "workspace": ("--workspace", ("add", "list")),
}


def _misplaced(args: Any) -> Refused | None:
    for name, (flag, verbs) in _OPTION_VERBS.items():
        if getattr(args, name, None) not in (None, [], False) and args.action not in verbs:
            takes = " and ".join(f"`soothe goals {v}`" for v in verbs)
            return Refused(f"{flag} goes with {takes}, not `soothe goals {args.action}`", 2)
    return None


def _refusal(exc: Exception, verb: str) -> Refused | None:
    """The engine's refusal as the one line a person reads (None: not a refusal)."""
    from soothe.engine.context.errors import (
        ContextError,
        GoalInUse,
        GoalNotFound,
        IllegalTransition,
    )

    if isinstance(exc, IllegalTransition):
        past = _PAST.get(verb, f"moved to {exc.to_status}")
        why = f" ({exc.why})" if exc.why else ""
        return Refused(f"{exc.goal_id} is {exc.from_status}: it cannot be {past}{why}")
    if isinstance(exc, GoalInUse):
        return Refused(f"{exc.goal_id} cannot be removed: {exc.why}")
    if isinstance(exc, GoalNotFound):
        return Refused(f"no goal {one_line(exc.goal_id, 40)} (see `soothe goals list`)")
    if isinstance(exc, ContextError):
        return Refused(str(exc))
    return None


async def _goals(settings: Settings, args: Any) -> int:
    from soothe.engine.session import Session

    verb = args.action
    if (misplaced := _misplaced(args)) is not None:
        print(f"error: {misplaced}", file=sys.stderr)
        return misplaced.code
    session = Session(settings)
    try:
        if verb in READ_ONLY:
            await session.open_storage()
            return await VERBS[verb](session, args)
        # A change: on SQLite the data-dir lock first (one process writes), then the
        # store as it is now; on PostgreSQL the store is shared and the lock is local.
        with session._exclusive():
            await session.open_storage()
            try:
                return await VERBS[verb](session, args)
            except Exception as exc:
                refused = _refusal(exc, verb)
                if refused is None:
                    raise
                raise refused from exc
    except Refused as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return exc.code
    finally:
        await session.close()


def run_goals(settings: Settings, args: Any) -> int:
    return asyncio.run(_goals(settings, args))
