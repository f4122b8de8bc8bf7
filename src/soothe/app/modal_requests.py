"""Modal requests: the engine asks (clarification, tool approval), a modal answers.

The handler opens them from the request events; the answer goes back through the
session's interact broker. A request answered elsewhere (timeout, interrupt) closes its
modal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.screen import Screen

from soothe.app.screens.requests import ApprovalModal, ClarificationModal
from soothe.engine.agent.change_preview import ChangePreview, preview_or_problem

if TYPE_CHECKING:
    from soothe.app.base import SootheBase
    from soothe.engine.events import ApprovalRequested, ClarificationRequested

    _Base = SootheBase
else:
    _Base = object


class ModalRequests(_Base):
    def open_clarification(self, event: ClarificationRequested, asker: str) -> None:
        modal = ClarificationModal(event.request_id, self._whole_questions(event), asker)
        self._open_request(event.request_id, modal, self._answer_clarification)
        self.alert("Soothe: a question", "; ".join(event.questions) or "clarification needed")

    def open_approval(self, event: ApprovalRequested, asker: str) -> None:
        args = self._whole_args(event)
        modal = ApprovalModal(
            event.request_id,
            event.tool,
            args,
            event.path,
            asker,
            goal_id=event.goal_id,
            step_id=event.step_id,
            change=self._change(event.tool, args),
        )
        self._open_request(event.request_id, modal, self._answer_approval)
        self.alert("Soothe: approval needed", modal.title_text)

    def _whole_questions(self, event: ClarificationRequested) -> list[str]:
        """The request's own questions: the event's were made plain for the transcript
        (``ViewState.feed``); the dialog shows their control characters visibly."""
        broker = getattr(self.session, "broker", None)
        request = broker.get(event.request_id) if broker is not None else None
        questions = getattr(request, "questions", None)
        return list(questions) if isinstance(questions, list) else list(event.questions)

    def _whole_args(self, event: ApprovalRequested) -> dict[str, Any]:
        """The request's own arguments (the event's are shortened for display)."""
        broker = getattr(self.session, "broker", None)
        request = broker.get(event.request_id) if broker is not None else None
        args = getattr(request, "args", None)
        return dict(args) if isinstance(args, dict) else dict(event.args)

    def _change(self, tool: str, args: dict[str, Any]) -> ChangePreview | None:
        """What the call would change, read from the workspace (nothing is written)."""
        return preview_or_problem(self.settings.tools.resolved_workspace(), tool, args)

    def _open_request(
        self, request_id: str, modal: Screen[Any], answer: Callable[[str, Any], None]
    ) -> None:
        self._requests[request_id] = modal

        def done(result: Any) -> None:
            if self._requests.pop(request_id, None) is not None:
                answer(request_id, result)

        self.push_screen(modal, done)

    def close_request(self, request_id: str) -> None:
        """The request was answered elsewhere (timeout, interrupt): drop its modal."""
        modal = self._requests.pop(request_id, None)
        if modal is not None and modal.is_attached:
            modal.dismiss(None)

    def _answer_clarification(self, request_id: str, answers: list[str] | None) -> None:
        from soothe.engine.interact import ClarificationResponse

        response = (
            ClarificationResponse(outcome="skipped")
            if answers is None
            else ClarificationResponse(outcome="answered", answers=answers)
        )
        self._answer(request_id, response)

    def _answer_approval(self, request_id: str, choice: str | None) -> None:
        from soothe.engine.interact import ApprovalResponse

        outcome = choice if choice in ("approve_once", "approve_always") else "deny"
        self._answer(request_id, ApprovalResponse(outcome=outcome))

    def _answer(self, request_id: str, response: Any) -> None:
        if self.session is None:
            return
        try:
            self.session.broker.answer(request_id, response)
        except KeyError:
            self.notify("That question was already closed.", severity="warning")
