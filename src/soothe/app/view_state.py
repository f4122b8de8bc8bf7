"""The one view model: what the screen shows, built from engine events, without Textual.

``ViewState.feed(event)`` turns each engine event into blocks (user request, notice, step
card, tool call, answer) in the views that show them: the conversation, the goal's view
and the step's view (the same block object in each). Goals, evidence and answers are kept
here too. Everything the screen must do about it goes through a narrow ``ViewPort`` (the
app implements it; tests pass a recorder), and ``flush()`` hands the port the blocks that
changed in the visible view once per batch.

The same code rebuilds a stored thread: the store keeps the thread's events (tokens
coalesced per step), ``restore`` replays them with the side effects (toasts, dialogs, run
state) off, so a reopened thread shows the same blocks in the same order as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from soothe.app.lazy import lazy
from soothe.app.view_budget import BudgetEvents
from soothe.app.view_criteria import CriteriaEvents
from soothe.app.view_paging import MAX_VIEWS, Released, ViewPaging
from soothe.app.view_port import (
    CONVERSATION,
    OpenRequest,
    RequestEvents,
    ViewPort,
    one_line,
    parents_first,
    records_of,
    restore_answers,
    same_text,
)
from soothe.app.view_steps import INTERRUPTED_DETAIL, StepEvents
from soothe.engine.sanitize import plain_fields
from soothe.widgets.icons import STATUS_WORDS
from soothe.widgets.transcript import (
    Answer,
    Block,
    Note,
    NoteKind,
    StepCard,
    ToolRun,
    Transcript,
)

if TYPE_CHECKING:
    from soothe.engine import events as ev
    from soothe.engine import views as models
    from soothe.engine.views import EvidenceView, GoalView, ThreadSnapshot
else:
    ev = lazy("soothe.engine.events")
    models = lazy("soothe.engine.views")

__all__ = ["CONVERSATION", "ViewPort", "ViewState", "one_line", "records_of"]

INTERRUPTED = "interrupted"
MAX_CARDS = 200
"""Step cards kept by key (for their later events); finished ones beyond are let go."""


class ViewState(StepEvents, BudgetEvents, CriteriaEvents, RequestEvents, ViewPaging):
    def __init__(self, port: ViewPort) -> None:
        self.port = port
        self.live = True
        """False while a stored thread is replayed: no toasts, dialogs or run state."""
        self.goals: dict[str, GoalView] = {}
        self.views: dict[str, Transcript] = {}
        self.evidence: dict[str, EvidenceView] = {}
        self.answers: dict[str, str] = {}
        self.cards: dict[str, StepCard] = {}
        self.tools: dict[str, ToolRun] = {}
        self.requests: dict[str, OpenRequest] = {}
        """The requests waiting for the user's answer, by request id: the one fact the
        cards' and the tree's "waiting for you" marks are drawn from."""
        self.visible = CONVERSATION
        self.running = False
        self.tokens_in = 0
        self.tokens_out = 0
        self.iteration = (0, 0)
        """The last iteration seen (iteration, max_iterations), for a restored thread."""
        self.several_running = False
        """More than one goal has been running since a moment none was: the goals'
        lines in the conversation name their goal (``note``)."""
        self.last_run_s: float | None = None
        """How long the last run took (its RunFinished, or from its start to its
        RunFailed), for a restored thread's status line."""
        self._run_began: float | None = None
        self._touched: dict[int, Block] = {}
        self._origin = 0
        """Where the store keeps the event being fed (see ``Transcript.origins``)."""
        self.paging = False
        """A scratch view model rebuilding a page of the store (see ``page_back``)."""
        self.max_views = MAX_VIEWS
        self.released: dict[str, Released] = {}
        self._last: dict[str, int] = {}
        self._denied: set[tuple[str | None, str | None, str]] = set()
        self.view(CONVERSATION)

    @cached_property
    def _dispatch(self) -> dict[type[ev.EventBase], Callable[[Any], None]]:
        """Each event type's part (built at the first event: the event types are the
        engine's, not imported for the first frame)."""
        return {
            ev.RunStarted: self._run_started,
            ev.RunFinished: self._run_finished,
            ev.RunFailed: self._run_failed,
            ev.Classified: self._classified,
            ev.GoalCreated: self._goal_created,
            ev.GoalStatusChanged: self._goal_status_changed,
            ev.GoalUpdated: self._goal_updated,
            ev.GoalRemoved: self._goal_removed,
            ev.GoalSteered: self._goal_steered,
            ev.GoalCriteriaSet: self._goal_criteria_set,
            ev.GoalVerified: self._goal_verified,
            ev.GoalBudgetSet: self._goal_budget_set,
            ev.GoalSpent: self._goal_spent,
            ev.PlanAssessed: self._plan_assessed,
            ev.PlanCreated: self._plan_created,
            ev.IterationStarted: self._iteration_started,
            ev.IterationCompleted: self._iteration_completed,
            ev.StepStarted: self._step_started,
            ev.StepThinking: self._step_thinking,
            ev.ToolCalled: self._tool_called,
            ev.ToolResult: self._tool_result,
            ev.StepCompleted: self._step_completed,
            ev.StepFailed: self._step_failed,
            ev.StepSkipped: self._step_skipped,
            ev.StepSuspended: self._step_suspended,
            ev.EvidenceAdded: self._evidence_added,
            ev.ClarificationRequested: self._clarification_requested,
            ev.ClarificationAnswered: self._clarification_answered,
            ev.ApprovalRequested: self._approval_requested,
            ev.ApprovalAnswered: self._approval_answered,
            ev.Usage: self._usage,
            ev.ModelContext: self._model_context,
            ev.FinalAnswer: self._final_answer,
            ev.FinalReport: self._final_report,
            ev.ErrorEvent: self._error,
            ev.UndoApplied: self._undo_applied,
        }

    # -- feeding -----------------------------------------------------------------------------

    def feed(self, event: ev.EventBase, *, tokens: int = 1, origin: int | None = None) -> None:
        """Apply one event. ``tokens`` is how many stream pieces a StepToken stands for
        (a stored transcript keeps each step's text coalesced); ``origin`` is its record
        id in the store (live events are found by their ``seq``)."""
        if origin is None:
            origin = -event.seq if self.live else 0
        self._origin = origin
        # the one door for an event's text, live or replayed from the store: a model's,
        # a tool's or a file's control sequences go no further (sanitize.plain)
        event = plain_fields(event)
        if isinstance(event, ev.StepToken):
            self._step_token(event, tokens)
            return
        self._seen(event)
        handler = self._dispatch.get(type(event))
        if handler is not None:
            handler(event)
        if len(self.cards) > MAX_CARDS:
            self._forget_cards()
        if len(self.views) > self.max_views + 2:
            self._release_views()

    def _forget_cards(self) -> None:
        """Let go of finished steps' cards (the views and the store keep what they showed);
        a card still streaming, or one the visible view holds, stays."""
        shown = self.view(self.visible)
        for key in list(self.cards):
            if len(self.cards) <= MAX_CARDS // 2:
                break
            card = self.cards[key]
            if card.status != "active" and card not in shown:
                del self.cards[key]

    def flush(self) -> None:
        """Give the screen the blocks of the visible view that changed since last time."""
        if self._touched:
            touched, self._touched = list(self._touched.values()), {}
            self.port.touch(touched)

    def replay(self, records: Iterable[tuple[Any, ...]]) -> None:
        """Feed stored events ``(event, tokens[, record id])`` with the side effects off
        (see ``restore``)."""
        self.live = False
        try:
            for event, tokens, *rest in records:
                self.feed(event, tokens=tokens, origin=rest[0] if rest else 0)
        finally:
            self.live = True
        self.running = False
        self._touched.clear()

    # -- views -------------------------------------------------------------------------------

    def view(self, key: str) -> Transcript:
        found = self.views.get(key)
        if found is None:
            found = self.views[key] = Transcript(key, self._title(key))
            self._revived(found)
        return found

    def _title(self, key: str) -> str:
        if key == CONVERSATION:
            return "Conversation"
        goal_id, _, step_id = key.partition("/")
        goal = self.goals.get(goal_id)
        if not step_id:
            return f"{goal_id} · {one_line(goal.description, 60)}" if goal else goal_id
        step = next((s for s in goal.steps if s.id == step_id), None) if goal else None
        desc = f" · {one_line(step.description, 50)}" if step and step.description else ""
        return f"{goal_id} › {step_id}{desc}"

    def _keys(self, event: ev.EventBase, *, conversation: bool = True) -> list[str]:
        keys = [CONVERSATION] if conversation else []
        if event.goal_id:
            keys.append(event.goal_id)
            if event.step_id:
                keys.append(f"{event.goal_id}/{event.step_id}")
        return keys

    def put(self, keys: Iterable[str], block: Block) -> None:
        for key in keys:
            self.view(key).add(block, self._origin)
            self._recent(key)
            if key == self.visible:
                self._touched[id(block)] = block

    def changed(self, block: Block) -> None:
        if block in self.view(self.visible):
            self._touched[id(block)] = block

    def note(self, keys: Iterable[str], text: str, kind: NoteKind = "info") -> None:
        """A note in the views ``keys`` name. A goal's note in the conversation while
        several goals run names its goal there (``G2 plan · iteration 1 · …``), unless it
        names it already; the goal's own views need no name. ("Several" holds from the
        moment a second goal is active until none is: the last of them to finish still
        names itself.)"""
        keys = list(keys)
        goal_id = next((k.partition("/")[0] for k in keys if k != CONVERSATION), "")
        if goal_id and CONVERSATION in keys and self.several_running:
            first = text.split(None, 1)[0] if text.strip() else ""
            if first.partition("/")[0] != goal_id:
                self.put([CONVERSATION], Note(f"{goal_id} {text}", kind))
                keys.remove(CONVERSATION)
        self.put(keys, Note(text, kind))

    @property
    def streaming(self) -> bool:
        """A step in the visible view runs (and does not wait for the user). The view
        model knows it at once; the screen mounts the step's card only when the batch it
        started in is applied."""
        shown = self.view(self.visible)
        return any(
            card.status == "active" and not card.awaiting and card in shown
            for card in self.cards.values()
        )

    def select(self, key: str) -> Transcript:
        self.visible = key
        transcript = self._select_released(key) or self.view(key)
        transcript.title = self._title(key)
        self._touched.clear()
        self.port.show(transcript)
        return transcript

    def blocks(self, key: str = CONVERSATION) -> list[dict[str, Any]]:
        """The blocks of one view as plain data (tests compare live and restored)."""
        return self.view(key).dump()

    # -- side effects (live only) -------------------------------------------------------------

    def _notify(self, message: str, title: str = "", severity: str = "information") -> None:
        if self.live:
            self.port.notify(message, title, severity)

    # -- goals -------------------------------------------------------------------------------

    def _put_goal(self, goal: GoalView) -> None:
        self.goals[goal.id] = goal
        active = sum(g.status == "active" for g in self.goals.values())
        if active > 1 or not active:
            self.several_running = active > 1
        if self.live:
            self.port.upsert_goal(goal)
            self.port.goals_changed(len(self.goals))

    def _goal(self, goal_id: str) -> GoalView:
        goal = self.goals.get(goal_id)
        if goal is None:
            goal = models.GoalView(id=goal_id, description=goal_id)
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
            steps.append(models.StepView(id=step_id, **changes))
        self._update_goal(goal_id, steps=steps)

    def sync_goals(self, views: list[GoalView]) -> None:
        """Make the goals match the session's (after a goal command or a restore)."""
        views = [plain_fields(view) for view in views]  # descriptions, answers, errors
        wanted = {view.id for view in views}
        for goal_id in [g for g in self.goals if g not in wanted]:
            self.goals.pop(goal_id)
            self.port.remove_goal(goal_id)
        for view in parents_first(views):
            self.goals[view.id] = view
            self.port.upsert_goal(view)
        self.port.goals_changed(len(self.goals))

    def reset(self) -> None:
        """Forget everything shown (a new or another thread)."""
        self.goals.clear()
        self.views.clear()
        self.released.clear()
        self._last.clear()
        self.evidence.clear()
        self.answers.clear()
        self.cards.clear()
        self.tools.clear()
        self.requests.clear()
        self._touched.clear()
        self.running = False
        self.tokens_in = self.tokens_out = 0
        self.iteration = (0, 0)
        self.last_run_s = self._run_began = None
        self.several_running = False
        self.view(CONVERSATION)
        self.port.clear_goals()
        self.port.set_evidence([])
        self.port.goals_changed(0)
        self.port.status(
            tokens_in=0,
            tokens_out=0,
            ctx_used=0,
            ctx_window=0,
            ctx_cut=False,
            iteration=0,
            max_iterations=0,
            elapsed=None,
            budget="",  # view_budget: no goal of this thread runs yet
        )
        self._budget_shown = ""
        self.visible = CONVERSATION
        self.port.show(self.view(CONVERSATION))

    def restore(self, snapshot: ThreadSnapshot, records: Iterable[tuple[Any, ...]] = ()) -> None:
        """Show a stored thread: its replayed transcript (or, for a thread stored before
        transcripts were kept, its goals' final answers), goals and evidence."""
        self.reset()
        records = list(records)
        if records:
            self.replay(records)
        else:
            restore_answers(self, plain_fields(snapshot))
        self.sync_goals(snapshot.goals)
        self._settle_cards(snapshot)
        self.set_evidence(snapshot.evidence)
        self.port.show(self.view(CONVERSATION))
        # the last iteration the transcript shows, the thread's token totals (its stored
        # usage records) and how long its last run took, as the status line had them
        self.port.status(
            iteration=self.iteration[0],
            max_iterations=self.iteration[1],
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            elapsed=self.last_run_s,
        )

    def _settle_cards(self, snapshot: ThreadSnapshot) -> None:
        """A card the transcript left running whose step the store does not hold running
        (the process ended mid-step): shown as interrupted, not live."""
        running = {
            f"{g.id}/{s.id}" for g in snapshot.goals for s in g.steps if s.status == "active"
        }
        for card in self.cards.values():
            if card.status == "active" and card.key not in running:
                self._end_card(card, "suspended", card.detail or INTERRUPTED_DETAIL)

    def set_evidence(self, entries: list[EvidenceView]) -> None:
        entries = [plain_fields(entry) for entry in entries]  # a tool's or a file's words
        self.evidence = {e.evidence_id: e for e in entries}
        self.port.set_evidence(entries)

    # -- events: runs ------------------------------------------------------------------------

    def _run_started(self, event: ev.RunStarted) -> None:
        self.running = True
        self._run_began = event.ts
        self.note([CONVERSATION], event.text, "user")
        if self.live:
            if event.thread_id:  # a new session's thread exists from its first run on
                self.port.status(thread=event.thread_id)
            self.port.run_started()
            self.port.take_panel()  # the user's own request: never held off

    def _run_finished(self, event: ev.RunFinished) -> None:
        self.running = False
        self.last_run_s = event.duration_s
        count = event.model_calls
        calls = f" · {count} model call{'' if count == 1 else 's'}" if count else ""
        self.note([CONVERSATION], f"done in {event.duration_s:.1f} s{calls}", "info")
        if self.live:
            self.port.run_ended(event.duration_s)

    def _run_failed(self, event: ev.RunFailed) -> None:
        self.running = False
        began, self._run_began = self._run_began, None
        self.last_run_s = max(0.0, event.ts - began) if began is not None else None
        if event.kind == "interrupted":  # the user stopped it: a fact, not an error
            self.note(self._keys(event), INTERRUPTED, "warn")
            if self.live:
                self.port.run_ended(self.last_run_s)
            return
        self.note(self._keys(event), f"run failed: {event.error}", "error")
        if not self.live:
            return
        self.port.run_ended(self.last_run_s)  # as a reopened thread will show it
        if event.kind == "unreachable":  # the server went away: say so like at start-up
            self.port.server_lost(event.error)
        else:
            self._notify(one_line(event.error, 200), "Run failed", "error")

    def _classified(self, event: ev.Classified) -> None:
        how = "answered directly" if event.answered else "working on it"
        reason = f" — {one_line(event.reason, 100)}" if event.reason else ""
        self.note([CONVERSATION], f"{event.label} request, {how}{reason}", "info")

    def _error(self, event: ev.ErrorEvent) -> None:
        if self._failure_shown(event):
            return
        self.note(self._keys(event), event.message, "error")
        self._notify(one_line(event.message, 200), event.kind, "error")

    def _failure_shown(self, event: ev.ErrorEvent) -> bool:
        """The runner's error line after a goal failed for good (kind ``loop``; headless
        prints it) says again what the goal's status change showed: its ✗ line and the
        "Goal G1 failed" toast. The app shows it once."""
        goal = self.goals.get(event.goal_id or "")
        if event.kind != "loop" or goal is None or goal.status != "failed":
            return False
        return one_line(event.message)[:80] == one_line(goal.error)[:80]

    def _undo_applied(self, event: ev.UndoApplied) -> None:
        """/undo put files back: a note in the conversation (kept: a reopened thread
        shows it), and a toast at the time."""
        lines = [f"restored {path}" for path in event.restored]
        lines += [f"refused {what}" for what in event.refused]
        lines += [f"cannot undo the command {command!r}" for command in event.commands]
        kind: NoteKind = "warn" if event.refused else "ok"
        head = "undo: put back what the last run changed"
        self.note([CONVERSATION], "\n".join([head, *(f"  {line}" for line in lines)]), kind)
        self._notify("\n".join(lines), "Undo", "warning" if event.refused else "information")

    # -- events: goals -----------------------------------------------------------------------

    def _goal_created(self, event: ev.GoalCreated) -> None:
        gid = event.goal_id or "?"
        existing = self.goals.get(gid)
        goal = models.GoalView(
            id=gid,
            description=event.description,
            priority=event.priority,
            parent_id=event.parent_id,
            depends_on=list(event.depends_on),
            status=existing.status if existing else "pending",
            steps=list(existing.steps) if existing else [],
            budget=event.budget,
            criteria=[models.Criterion(text=text) for text in event.criteria],
        )
        self._put_goal(goal)
        self.view(gid).title = self._title(gid)
        after = f" (after {', '.join(event.depends_on)})" if event.depends_on else ""
        sub = f" under {event.parent_id}" if event.parent_id else ""
        queued = " — ctrl+r runs ready goals" if not self.running and not sub else ""
        text = f"{gid} new goal{sub}: {one_line(event.description)}{after}{queued}"
        self.note([CONVERSATION, gid], text, "plan")
        self._criteria_created(gid, goal.criteria)

    def _status_note(self, goal_id: str, status: str, detail: str = "") -> None:
        kinds: dict[str, NoteKind] = {"completed": "ok", "failed": "error", "cancelled": "warn"}
        word = STATUS_WORDS.get(status, status)
        extra = f": {one_line(detail)}" if detail else ""
        self.note([CONVERSATION, goal_id], f"{goal_id} {word}{extra}", kinds.get(status, "info"))

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
        self._budget_follow(event.goal_id)
        if event.to_status == "active" and self.live:
            self.port.follow(event.goal_id)
        if not failed:
            self._status_note(event.goal_id, event.to_status, event.reason)
            return
        retry = " (will retry)" if event.will_retry else ""
        self._status_note(event.goal_id, "failed", event.error + retry)
        self._notify(
            one_line(event.error or "no reason given", 200) + retry,
            f"Goal {event.goal_id} failed",
            "error",
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
            if self.live:
                self.port.remove_goal(event.goal_id)
                self.port.goals_changed(len(self.goals))

    def _goal_steered(self, event: ev.GoalSteered) -> None:
        """The user's note to a running goal (``/steer``), in the conversation and the
        goal's view; the planner reads it at the goal's next assessment."""
        if event.goal_id:
            self.note(
                [CONVERSATION, event.goal_id], f"{event.goal_id} · your note: {event.text}", "user"
            )

    # -- events: planning --------------------------------------------------------------------

    def _plan_assessed(self, event: ev.PlanAssessed) -> None:
        reason = f" — {event.reasoning}" if event.reasoning else ""
        text = f"assessment: {event.status}, progress {event.goal_progress}{reason}"
        self.note(self._keys(event), text, "reasoning")

    def _plan_created(self, event: ev.PlanCreated) -> None:
        if event.goal_id:
            goal = self._goal(event.goal_id)
            known = {s.id: s for s in goal.steps}
            steps = list(goal.steps)
            for planned in event.steps:
                view = models.StepView(
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
            lines.append(f"  {step.id}  {one_line(step.description, 90)}{after}{ask}")
        if event.reasoning:
            self.note(keys, event.reasoning, "reasoning")
        self.note(keys, "\n".join(lines), "plan")

    def _iteration_started(self, event: ev.IterationStarted) -> None:
        self.iteration = (event.iteration, event.max_iterations)
        if self.live:
            self.port.status(iteration=event.iteration, max_iterations=event.max_iterations)
        if event.goal_id:
            self.note([event.goal_id], f"iteration {event.iteration}/{event.max_iterations}")

    def _iteration_completed(self, event: ev.IterationCompleted) -> None:
        if event.goal_id:
            failed = f", {event.failed_steps} failed" if event.failed_steps else ""
            text = f"iteration {event.iteration} done: {event.completed_steps} steps{failed}"
            self.note([event.goal_id], text)

    # -- events: accounting and answers --------------------------------------------------------

    def _usage(self, event: ev.Usage) -> None:
        self.tokens_in += event.input_tokens
        self.tokens_out += event.output_tokens
        if self.live:
            # ctx: this call's prompt against its window; a call without both (a window
            # not known, a call that failed before the server counted) leaves the last
            # one; a new call's count clears the cut mark.
            ctx = (
                {"ctx_used": event.input_tokens, "ctx_window": event.window, "ctx_cut": False}
                if event.window and event.input_tokens
                else {}
            )
            self.port.status(tokens_in=self.tokens_in, tokens_out=self.tokens_out, **ctx)
            if event.answered:
                self.port.server_answered()

    def _model_context(self, event: ev.ModelContext) -> None:
        """The server cut a prompt to fit its window: a mark beside ``ctx`` until the next
        call reports its count (the retry's, re-packed smaller)."""
        if self.live:
            self.port.status(ctx_used=event.evaluated_tokens, ctx_window=event.window, ctx_cut=True)

    def _final_answer(self, event: ev.FinalAnswer) -> None:
        key = event.goal_id or ""
        previous = self.answers.get(key)
        self.answers[key] = f"{previous}\n\n{event.text}" if previous and not key else event.text
        if event.goal_id:  # shown once: a step whose text is the answer becomes the answer
            for card in self.cards.values():
                if card.goal_id == event.goal_id and same_text(card.text, event.text):
                    card.answer = True
                    self._card_changed(card)
                    return
        goal = self.goals.get(event.goal_id or "")
        failed = goal is not None and goal.status == "failed"
        self.put(self._keys(event), Answer(event.text, title=event.goal_id or "", failed=failed))

    def _final_report(self, event: ev.FinalReport) -> None:
        text = event.text
        if not text and event.goals:
            rows = [
                f"- **{g.get('id', '?')}** {g.get('status', '')}: {g.get('findings', '')}"
                for g in event.goals
            ]
            text = "\n".join(rows)
        if text:
            self.put([CONVERSATION], Answer(text, title="report"))
