"""The ONE place where engine events become widget updates.

The handler subscribes to the bus once, drains it at ~20 Hz and applies each batch inside
one ``batch_update``: goal and step changes update GoalTree nodes in place, stream events
go into Transcripts (one for the conversation, one per goal, one per step), and only the
transcript on screen is pushed to the StepStream. A bad event is logged and shown, never
allowed to stop the pump.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from soothe.app.session_api import EvidenceView, GoalView, StepView, ThreadSnapshot
from soothe.engine import events as ev
from soothe.widgets.goal_tree import NodeRef
from soothe.widgets.icons import STATUS_WORDS
from soothe.widgets.transcript import Answer, Note, NoteKind, Segment, ToolRun, Transcript

if TYPE_CHECKING:
    from soothe.app.main import SootheApp
    from soothe.engine.bus import EventBus, Subscription

CONVERSATION = "conversation"
DRAIN_INTERVAL = 1 / 20


def _parents_first(views: list[GoalView]) -> list[GoalView]:
    """Order goals so every sub-goal comes after its parent (the tree needs the node)."""
    ids = {view.id for view in views}
    placed: set[str] = set()
    ordered: list[GoalView] = []
    remaining = list(views)
    while remaining:
        ready = [v for v in remaining if v.parent_id not in ids or v.parent_id in placed]
        if not ready:  # a parent cycle (should not exist): show them flat rather than hang
            ready = remaining
        for view in ready:
            placed.add(view.id)
            ordered.append(view)
        remaining = [v for v in remaining if v.id not in placed]
    return ordered


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class EventHandler:
    def __init__(self, app: SootheApp, *, interval: float = DRAIN_INTERVAL) -> None:
        self.app = app
        self.interval = interval
        self.goals: dict[str, GoalView] = {}
        self.transcripts: dict[str, Transcript] = {}
        self.evidence: dict[str, EvidenceView] = {}
        self.answers: dict[str, str] = {}
        self.tools: dict[str, ToolRun] = {}
        self.visible = CONVERSATION
        self.errors: list[str] = []
        self.applied = 0
        self.batches = 0
        self._touched: dict[int, Segment] = {}
        self._denied: set[tuple[str | None, str | None, str]] = set()
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._applying = False
        self._idle_waiters: list[asyncio.Future[None]] = []
        self._dispatch: dict[type[ev.EventBase], Callable[[Any], None]] = {
            ev.RunStarted: self._run_started,
            ev.RunFinished: self._run_finished,
            ev.RunFailed: self._run_failed,
            ev.Classified: self._classified,
            ev.GoalCreated: self._goal_created,
            ev.GoalStatusChanged: self._goal_status_changed,
            ev.GoalUpdated: self._goal_updated,
            ev.GoalRemoved: self._goal_removed,
            ev.PlanAssessed: self._plan_assessed,
            ev.PlanCreated: self._plan_created,
            ev.IterationStarted: self._iteration_started,
            ev.IterationCompleted: self._iteration_completed,
            ev.StepStarted: self._step_started,
            ev.StepToken: self._step_token,
            ev.ToolCalled: self._tool_called,
            ev.ToolResult: self._tool_result,
            ev.StepCompleted: self._step_completed,
            ev.StepFailed: self._step_failed,
            ev.StepSkipped: self._step_skipped,
            ev.EvidenceAdded: self._evidence_added,
            ev.ClarificationRequested: self._clarification_requested,
            ev.ClarificationAnswered: self._clarification_answered,
            ev.ApprovalRequested: self._approval_requested,
            ev.ApprovalAnswered: self._approval_answered,
            ev.Usage: self._usage,
            ev.FinalAnswer: self._final_answer,
            ev.FinalReport: self._final_report,
            ev.ErrorEvent: self._error,
        }
        self.transcript(CONVERSATION)

    # -- the pump --------------------------------------------------------------------------

    def attach(self, bus: EventBus) -> None:
        self.detach()
        self._sub = bus.subscribe("*")
        self._task = asyncio.get_running_loop().create_task(self._pump(self._sub))

    def detach(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._sub is not None:
            self._sub.close()
            self._sub = None
        self._wake_idle()

    @property
    def pending(self) -> int:
        return len(self._sub) if self._sub is not None else 0

    async def _pump(self, sub: Subscription) -> None:
        """Apply events in batches, at most one batch per ``interval``.

        After a quiet spell the first event is applied at once (a reply shows without
        delay); during a burst the pump waits out the rest of the interval so that many
        events share one repaint.
        """
        loop = asyncio.get_running_loop()
        last = -self.interval
        while True:
            try:
                first = await sub.get()
            except StopAsyncIteration:
                return
            wait = self.interval - (loop.time() - last)
            if wait > 0:
                self._applying = True  # events are waiting for us: not idle
                await asyncio.sleep(wait)
            self.apply([first, *sub.drain()])
            last = loop.time()
            if not len(sub):
                self._wake_idle()

    def _wake_idle(self) -> None:
        waiters, self._idle_waiters = self._idle_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_idle(self, timeout: float = 5.0) -> None:
        """Return once every event published so far has been applied (for tests, bench)."""
        if self._sub is None or (not len(self._sub) and not self._applying):
            return
        waiter = asyncio.get_running_loop().create_future()
        self._idle_waiters.append(waiter)
        await asyncio.wait_for(waiter, timeout)

    def apply(self, batch: Iterable[ev.EventBase]) -> None:
        self._applying = True
        self.batches += 1
        try:
            with self.app.batch_update():
                for event in batch:
                    self.applied += 1
                    handler = self._dispatch.get(type(event))
                    if handler is None:
                        continue
                    try:
                        handler(event)
                    except Exception as exc:
                        self._display_error(event, exc)
                self._flush()
        finally:
            self._applying = False

    def _display_error(self, event: ev.EventBase, exc: Exception) -> None:
        message = f"could not show {getattr(event, 'type', type(event).__name__)}: {exc!r}"
        self.errors.append(message)
        self.app.log.error(message)
        if len(self.errors) == 1:
            self.app.notify(message, title="Display error", severity="error")

    def _flush(self) -> None:
        if self._touched:
            touched, self._touched = list(self._touched.values()), {}
            self.app.main.stream.touch(touched)

    # -- transcripts -----------------------------------------------------------------------

    def transcript(self, key: str) -> Transcript:
        found = self.transcripts.get(key)
        if found is None:
            found = self.transcripts[key] = Transcript(key, self._title(key))
        return found

    def _title(self, key: str) -> str:
        if key == CONVERSATION:
            return "Conversation"
        goal_id, _, step_id = key.partition("/")
        goal = self.goals.get(goal_id)
        if not step_id:
            return f"{goal_id} · {_one_line(goal.description, 60)}" if goal else goal_id
        step = next((s for s in goal.steps if s.id == step_id), None) if goal else None
        desc = f" · {_one_line(step.description, 50)}" if step and step.description else ""
        return f"{goal_id} › {step_id}{desc}"

    def _keys(self, event: ev.EventBase, *, conversation: bool = True) -> list[str]:
        keys = [CONVERSATION] if conversation else []
        if event.goal_id:
            keys.append(event.goal_id)
            if event.step_id:
                keys.append(f"{event.goal_id}/{event.step_id}")
        return keys

    def _put(self, keys: Iterable[str], segment: Segment) -> None:
        for key in keys:
            self.transcript(key).add(segment)
            if key == self.visible:
                self._touched[id(segment)] = segment

    def note(
        self, keys: Iterable[str], text: str, kind: NoteKind = "info", stream: str = ""
    ) -> None:
        self._put(keys, Note(text, kind, stream))

    def local_note(self, text: str, kind: NoteKind = "info") -> None:
        """A note from the app itself (interrupted, goal added...), shown right away."""
        self.note([CONVERSATION], text, kind)
        self._flush()

    def select(self, ref: NodeRef) -> None:
        key = ref.key
        self.visible = key
        transcript = self.transcript(key)
        transcript.title = self._title(key)
        self._touched.clear()
        self.app.main.stream.show(transcript)

    # -- goals -----------------------------------------------------------------------------

    def _put_goal(self, goal: GoalView) -> None:
        self.goals[goal.id] = goal
        self.app.main.goal_tree.upsert_goal(goal)
        self.app.main.goals_changed(len(self.goals))

    def _goal(self, goal_id: str) -> GoalView:
        goal = self.goals.get(goal_id)
        if goal is None:
            goal = GoalView(id=goal_id, description=goal_id)
            self._put_goal(goal)
        return goal

    def _update_goal(self, goal_id: str, **changes: Any) -> GoalView:
        goal = self._goal(goal_id).model_copy(update=changes)
        self._put_goal(goal)
        return goal

    def _update_step(self, goal_id: str, step_id: str, **changes: Any) -> None:
        goal = self._goal(goal_id)
        steps = list(goal.steps)
        for index, step in enumerate(steps):
            if step.id == step_id:
                steps[index] = step.model_copy(update=changes)
                break
        else:
            steps.append(StepView(id=step_id, **changes))
        self._update_goal(goal_id, steps=steps)

    def sync_goals(self, views: list[GoalView]) -> None:
        """Make the tree match the session's goals (after a goal command or a restore)."""
        wanted = {view.id for view in views}
        with self.app.batch_update():
            for goal_id in [g for g in self.goals if g not in wanted]:
                self.goals.pop(goal_id)
                self.app.main.goal_tree.remove_goal(goal_id)
            for view in _parents_first(views):
                if self.goals.get(view.id) != view:
                    self._put_goal(view)
            self.app.main.goals_changed(len(self.goals))

    def reset(self) -> None:
        """Forget everything shown (a new or another thread)."""
        self.goals.clear()
        self.transcripts.clear()
        self.evidence.clear()
        self.answers.clear()
        self.tools.clear()
        self._touched.clear()
        self.transcript(CONVERSATION)
        main = self.app.main
        main.goal_tree.clear_goals()
        main.evidence.set_entries([])
        main.goals_changed(0)
        main.status.set(tokens_in=0, tokens_out=0, iteration=0, max_iterations=0, elapsed=None)
        self.visible = CONVERSATION
        main.stream.show(self.transcript(CONVERSATION))

    def restore(self, snapshot: ThreadSnapshot) -> None:
        """Show a stored thread: goals, their final answers and the evidence."""
        with self.app.batch_update():
            self.reset()
            self.sync_goals(snapshot.goals)
            conversation = self.transcript(CONVERSATION)
            title = snapshot.title or snapshot.thread_id
            conversation.note(f"Thread {title} restored", "info")
            if snapshot.answers.get(""):
                conversation.add(Answer(snapshot.answers[""]))
            for goal in snapshot.goals:
                goal_transcript = self.transcript(goal.id)
                goal_transcript.note(f"{goal.id} {STATUS_WORDS.get(goal.status, goal.status)}")
                answer = snapshot.answers.get(goal.id)
                if answer:
                    segment = Answer(answer, title=goal.id)
                    goal_transcript.add(segment)
                    conversation.note(f"{goal.id} · {_one_line(goal.description, 80)}", "plan")
                    conversation.add(segment)
                    self.answers[goal.id] = answer
                if goal.error:
                    goal_transcript.note(goal.error, "error")
            self.set_evidence(snapshot.evidence)
            self.app.main.stream.show(conversation)

    def set_evidence(self, entries: list[EvidenceView]) -> None:
        self.evidence = {e.evidence_id: e for e in entries}
        self.app.main.evidence.set_entries(entries)

    # -- events: runs ------------------------------------------------------------------------

    def _run_started(self, event: ev.RunStarted) -> None:
        self.note([CONVERSATION], event.text, "user")
        self.app.run_started()

    def _run_finished(self, event: ev.RunFinished) -> None:
        count = event.model_calls
        calls = f" · {count} model call{'' if count == 1 else 's'}" if count else ""
        self.note([CONVERSATION], f"done in {event.duration_s:.1f} s{calls}", "info")
        self.app.run_ended(event.duration_s)

    def _run_failed(self, event: ev.RunFailed) -> None:
        self.note(self._keys(event), f"run failed: {event.error}", "error")
        self.app.run_ended(None)
        if event.kind == "unreachable":  # the server went away: say so like at start-up
            self.app.server_lost(event.error)
        else:
            self.app.notify(_one_line(event.error, 200), title="Run failed", severity="error")

    def _classified(self, event: ev.Classified) -> None:
        how = "answered directly" if event.answered else "working on it"
        reason = f" — {_one_line(event.reason, 100)}" if event.reason else ""
        self.note([CONVERSATION], f"{event.label} request, {how}{reason}", "info")

    def _error(self, event: ev.ErrorEvent) -> None:
        self.note(self._keys(event), event.message, "error")
        self.app.notify(_one_line(event.message, 200), title=event.kind, severity="error")

    # -- events: goals -----------------------------------------------------------------------

    def _goal_created(self, event: ev.GoalCreated) -> None:
        gid = event.goal_id or "?"
        existing = self.goals.get(gid)
        goal = GoalView(
            id=gid,
            description=event.description,
            priority=event.priority,
            parent_id=event.parent_id,
            depends_on=list(event.depends_on),
            status=existing.status if existing else "pending",
            steps=list(existing.steps) if existing else [],
        )
        self._put_goal(goal)
        self.transcript(gid).title = self._title(gid)
        after = f" (after {', '.join(event.depends_on)})" if event.depends_on else ""
        sub = f" under {event.parent_id}" if event.parent_id else ""
        queued = " — ctrl+r runs ready goals" if not self.app.running and not sub else ""
        text = f"{gid} new goal{sub}: {_one_line(event.description)}{after}{queued}"
        self.note([CONVERSATION, gid], text, "plan")

    def _status_note(self, goal_id: str, status: str, detail: str = "") -> None:
        kind: NoteKind = {"completed": "ok", "failed": "error", "cancelled": "warn"}.get(
            status, "info"
        )  # type: ignore[assignment]
        word = STATUS_WORDS.get(status, status)
        extra = f": {_one_line(detail)}" if detail else ""
        self.note([CONVERSATION, goal_id], f"{goal_id} {word}{extra}", kind)

    def _goal_status_changed(self, event: ev.GoalStatusChanged) -> None:
        """The one event of a goal status move (findings on completion, error on failure)."""
        if not event.goal_id:
            return
        changes: dict[str, Any] = {"status": event.to_status}
        if event.findings:
            changes["findings"] = event.findings
        failed = event.to_status == "failed" or event.will_retry
        if failed:
            changes["error"] = event.error
        self._update_goal(event.goal_id, **changes)
        if not failed:
            self._status_note(event.goal_id, event.to_status, event.reason)
            return
        retry = " (will retry)" if event.will_retry else ""
        self._status_note(event.goal_id, "failed", event.error + retry)
        self.app.notify(
            _one_line(event.error or "no reason given", 200) + retry,
            title=f"Goal {event.goal_id} failed",
            severity="error",
        )

    def _goal_updated(self, event: ev.GoalUpdated) -> None:
        if not event.goal_id:
            return
        changes: dict[str, Any] = {}
        if event.priority is not None:
            changes["priority"] = event.priority
        if event.depends_on is not None:
            changes["depends_on"] = list(event.depends_on)
        if event.findings is not None:
            changes["findings"] = event.findings
        if changes:
            self._update_goal(event.goal_id, **changes)

    def _goal_removed(self, event: ev.GoalRemoved) -> None:
        if event.goal_id and event.goal_id in self.goals:
            self.goals.pop(event.goal_id)
            self.app.main.goal_tree.remove_goal(event.goal_id)
            self.app.main.goals_changed(len(self.goals))

    # -- events: planning --------------------------------------------------------------------

    def _plan_assessed(self, event: ev.PlanAssessed) -> None:
        keys = self._keys(event)
        reason = f" — {event.reasoning}" if event.reasoning else ""
        text = f"assessment: {event.status}, progress {event.goal_progress}{reason}"
        self.note(keys, text, "reasoning")

    def _plan_created(self, event: ev.PlanCreated) -> None:
        if event.goal_id:
            goal = self._goal(event.goal_id)
            known = {s.id: s for s in goal.steps}
            steps = list(goal.steps)
            for planned in event.steps:
                view = StepView(
                    id=planned.id,
                    description=planned.description,
                    kind=planned.kind,
                    dependencies=list(planned.dependencies),
                    status=known[planned.id].status if planned.id in known else "pending",
                )
                if planned.id in known:
                    steps[steps.index(known[planned.id])] = view
                else:
                    steps.append(view)
            self._update_goal(event.goal_id, steps=steps)
        keys = self._keys(event)
        count = len(event.steps)
        lines = [f"plan · iteration {event.iteration} · {count} step{'' if count == 1 else 's'}"]
        for step in event.steps:
            after = f"  (after {', '.join(step.dependencies)})" if step.dependencies else ""
            ask = "  [asks you]" if step.kind == "ask_user" else ""
            lines.append(f"  {step.id}  {_one_line(step.description, 90)}{after}{ask}")
        if event.reasoning:
            self.note(keys, event.reasoning, "reasoning")
        self.note(keys, "\n".join(lines), "plan")

    def _iteration_started(self, event: ev.IterationStarted) -> None:
        self.app.main.status.set(iteration=event.iteration, max_iterations=event.max_iterations)
        if event.goal_id:
            self.note([event.goal_id], f"iteration {event.iteration}/{event.max_iterations}")

    def _iteration_completed(self, event: ev.IterationCompleted) -> None:
        if event.goal_id:
            failed = f", {event.failed_steps} failed" if event.failed_steps else ""
            text = f"iteration {event.iteration} done: {event.completed_steps} steps{failed}"
            self.note([event.goal_id], text)

    # -- events: steps -----------------------------------------------------------------------

    def _stream_key(self, event: ev.EventBase) -> str:
        return f"{event.goal_id}/{event.step_id}"

    def _step_started(self, event: ev.StepStarted) -> None:
        if event.goal_id and event.step_id:
            self._update_step(
                event.goal_id,
                event.step_id,
                status="active",
                description=event.description,
                kind=event.kind,
            )
            key = self._stream_key(event)
            self.transcript(key).title = self._title(key)
        label = "/".join(p for p in (event.goal_id, event.step_id) if p)
        text = f"{label} {_one_line(event.description, 120)}"
        self.note(self._keys(event), text, "step", stream=self._stream_key(event))

    def _step_token(self, event: ev.StepToken) -> None:
        stream = self._stream_key(event)
        label = "/".join(p for p in (event.goal_id, event.step_id) if p) + " ›"
        for key in self._keys(event):
            run = self.transcript(key).text(stream, event.text, label=label)
            if key == self.visible:
                self._touched[id(run)] = run

    def _tool_called(self, event: ev.ToolCalled) -> None:
        run = ToolRun(call_id=event.call_id, tool=event.tool, args=dict(event.args))
        self.tools[event.call_id] = run
        self._put(self._keys(event), run)

    def _tool_result(self, event: ev.ToolResult) -> None:
        run = self.tools.pop(event.call_id, None)
        if run is None:
            run = ToolRun(call_id=event.call_id, tool=event.tool)
            self._put(self._keys(event), run)
        run.output = event.output
        run.ok = event.ok
        run.truncated = event.truncated
        run.version += 1
        if any(key == self.visible for key in self._keys(event)):
            self._touched[id(run)] = run
        denied = (event.goal_id, event.step_id, event.tool)
        if not event.ok and denied in self._denied:
            self._denied.discard(denied)  # the output is written for the model, not for you
            self.app.notify(f"{event.tool} denied", severity="warning")
        elif not event.ok:
            first = event.output.strip().splitlines()[0] if event.output.strip() else "failed"
            self.app.notify(
                _one_line(first, 200), title=f"Tool {event.tool} failed", severity="warning"
            )

    def _step_completed(self, event: ev.StepCompleted) -> None:
        if event.goal_id and event.step_id:
            self._update_step(event.goal_id, event.step_id, status="completed")
        took = f" in {event.duration_s:.1f} s" if event.duration_s else ""
        summary = f" — {_one_line(event.summary, 120)}" if event.summary else ""
        self.note(self._keys(event), f"{event.step_id or 'step'} done{took}{summary}", "ok")

    def _step_failed(self, event: ev.StepFailed) -> None:
        if event.goal_id and event.step_id:
            self._update_step(event.goal_id, event.step_id, status="failed")
        what = "cancelled" if event.cancelled else "failed"
        label = "/".join(p for p in (event.goal_id, event.step_id) if p) or "step"
        self.note(self._keys(event), f"{label} {what}: {event.error}", "error")
        if not event.cancelled:
            self.app.notify(
                _one_line(event.error, 200), title=f"Step {label} failed", severity="error"
            )

    def _step_skipped(self, event: ev.StepSkipped) -> None:
        if event.goal_id and event.step_id:
            self._update_step(event.goal_id, event.step_id, status="skipped")
        reason = f": {event.reason}" if event.reason else ""
        self.note(self._keys(event, conversation=False), f"{event.step_id} skipped{reason}")

    # -- events: evidence and requests ---------------------------------------------------------

    def _evidence_added(self, event: ev.EvidenceAdded) -> None:
        entry = EvidenceView(
            evidence_id=event.evidence_id,
            kind=event.kind,
            summary=event.summary,
            content=event.content,
            goal_id=event.goal_id,
            step_id=event.step_id,
        )
        self.evidence[entry.evidence_id] = entry
        self.app.main.evidence.add_entries([entry])

    def _asker(self, event: ev.EventBase) -> str:
        goal = self.goals.get(event.goal_id or "")
        return f"{goal.id} “{_one_line(goal.description, 40)}”" if goal else ""

    def _clarification_requested(self, event: ev.ClarificationRequested) -> None:
        if event.goal_id:
            self.app.main.goal_tree.set_awaiting(event.goal_id, "clarification")
        asks = "; ".join(event.questions)
        self.note(self._keys(event), f"{event.goal_id or 'agent'} asks: {asks}", "warn")
        self.app.open_clarification(event, self._asker(event))

    def _clarification_answered(self, event: ev.ClarificationAnswered) -> None:
        if event.goal_id:
            self.app.main.goal_tree.set_awaiting(event.goal_id, None)
        text = {
            "answered": "answered: " + "; ".join(event.answers),
            "skipped": "question skipped",
            "auto": "answered automatically",
            "timeout": "question timed out",
            "cancelled": "question cancelled",
        }[event.outcome]
        self.note(self._keys(event), text, "info")
        self.app.close_request(event.request_id)

    def _approval_requested(self, event: ev.ApprovalRequested) -> None:
        if event.goal_id:
            self.app.main.goal_tree.set_awaiting(event.goal_id, "approval")
        self.note(self._keys(event), f"approval needed to run {event.tool}", "warn")
        self.app.open_approval(event, self._asker(event))

    def _approval_answered(self, event: ev.ApprovalAnswered) -> None:
        if event.goal_id:
            self.app.main.goal_tree.set_awaiting(event.goal_id, None)
        words = {
            "approve_once": ("approved once", "ok"),
            "approve_always": ("approved for the rest of the session", "ok"),
            "deny": ("denied", "warn"),
            "timeout": ("approval timed out", "warn"),
            "cancelled": ("approval cancelled", "warn"),
        }
        text, kind = words[event.outcome]
        if event.outcome == "deny":
            self._denied.add((event.goal_id, event.step_id, event.tool))
        self.note(self._keys(event), f"{event.tool or 'tool'} {text}", kind)  # type: ignore[arg-type]
        self.app.close_request(event.request_id)

    # -- events: accounting and answers --------------------------------------------------------

    def _usage(self, event: ev.Usage) -> None:
        status = self.app.main.status
        status.set(
            tokens_in=status.info.tokens_in + event.input_tokens,
            tokens_out=status.info.tokens_out + event.output_tokens,
        )

    def _final_answer(self, event: ev.FinalAnswer) -> None:
        key = event.goal_id or ""
        previous = self.answers.get(key)
        self.answers[key] = f"{previous}\n\n{event.text}" if previous and not key else event.text
        self._put(self._keys(event), Answer(event.text, title=event.goal_id or ""))

    def _final_report(self, event: ev.FinalReport) -> None:
        text = event.text
        if not text and event.goals:
            rows = [
                f"- **{g.get('id', '?')}** {g.get('status', '')}: {g.get('findings', '')}"
                for g in event.goals
            ]
            text = "\n".join(rows)
        if text:
            self._put([CONVERSATION], Answer(text, title="report"))

    # -- helpers for the app -----------------------------------------------------------------

    def engine_error(self, exc: BaseException, where: str = "run") -> None:
        message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        self.local_note(f"{where} stopped by an error: {message}", "error")
        self.app.notify(_one_line(message, 200), title=f"Engine error ({where})", severity="error")

    def shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self.detach()
