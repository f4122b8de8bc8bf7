"""The view model's step events: one live card per step (ViewState inherits this part;
the names it uses below are ViewState's)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from soothe.app.lazy import lazy
from soothe.app.view_port import WAITING_APPROVAL, OpenRequest, one_line
from soothe.widgets.transcript import Awaiting, Block, CardStatus, NoteKind, StepCard, ToolRun

if TYPE_CHECKING:
    from soothe.engine import events as ev
    from soothe.widgets.transcript import Transcript
else:
    ev = lazy("soothe.engine.events")


INTERRUPTED_DETAIL = "interrupted: the process ended during this step"


class StepEvents:
    cards: dict[str, StepCard]
    tools: dict[str, ToolRun]
    paging: bool
    _denied: set[tuple[str | None, str | None, str]]
    requests: dict[str, OpenRequest]

    if TYPE_CHECKING:  # defined by ViewState

        def put(self, keys: Iterable[str], block: Block) -> None: ...

        def changed(self, block: Block) -> None: ...

        def note(self, keys: Iterable[str], text: str, kind: NoteKind = "info") -> None: ...

        def view(self, key: str) -> Transcript: ...

        def _keys(self, event: ev.EventBase, *, conversation: bool = True) -> list[str]: ...

        def _title(self, key: str) -> str: ...

        def _update_step(self, goal_id: str, step_id: str, **changes: Any) -> None: ...

        def _notify(self, message: str, title: str = "", severity: str = "information") -> None: ...

        def _tree_waits(self, goal_id: str) -> None: ...

    # -- events: steps (one live card per step) -------------------------------------------

    def _card(self, event: ev.EventBase, description: str = "") -> StepCard | None:
        """The card of the event's step, made (and placed) on first sight."""
        if not event.goal_id or not event.step_id:
            return None
        key = f"{event.goal_id}/{event.step_id}"
        card = self.cards.get(key)
        started = isinstance(event, ev.StepStarted)
        if card is not None and started and card.status == "active":
            # started again while its card runs: the process that ran it ended mid-step
            # (a stored transcript replayed: nothing said so then); as _settle_cards says
            self._end_card(card, "suspended", INTERRUPTED_DETAIL)
        if card is None or (started and card.status != "active"):
            card = StepCard(event.goal_id, event.step_id, description)
            self.cards[key] = card
            if self.paging and not isinstance(event, ev.StepStarted):
                return card  # a step that started before the page: its card is older
            self.put(self._keys(event), card)
        return card

    def _card_changed(self, card: StepCard) -> None:
        card.version += 1
        self.changed(card)

    def _card_awaits(self, goal_id: str, step_id: str) -> None:
        """The step's card says what it waits for (its live box, its header's mark): the
        newest of its open requests, while it runs."""
        card = self.cards.get(f"{goal_id}/{step_id}")
        if card is None:
            return
        waits: Awaiting | None = None
        if card.status == "active":
            mine = [
                r.kind
                for r in self.requests.values()
                if (r.goal_id, r.step_id) == (goal_id, step_id)
            ]
            waits = mine[-1] if mine else None
        if card.awaiting != waits:
            card.awaiting = waits
            self._card_changed(card)

    def _approval_row(self, event: ev.ApprovalRequested) -> ToolRun | None:
        """The row of the call that asks: its card's call of that tool not yet asked about,
        or, when the step asks before it publishes the call (a step resumed from its
        checkpoint asks again first), a row made now that the call fills when it comes."""
        if not event.goal_id or not event.step_id:
            return None
        card = self._card(event)
        if card is None:
            return None
        asked = (p for p in card.parts if isinstance(p, ToolRun) and p.tool == event.tool)
        found = next((p for p in asked if p.ok is None and not p.approval), None)
        if found is not None:
            return found
        run = ToolRun(call_id="", tool=event.tool, args=dict(event.args))
        card.add_tool(run)
        return run

    def _step_started(self, event: ev.StepStarted) -> None:
        if event.goal_id and event.step_id:
            self._update_step(
                event.goal_id,
                event.step_id,
                status="active",
                description=event.description,
                kind=event.kind,
            )
            self.view(f"{event.goal_id}/{event.step_id}").title = self._title(
                f"{event.goal_id}/{event.step_id}"
            )
        card = self._card(event, event.description)
        if card is None:  # a step outside a goal: a plain note
            self.note(self._keys(event), one_line(event.description, 120), "step")

    def _step_token(self, event: ev.StepToken, tokens: int) -> None:
        card = self._card(event)
        if card is None:
            return
        card.add_text(event.text, tokens)
        self.changed(card)

    def _step_thinking(self, event: ev.StepThinking) -> None:
        """A piece of the step's reasoning: kept on its card, folded (not its text)."""
        card = self._card(event)
        if card is None:
            return
        card.add_thinking(event.text)
        self.changed(card)

    def _tool_called(self, event: ev.ToolCalled) -> None:
        card = self._card(event)
        again = self._same_call(event, card)
        if again is not None:
            # the same call, not yet answered: a step that stopped for the user's approval
            # runs its tool node again once answered, and publishes the call again (or its
            # row was made by the approval it asked first)
            again.call_id = event.call_id
            again.args = dict(event.args)
            again.version += 1
            self.tools[event.call_id] = again
            if card is not None:
                self._card_changed(card)
            else:
                self.changed(again)
            return
        run = ToolRun(call_id=event.call_id, tool=event.tool, args=dict(event.args))
        self.tools[event.call_id] = run
        if card is None:
            self.put(self._keys(event), run)
            return
        card.add_tool(run)
        self.changed(card)

    def _same_call(self, event: ev.ToolCalled, card: StepCard | None) -> ToolRun | None:
        """The row this call already has in its step's current card, if any. Only that
        card's: a step resumed after a pause has a new card, and the paused one keeps
        what it showed (call ids can also repeat across processes)."""
        known = self.tools.get(event.call_id)
        if card is None:
            return known if known is not None and known.tool == event.tool else None
        if known is not None and known.tool == event.tool and known in card.parts:
            return known
        return next(
            (
                p
                for p in card.parts
                if isinstance(p, ToolRun) and not p.call_id and p.tool == event.tool
            ),
            None,
        )

    def _tool_result(self, event: ev.ToolResult) -> None:
        run = self.tools.pop(event.call_id, None)
        card = self._card(event)
        if run is None:
            run = ToolRun(call_id=event.call_id, tool=event.tool)
            if card is None:
                self.put(self._keys(event), run)
            else:
                card.add_tool(run)
        run.output = event.output
        run.ok = event.ok
        run.truncated = event.truncated
        run.version += 1
        if card is not None:
            self._card_changed(card)
        else:
            self.changed(run)
        denied = (event.goal_id, event.step_id, event.tool)
        if not event.ok and denied in self._denied:
            self._denied.discard(denied)  # the output is written for the model, not for you
            self._notify(f"{event.tool} denied", "", "warning")
        elif not event.ok:
            first = event.output.strip().splitlines()[0] if event.output.strip() else "failed"
            self._notify(one_line(first, 200), f"Tool {event.tool} failed", "warning")

    def _finish_card(self, event: ev.EventBase, status: CardStatus, detail: str = "") -> None:
        card = self._card(event)
        if card is not None:
            self._end_card(card, status, detail)

    def _end_card(self, card: StepCard, status: CardStatus, detail: str) -> None:
        """The one way a card stops running: its step ended, paused, or the process that
        ran it is gone (a reopened thread). What it asked is moot once it stops."""
        card.status = status
        card.detail = detail
        card.awaiting = None
        moot = [
            rid
            for rid, r in self.requests.items()
            if (r.goal_id, r.step_id) == (card.goal_id, card.step_id)
        ]
        for request_id in moot:
            row = self.requests.pop(request_id).row
            if row is not None and row.approval == WAITING_APPROVAL:
                row.approval = "not answered"
                row.version += 1
        self._card_changed(card)
        if moot:  # the tree's marks change only with the open requests
            self._tree_waits(card.goal_id)

    def _step_completed(self, event: ev.StepCompleted) -> None:
        if event.goal_id and event.step_id:
            self._update_step(event.goal_id, event.step_id, status="completed")
        card = self._card(event)
        if card is None:
            return
        card.duration_s = event.duration_s
        # the summary repeats the streamed text: say it only when nothing streamed
        summary = one_line(event.summary, 120) if event.summary and not card.text else ""
        self._finish_card(event, "completed", summary)

    def _step_failed(self, event: ev.StepFailed) -> None:
        if event.goal_id and event.step_id:
            self._update_step(event.goal_id, event.step_id, status="failed")
        what: CardStatus = "cancelled" if event.cancelled else "failed"
        self._finish_card(event, what, one_line(event.error, 200))
        if not self.cards.get(f"{event.goal_id}/{event.step_id}"):
            self.note(self._keys(event), f"step {what}: {event.error}", "error")
        if not event.cancelled:
            label = "/".join(p for p in (event.goal_id, event.step_id) if p) or "step"
            self._notify(one_line(event.error, 200), f"Step {label} failed", "error")

    def _step_skipped(self, event: ev.StepSkipped) -> None:
        if event.goal_id and event.step_id:
            self._update_step(event.goal_id, event.step_id, status="skipped")
        reason = f": {event.reason}" if event.reason else ""
        self.note(self._keys(event, conversation=False), f"{event.step_id} skipped{reason}")

    def _step_suspended(self, event: ev.StepSuspended) -> None:
        """Back to pending, not finished: the card says paused until the step resumes
        (its StepStarted then opens a new card that continues from the checkpoint)."""
        if event.goal_id and event.step_id:
            self._update_step(event.goal_id, event.step_id, status="pending")
        reason = one_line(event.reason, 200) if event.reason else ""
        if self.cards.get(f"{event.goal_id}/{event.step_id}"):
            self._finish_card(event, "suspended", f"paused: {reason}" if reason else "paused")
