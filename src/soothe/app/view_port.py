"""The view model's port to the screen, and the small helpers it shares with the app."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from soothe.app.lazy import lazy
from soothe.widgets.icons import STATUS_WORDS
from soothe.widgets.transcript import (
    Answer,
    Awaiting,
    Block,
    NoteKind,
    StepCard,
    ToolRun,
    Transcript,
)

if TYPE_CHECKING:
    from soothe.app.view_state import ViewState
    from soothe.engine import events as ev
    from soothe.engine import views as models
    from soothe.engine.views import EvidenceView, GoalView, ThreadSnapshot
else:
    ev = lazy("soothe.engine.events")
    models = lazy("soothe.engine.views")

CONVERSATION = "conversation"
WAITING_APPROVAL = "waiting for approval"


class ViewPort(Protocol):
    """What the view model asks of the screen (the app implements it)."""

    def upsert_goal(self, goal: GoalView) -> None: ...
    def remove_goal(self, goal_id: str) -> None: ...
    def clear_goals(self) -> None: ...
    def goals_changed(self, count: int) -> None: ...
    def show(self, transcript: Transcript) -> None: ...
    def touch(self, blocks: list[Block]) -> None: ...
    def set_evidence(self, entries: list[EvidenceView]) -> None: ...
    def add_evidence(self, entries: list[EvidenceView]) -> None: ...
    def status(self, **fields: Any) -> None: ...
    def notify(self, message: str, title: str = "", severity: str = "information") -> None: ...
    def run_started(self) -> None: ...
    def run_ended(self, duration: float | None) -> None: ...
    def server_lost(self, error: str) -> None: ...
    def server_answered(self) -> None:
        """A model call was answered by the server (it is reachable, whatever was seen)."""

    def set_awaiting(self, goal_id: str, waits: dict[str, Awaiting]) -> None:
        """What the goal's steps wait for from the user, by step id ("" for the goal
        itself); empty when nothing waits."""

    def open_clarification(self, event: ev.ClarificationRequested, asker: str) -> None: ...
    def open_approval(self, event: ev.ApprovalRequested, asker: str) -> None: ...
    def close_request(self, request_id: str) -> None: ...
    def rebuild(self, key: str, first: int, last: int) -> None:
        """Read the stored records of a released view, from the one with origin ``first``
        to the one with origin ``last``, and hand them to ``ViewState.rebuilt``."""

    def follow(self, key: str) -> None:
        """A goal that became active wants the middle panel."""

    def take_panel(self) -> None:
        """The user's own request started: the conversation takes the middle panel."""


class OpenRequest(NamedTuple):
    """A request waiting for the user's answer, and the tool call's row it is about."""

    goal_id: str
    step_id: str
    kind: Awaiting
    row: ToolRun | None = None


class NullPort:
    """A port to no screen: a scratch view model rebuilds blocks with it (paging back)."""

    def __getattr__(self, name: str) -> Any:
        return _ignore


def _ignore(*args: Any, **kwargs: Any) -> None:
    return None


def one_line(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parents_first(views: list[GoalView]) -> list[GoalView]:
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


def records_of(snapshot: ThreadSnapshot) -> list[tuple[ev.EventBase, int, int]]:
    """The stored transcript of a snapshot as events to replay (with their token counts
    and record ids)."""
    return parse_records(snapshot.transcript)


def parse_records(rows: Iterable[dict[str, Any]]) -> list[tuple[ev.EventBase, int, int]]:
    return [
        (ev.parse_event(r["event"]), int(r.get("tokens", 1)), int(r.get("id", 0))) for r in rows
    ]


def same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def restore_answers(self: ViewState, snapshot: ThreadSnapshot) -> None:
    """A thread stored before transcripts were kept: its goals' final answers."""
    conversation = self.view(CONVERSATION)
    title = snapshot.title or snapshot.thread_id
    conversation.note(f"Thread {title} restored", "info")
    if snapshot.answers.get(""):
        conversation.add(Answer(snapshot.answers[""]))
        self.answers[""] = snapshot.answers[""]
    for goal in snapshot.goals:
        self.goals[goal.id] = goal
        goal_view = self.view(goal.id)
        goal_view.note(f"{goal.id} {STATUS_WORDS.get(goal.status, goal.status)}")
        answer = snapshot.answers.get(goal.id)
        if answer:
            block = Answer(answer, title=goal.id)
            goal_view.add(block)
            conversation.note(f"{goal.id} · {one_line(goal.description, 80)}", "plan")
            conversation.add(block)
            self.answers[goal.id] = answer
        if goal.error:
            goal_view.note(goal.error, "error")


class RequestEvents:
    """The view model's handling of evidence, clarifications and approvals (ViewState
    inherits it; the names below are ViewState's)."""

    port: ViewPort
    live: bool
    goals: dict[str, GoalView]
    cards: dict[str, StepCard]
    evidence: dict[str, EvidenceView]
    _denied: set[tuple[str | None, str | None, str]]
    requests: dict[str, OpenRequest]

    def note(self, keys: Iterable[str], text: str, kind: NoteKind = "info") -> None:
        raise NotImplementedError

    def _card_awaits(self, goal_id: str, step_id: str) -> None:
        raise NotImplementedError

    def _approval_row(self, event: ev.ApprovalRequested) -> ToolRun | None:
        raise NotImplementedError

    def _card_changed(self, card: StepCard) -> None:
        raise NotImplementedError

    def _keys(self, event: ev.EventBase, *, conversation: bool = True) -> list[str]:
        raise NotImplementedError

    # -- events: evidence and requests ---------------------------------------------------------

    def _evidence_added(self, event: ev.EvidenceAdded) -> None:
        entry = models.EvidenceView(
            evidence_id=event.evidence_id,
            kind=event.kind,
            summary=event.summary,
            content=event.content,
            goal_id=event.goal_id,
            step_id=event.step_id,
        )
        self.evidence[entry.evidence_id] = entry
        if self.live:
            self.port.add_evidence([entry])

    @staticmethod
    def _who(event: ev.EventBase) -> str:
        """Who asks, as the notes name it: ``G1/S-02`` (parallel steps ask at once),
        ``G1``, or ``agent``."""
        if event.goal_id and event.step_id:
            return f"{event.goal_id}/{event.step_id}"
        return event.goal_id or "agent"

    def _asker(self, event: ev.EventBase) -> str:
        goal = self.goals.get(event.goal_id or "")
        if goal is None:
            return ""
        if not event.step_id:
            return f"{goal.id} “{one_line(goal.description, 40)}”"
        step = next((s for s in goal.steps if s.id == event.step_id), None)
        what = f" “{one_line(step.description, 40)}”" if step and step.description else ""
        return f"{goal.id} step {event.step_id}{what}"

    def _opened(self, event: ev.EventBase, request_id: str, request: OpenRequest) -> None:
        self.requests[request_id] = request
        self._card_awaits(request.goal_id, request.step_id)
        self._tree_waits(request.goal_id)

    def _closed(self, event: ev.EventBase, request_id: str) -> OpenRequest | None:
        request = self.requests.pop(request_id, None)
        self._card_awaits(event.goal_id or "", event.step_id or "")
        self._tree_waits(event.goal_id or "")
        if self.live:
            self.port.close_request(request_id)
        return request

    def _tree_waits(self, goal_id: str) -> None:
        """The tree marks the goal, and each of its steps, that waits for the user: drawn
        from the open requests, so one answer clears only what it answered."""
        if self.live and goal_id:
            waits = {r.step_id: r.kind for r in self.requests.values() if r.goal_id == goal_id}
            self.port.set_awaiting(goal_id, waits)

    def _clarification_requested(self, event: ev.ClarificationRequested) -> None:
        asks = "; ".join(event.questions)
        self.note(self._keys(event), f"{self._who(event)} asks: {asks}", "warn")
        request = OpenRequest(event.goal_id or "", event.step_id or "", "clarification")
        self._opened(event, event.request_id, request)
        if self.live:
            self.port.open_clarification(event, self._asker(event))

    def _clarification_answered(self, event: ev.ClarificationAnswered) -> None:
        text = {
            "answered": "answered: " + "; ".join(event.answers),
            "skipped": "question skipped",
            "auto": "answered automatically",
            "timeout": "question timed out",
            "cancelled": "question cancelled",
        }[event.outcome]
        self.note(self._keys(event), f"{self._who(event)} · {text}", "info")
        self._closed(event, event.request_id)

    def _approval_requested(self, event: ev.ApprovalRequested) -> None:
        # the call's row in its step's card says it waits, and then what the user said,
        # where the call is (a note after the card read as if it came after the call)
        row = self._approval_row(event)
        request = OpenRequest(event.goal_id or "", event.step_id or "", "approval", row)
        if row is None:
            text = f"{self._who(event)} needs approval to run {event.tool}"
            self.note(self._keys(event), text, "warn")
        else:
            self._mark_row(request, WAITING_APPROVAL)
        self._opened(event, event.request_id, request)
        if self.live:
            self.port.open_approval(event, self._asker(event))

    def _approval_answered(self, event: ev.ApprovalAnswered) -> None:
        words: dict[str, tuple[str, NoteKind]] = {
            "approve_once": ("approved once", "ok"),
            "approve_always": ("approved for the rest of the session", "ok"),
            "deny": ("denied", "warn"),
            "timeout": ("approval timed out", "warn"),
            "cancelled": ("approval cancelled", "warn"),
        }
        text, kind = words[event.outcome]
        if event.outcome == "deny":
            self._denied.add((event.goal_id, event.step_id, event.tool))
        request = self._closed(event, event.request_id)
        if request is not None and request.row is not None:
            short = "approved always" if event.outcome == "approve_always" else text
            self._mark_row(request, short)
        else:
            tool = event.tool or "tool"
            self.note(self._keys(event), f"{self._who(event)} · {tool} {text}", kind)

    def _mark_row(self, request: OpenRequest, approval: str) -> None:
        row = request.row
        if row is None:
            return
        row.approval = approval
        row.version += 1
        card = self.cards.get(f"{request.goal_id}/{request.step_id}")
        if card is not None:
            self._card_changed(card)
