"""The runner's shared plumbing: what it holds, threads, outcomes, failures, history."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from soothe.engine.events import (
    RunFailed,
)
from soothe.engine.llm.budget import run_budget
from soothe.engine.loop.strange_loop import StrangeLoop
from soothe.engine.outcome import OutcomeStatus, RunOutcome

if TYPE_CHECKING:
    from soothe.engine.agent.core import CoreAgent
    from soothe.engine.agent.workspace import Workspace
    from soothe.engine.bus import EventBus
    from soothe.engine.classify import UnifiedClassifier
    from soothe.engine.config import Settings
    from soothe.engine.context import ContextEngine
    from soothe.engine.llm.hub import ModelHub
    from soothe.engine.loader import Grounding
    from soothe.engine.memory import Memory


TERMINAL = ("completed", "failed", "cancelled")


@dataclass
class Groundwork:
    """What a request is grounded in before any goal exists: the loader's findings, the
    workspace they come from, the invoked skill (name and text)."""

    grounding: Grounding
    workspace: Workspace
    skill_name: str = ""
    skill_text: str = ""


MAX_HISTORY_CHARS = 2000


class RunnerBase:
    def __init__(
        self,
        *,
        settings: Settings,
        bus: EventBus,
        context: ContextEngine,
        hub: ModelHub,
        loop: StrangeLoop,
        agent: CoreAgent,
        classifier: UnifiedClassifier,
        memory: Memory,
    ) -> None:
        self.settings = settings
        self.bus = bus
        self.context = context
        self.hub = hub
        self.loop = loop
        self.agent = agent
        self.classifier = classifier
        self.memory = memory
        self._settling: set[asyncio.Future[None]] = set()

    async def ensure_thread(self, thread_id: str | None, text: str = "") -> str:
        if thread_id:
            if self.context.get_thread(thread_id) is None:
                raise LookupError(f"no thread '{thread_id}' (see `soothe threads`)")
            return thread_id
        from soothe.engine.loader import split_task

        title = " ".join(split_task(text)[0].split())[:60] or "new thread"
        return (await self.context.create_thread(title)).id

    async def _bootstrap(self, goal_id: str, work: Groundwork) -> None:
        """The loader's facts, the project instructions and the skill as ``bootstrap``
        evidence of the goal (stable ids), which the projection puts in every prompt (of
        this goal and of its sub-goals)."""
        from soothe.engine.context.projection import bootstrap_summary
        from soothe.engine.loader import load_instructions

        grounding = work.grounding
        if not grounding.task:  # a request the loader did not ground still gets these
            grounding.instructions = load_instructions(work.workspace)
        facts = grounding.facts()
        if work.skill_text:
            facts.insert(
                1 if grounding.instructions else 0,
                (bootstrap_summary("skill", work.skill_name), work.skill_text),
            )
        for summary, content in facts:
            await self.context.add_evidence(
                goal_id, kind="bootstrap", summary=summary, content=content
            )

    # --- plumbing ---------------------------------------------------------------------

    def _goal_ids(self, thread_id: str) -> set[str]:
        return set(self._goal_ids_ordered(thread_id))

    def _goal_ids_ordered(self, thread_id: str) -> list[str]:
        return [g.id for g in self.context.list_goals(thread_id=thread_id)]

    def _outcome(
        self,
        thread_id: str,
        status: OutcomeStatus,
        started: float,
        calls_before: int,
        goals_before: set[str],
        *,
        answer: str = "",
        error: str = "",
        kind: str = "",
        touched: tuple[str, ...] = (),
    ) -> RunOutcome:
        """What the run ended with: the goals it created or resumed, its figures."""
        new = [g for g in self._goal_ids_ordered(thread_id) if g not in goals_before]
        return RunOutcome(
            thread_id=thread_id,
            status=status,
            answer=answer,
            error=error,
            kind=kind,
            goal_ids=tuple(dict.fromkeys((*touched, *new))),
            model_calls=self.hub.usage.calls - calls_before,
            duration_s=time.perf_counter() - started,
        )

    def _settle(self, work: Awaitable[None]) -> Awaitable[None]:
        """``work`` runs to its end even though the run was cancelled (shielded), and
        ``wait_settled`` (the session's close) waits for it: the goals it suspends are
        written before the store closes, not cut off by it."""
        task = asyncio.ensure_future(work)
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)
        return asyncio.shield(task)

    async def wait_settled(self, timeout: float = 5.0) -> None:
        if self._settling:
            await asyncio.wait(list(self._settling), timeout=timeout)

    async def _interrupted(self, thread_id: str) -> None:
        # a fact of the run (the transcript keeps it, so a reopened thread says so too)
        self.bus.publish(
            RunFailed(error="interrupted by the user", kind="interrupted", thread_id=thread_id)
        )
        await self._suspend_active(thread_id, "interrupted by the user")
        await self.context.add_message(thread_id, "system", "run interrupted")

    async def _failed(self, thread_id: str, exc: Exception) -> tuple[str, str]:
        """A run that raised: report it, and pause (not abandon) the goals it left active,
        so the thread can be resumed once the cause (e.g. a stopped server) is fixed."""
        message, kind = _one_line(exc), _kind(exc)
        await self._suspend_active(thread_id, f"run failed: {message}"[:300])
        self.bus.publish(RunFailed(error=message, kind=kind, thread_id=thread_id))
        await self.context.add_message(thread_id, "error", message)
        return message, kind

    async def _suspend_active(self, thread_id: str, reason: str) -> None:
        for goal in self.context.list_goals(thread_id=thread_id):
            if goal.status == "active":
                await self.context.suspend_goal(goal.id, reason=reason)

    async def _guarded(
        self, thread_id: str, work: Callable[[str], Awaitable[tuple[str, tuple[str, ...]]]]
    ) -> RunOutcome:
        """Errors and interrupts of a resume end like those of a request (``_route``)."""
        started = time.perf_counter()
        calls_before = self.hub.usage.calls
        before = self._goal_ids(thread_id)
        try:
            with run_budget(self.settings.run):  # run.deadline, run.max_model_calls
                answer, touched = await work(thread_id)
        except asyncio.CancelledError:
            await self._settle(self._interrupted(thread_id))
            raise
        except Exception as exc:
            error, kind = await self._failed(thread_id, exc)
            return self._outcome(
                thread_id, "failed", started, calls_before, before, error=error, kind=kind
            )
        return self._outcome(
            thread_id, "answered", started, calls_before, before, answer=answer, touched=touched
        )

    async def _history(self, thread_id: str) -> str:
        messages = await self.context.messages(thread_id, limit=12)
        lines = [f"{m.role}: {' '.join(m.content.split())}" for m in messages]
        text = "\n".join(lines)
        return text[-MAX_HISTORY_CHARS:]


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, sqlite3.Error):  # a store write failed (a full disk): which file
        from soothe.engine.storage_errors import storage_problem

        return storage_problem(exc)
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())[:400]


def _kind(exc: BaseException) -> str:
    if isinstance(exc, sqlite3.Error):
        return "storage"
    kind = getattr(exc, "kind", None)
    return str(kind) if kind else type(exc).__name__
