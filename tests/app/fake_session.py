"""FakeSession: the SessionAPI in memory, kept only for states the real Session cannot
reach on demand (the Pilot and snapshot tests run tests/app/real_harness.py's rig): the
busy board (five goals in five states from one request), 20,000 token events at once, a
start() held open before the first frame; and for the UI bench.

``run()`` replays a script: events are published on a real EventBus (the app reads them
there) and the call returns a RunOutcome; a ``Gate`` pauses the replay until the test
opens it. Goal commands change goals in memory and publish the events the engine would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from soothe.app.session_api import (
    EvidenceView,
    GoalView,
    ProviderStatus,
    StepView,
    ThreadSnapshot,
    ThreadView,
)
from soothe.engine import events as ev
from soothe.engine.bus import EventBus
from soothe.engine.config import Settings
from soothe.engine.interact import InteractBroker
from soothe.engine.outcome import RunOutcome


class Gate:
    """A pause point in a script: ``reached`` is set when the replay gets there."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self._open = asyncio.Event()

    def open(self) -> None:
        self._open.set()

    async def wait(self) -> None:
        self.reached.set()
        await self._open.wait()


@dataclass
class Tokens:
    """Publish ``count`` token events for one step, yielding to the loop every ``chunk``."""

    goal_id: str | None
    step_id: str | None
    count: int
    text: str = "tok "
    chunk: int = 200


ScriptItem = ev.EventBase | Gate | Tokens
Script = list[ScriptItem] | Callable[[str, bool], list[ScriptItem]]


def answer_script(answer: str, *, duration: float = 0.4) -> list[ScriptItem]:
    """A quick reply: classified as a quiz and answered directly."""
    return [
        ev.Classified(label="quiz", reason="a short factual question", answered=True),
        ev.Usage(model="fake-model", input_tokens=120, output_tokens=12),
        ev.FinalAnswer(text=answer),
        ev.RunFinished(duration_s=duration, model_calls=1),
    ]


@dataclass
class FakeSession:
    settings: Settings = field(default_factory=Settings)
    thread_id: str = "t-0001"
    model_label: str = "fake-model"
    provider_status: ProviderStatus = "reachable"
    script: Script = field(
        default_factory=lambda: lambda text, auto: answer_script(f"echo: {text}")
    )
    goal_script: list[ScriptItem] = field(default_factory=list)
    start_error: Exception | None = None
    start_gate: Gate | None = None
    models: list[str] = field(default_factory=lambda: ["fake-model", "fake-large"])
    threads: dict[str, ThreadSnapshot] = field(default_factory=dict)
    thread_meta: dict[str, ThreadView] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.bus = EventBus()
        self.broker = InteractBroker(self.bus)
        self._goals: dict[str, GoalView] = {}
        self._evidence: list[EvidenceView] = []
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.started = False
        self.closed = False
        self.interrupted = False
        self.runs = 0
        self._next_goal = 1
        self.server_error = ""
        self.bus.add_listener(self._track_server)

    def _track_server(self, event: ev.EventBase) -> None:
        """As the real Session: a run that cannot reach the server marks it unreachable."""
        if self.provider_status == "demo":
            return
        if isinstance(event, ev.RunFailed) and event.kind == "unreachable":
            self.provider_status = "unreachable"
            self.server_error = event.error
        elif isinstance(event, ev.RunFinished) and self.provider_status == "unreachable":
            self.provider_status = "reachable"

    # -- helpers for tests ---------------------------------------------------------------

    def publish(self, event: ev.EventBase) -> ev.EventBase:
        if not event.thread_id:
            event = event.model_copy(update={"thread_id": self.thread_id})
        self._track(event)
        return self.bus.publish(event)

    def _track(self, event: ev.EventBase) -> None:
        """Keep goals() in step with the events, the way the ContextEngine would."""
        gid = event.goal_id
        if isinstance(event, ev.GoalCreated) and gid:
            self._goals[gid] = GoalView(
                id=gid,
                description=event.description,
                priority=event.priority,
                parent_id=event.parent_id,
                depends_on=list(event.depends_on),
            )
        elif gid and gid in self._goals:
            goal = self._goals[gid]
            if isinstance(event, ev.GoalStatusChanged):
                update: dict[str, object] = {"status": event.to_status}
                if event.findings:
                    update["findings"] = event.findings
                if event.to_status == "failed" or event.will_retry:
                    update["error"] = event.error
                goal = goal.model_copy(update=update)
            elif isinstance(event, ev.PlanCreated):
                steps = [
                    StepView(
                        id=s.id,
                        description=s.description,
                        kind=s.kind,
                        dependencies=list(s.dependencies),
                    )
                    for s in event.steps
                ]
                goal = goal.model_copy(update={"steps": steps})
            elif isinstance(event, (ev.StepStarted, ev.StepCompleted, ev.StepFailed)):
                status = {
                    ev.StepStarted: "active",
                    ev.StepCompleted: "completed",
                    ev.StepFailed: "failed",
                }[type(event)]
                steps = [
                    s.model_copy(update={"status": status}) if s.id == event.step_id else s
                    for s in goal.steps
                ]
                goal = goal.model_copy(update={"steps": steps})
            self._goals[gid] = goal
        if isinstance(event, ev.EvidenceAdded):
            self._evidence.append(
                EvidenceView(
                    evidence_id=event.evidence_id,
                    kind=event.kind,
                    summary=event.summary,
                    content=event.content,
                    goal_id=event.goal_id,
                    step_id=event.step_id,
                )
            )

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        self.calls.append(("start", ()))
        if self.start_gate is not None:
            await self.start_gate.wait()
        if self.start_error is not None:
            raise self.start_error
        self.started = True

    async def close(self) -> None:
        self.closed = True

    # -- runs ----------------------------------------------------------------------------

    async def run(self, text: str, *, autonomous: bool = False) -> RunOutcome:
        self.calls.append(("run", (text, autonomous)))
        self.runs += 1
        script = self.script(text, autonomous) if callable(self.script) else list(self.script)
        mode: Literal["auto", "autonomous"] = "autonomous" if autonomous else "auto"
        return await self._replay([ev.RunStarted(text=text, mode=mode), *script])

    async def run_goals(self) -> RunOutcome:
        self.calls.append(("run_goals", ()))
        return await self._replay(list(self.goal_script))

    async def _replay(self, script: list[ScriptItem]) -> RunOutcome:
        """Publish the script's events on the bus; return how the run ended, as the
        real runner does (the last answer, or the failure)."""
        answer, error, kind = "", "", ""
        try:
            for item in script:
                if isinstance(item, Gate):
                    await item.wait()
                elif isinstance(item, Tokens):
                    for index in range(item.count):
                        self.publish(
                            ev.StepToken(goal_id=item.goal_id, step_id=item.step_id, text=item.text)
                        )
                        if index % item.chunk == item.chunk - 1:
                            await asyncio.sleep(0)
                else:
                    self.publish(item)
                    if isinstance(item, ev.FinalAnswer):
                        answer = item.text
                    elif isinstance(item, ev.RunFailed):
                        error, kind = item.error, item.kind
                    await asyncio.sleep(0)
        except asyncio.CancelledError:
            self.interrupted = True
            raise
        return RunOutcome(
            thread_id=self.thread_id,
            status="failed" if error else "answered",
            answer=answer,
            error=error,
            kind=kind,
        )

    # -- goals ---------------------------------------------------------------------------

    def goals(self) -> list[GoalView]:
        return list(self._goals.values())

    def evidence(self, goal_id: str | None = None) -> list[EvidenceView]:
        return [e for e in self._evidence if goal_id is None or e.goal_id == goal_id]

    async def add_goal(self, description: str, *, priority: int = 50) -> str:
        self.calls.append(("add_goal", (description, priority)))
        goal_id = f"G{self._next_goal}"
        self._next_goal += 1
        self.publish(ev.GoalCreated(goal_id=goal_id, description=description, priority=priority))
        return goal_id

    def _reaches(self, start: str, target: str) -> bool:
        stack, seen = [start], set()
        while stack:
            node = stack.pop()
            if node == target:
                return True
            if node in seen or node not in self._goals:
                continue
            seen.add(node)
            stack.extend(self._goals[node].depends_on)
        return False

    def dependency_candidates(self, goal_id: str) -> list[str]:
        """As the real Session: every other goal that would not close a cycle."""
        taken = self._goals[goal_id].depends_on if goal_id in self._goals else []
        return [
            gid
            for gid in self._goals
            if gid != goal_id and gid not in taken and not self._reaches(gid, goal_id)
        ]

    async def add_dependency(self, goal_id: str, depends_on: str) -> None:
        self.calls.append(("add_dependency", (goal_id, depends_on)))
        if goal_id == depends_on or self._reaches(depends_on, goal_id):
            raise ValueError(f"{goal_id} -> {depends_on} would make a cycle")
        goal = self._goals[goal_id]
        edges = [*goal.depends_on, depends_on]
        self._goals[goal_id] = goal.model_copy(update={"depends_on": edges})
        self.bus.publish(
            ev.GoalUpdated(goal_id=goal_id, depends_on=edges, thread_id=self.thread_id)
        )

    async def remove_dependency(self, goal_id: str, depends_on: str) -> None:
        self.calls.append(("remove_dependency", (goal_id, depends_on)))
        goal = self._goals[goal_id]
        edges = [d for d in goal.depends_on if d != depends_on]
        self._goals[goal_id] = goal.model_copy(update={"depends_on": edges})
        self.bus.publish(
            ev.GoalUpdated(goal_id=goal_id, depends_on=edges, thread_id=self.thread_id)
        )

    def _move(self, goal_id: str, to: str, reason: str = "") -> None:
        goal = self._goals[goal_id]
        self.publish(
            ev.GoalStatusChanged(
                goal_id=goal_id,
                from_status=goal.status,
                to_status=to,
                reason=reason,  # type: ignore[arg-type]
            )
        )

    async def cancel_goal(self, goal_id: str) -> None:
        self.calls.append(("cancel_goal", (goal_id,)))
        self._move(goal_id, "cancelled", "by you")

    async def toggle_suspend(self, goal_id: str) -> None:
        self.calls.append(("toggle_suspend", (goal_id,)))
        status = self._goals[goal_id].status
        self._move(goal_id, "pending" if status == "suspended" else "suspended")

    async def retry_goal(self, goal_id: str) -> None:
        self.calls.append(("retry_goal", (goal_id,)))
        if self._goals[goal_id].status != "failed":
            raise ValueError(f"{goal_id} has not failed")
        self._move(goal_id, "pending", "retry")

    async def set_priority(self, goal_id: str, priority: int) -> None:
        self.calls.append(("set_priority", (goal_id, priority)))
        self._goals[goal_id] = self._goals[goal_id].model_copy(update={"priority": priority})
        self.bus.publish(
            ev.GoalUpdated(goal_id=goal_id, priority=priority, thread_id=self.thread_id)
        )

    # -- threads and models --------------------------------------------------------------

    async def list_threads(self) -> list[ThreadView]:
        return sorted(
            self.thread_meta.values(), key=lambda t: t.last_active or datetime.min, reverse=True
        )

    async def open_thread(self, thread_id: str) -> ThreadSnapshot:
        self.calls.append(("open_thread", (thread_id,)))
        snapshot = self.threads.get(thread_id)
        if snapshot is None:
            raise ValueError(f"no thread {thread_id}")
        self.thread_id = thread_id
        self._goals = {g.id: g for g in snapshot.goals}
        self._evidence = list(snapshot.evidence)
        return snapshot

    async def new_thread(self) -> str:
        self.calls.append(("new_thread", ()))
        self.thread_id = f"t-{len(self.threads) + 100:04d}"
        self._goals.clear()
        self._evidence.clear()
        return self.thread_id

    async def delete_thread(self, thread_id: str) -> None:
        self.calls.append(("delete_thread", (thread_id,)))
        self.threads.pop(thread_id, None)
        self.thread_meta.pop(thread_id, None)

    async def export_thread(self, thread_id: str) -> str:
        self.calls.append(("export_thread", (thread_id,)))
        goals = (
            self._goals.values() if thread_id == self.thread_id else self.threads[thread_id].goals
        )
        lines = [f"# Thread {thread_id}", ""]
        lines += [f"- {g.id} [{g.status}] {g.description}" for g in goals]
        return "\n".join(lines) + "\n"

    async def list_models(self) -> list[str]:
        return ["demo model"] if self.provider_status == "demo" else list(self.models)

    async def set_model(self, name: str) -> None:
        """As the real Session: any name is taken; after use_demo, the real provider is back."""
        self.calls.append(("set_model", (name,)))
        if self.provider_status == "demo":
            self.provider_status = "reachable"
        self.model_label = name

    def use_demo(self) -> None:
        self.calls.append(("use_demo", ()))
        self.model_label = "demo model"
        self.provider_status = "demo"
