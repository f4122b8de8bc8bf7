"""Requests that need somebody's answer: clarifications and tool approvals.

Engine code awaits ``broker.ask(request)``. The broker publishes the request event and
parks a future; whoever answers (the TUI modal, the headless prompt, a test) calls
``broker.answer(request_id, response)``. A timeout or a cancellation resolves with an
outcome saying so, never with an exception the caller did not ask for.

A request keeps its arguments whole (whoever answers may look at them, e.g. to show a
diff); the event it publishes carries a shortened copy (``preview``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from soothe.engine.agent.capping import preview
from soothe.engine.bus import EventBus
from soothe.engine.events import (
    ApprovalAnswered,
    ApprovalRequested,
    ClarificationAnswered,
    ClarificationRequested,
)
from soothe.engine.llm.budget import user_wait
from soothe.engine.scope import Scope


def _request_id() -> str:
    return "req-" + uuid.uuid4().hex[:10]


class _RequestBase(BaseModel):
    request_id: str = Field(default_factory=_request_id)
    thread_id: str = ""
    loop_id: str | None = None
    goal_id: str | None = None
    step_id: str | None = None

    @property
    def scope(self) -> Scope:
        return Scope(self.thread_id, self.loop_id, self.goal_id, self.step_id)

    @classmethod
    def within(cls, scope: Scope, **fields: Any) -> Any:
        """This kind of request, asked from ``scope`` (its thread, loop, goal and step)."""
        return cls(**scope.fields(), **fields)


class ClarificationRequest(_RequestBase):
    questions: list[str]


class ApprovalRequest(_RequestBase):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    path: str = ""


ClarificationOutcome = Literal["answered", "skipped", "auto", "timeout", "cancelled"]
ApprovalOutcome = Literal["approve_once", "approve_always", "deny", "timeout", "cancelled"]


class ClarificationResponse(BaseModel):
    outcome: ClarificationOutcome = "answered"
    answers: list[str] = Field(default_factory=list)


class ApprovalResponse(BaseModel):
    outcome: ApprovalOutcome
    reason: str = ""

    @property
    def approved(self) -> bool:
        return self.outcome in ("approve_once", "approve_always")


Request = ClarificationRequest | ApprovalRequest
Response = ClarificationResponse | ApprovalResponse


class UnknownRequest(KeyError):
    pass


class InteractBroker:
    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self._pending: dict[str, tuple[Request, asyncio.Future[Response]]] = {}

    def pending(self) -> list[Request]:
        return [req for req, _ in self._pending.values()]

    def get(self, request_id: str) -> Request | None:
        item = self._pending.get(request_id)
        return item[0] if item else None

    async def ask(self, request: Request, timeout: float | None = None) -> Any:
        """Publish the request and wait for its answer (typed by the request kind)."""
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self._pending[request.request_id] = (request, future)
        self.bus.publish(self._requested_event(request))
        try:
            with user_wait():  # the run's deadline does not run while the user is asked
                return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            return self._finish(request, self._closing(request, "timeout"))
        except asyncio.CancelledError:
            if not future.done():  # else its answer was already published
                self._finish(request, self._closing(request, "cancelled"))
            raise
        finally:
            self._pending.pop(request.request_id, None)

    def answer(self, request_id: str, response: Response) -> None:
        item = self._pending.get(request_id)
        if item is None:
            raise UnknownRequest(request_id)
        request, future = item
        if future.done():  # answered or cancelled; the asker has not resumed yet
            raise UnknownRequest(request_id)
        expected: type[ClarificationResponse] | type[ApprovalResponse] = (
            ClarificationResponse if isinstance(request, ClarificationRequest) else ApprovalResponse
        )
        if not isinstance(response, expected):
            raise TypeError(f"{request_id} needs a {expected.__name__}")
        self._finish(request, response)
        if not future.done():
            future.set_result(response)

    def answer_open(self, covered: Callable[[Request], bool], response: Response) -> int:
        """Answer every open request ``covered`` accepts with ``response``: an "approve
        always" also answers the requests it covers that were already waiting (parallel
        steps ask at once). How many were answered."""
        count = 0
        for request_id, (request, future) in list(self._pending.items()):
            if not future.done() and covered(request):
                self.answer(request_id, response)
                count += 1
        return count

    def cancel_all(self) -> int:
        """Resolve every open request as cancelled (an interrupted run)."""
        count = 0
        for request, future in list(self._pending.values()):
            if not future.done():
                response = self._closing(request, "cancelled")
                self._finish(request, response)
                future.set_result(response)
                count += 1
        return count

    @staticmethod
    def _closing(request: Request, outcome: Literal["timeout", "cancelled"]) -> Response:
        if isinstance(request, ClarificationRequest):
            return ClarificationResponse(outcome=outcome)
        return ApprovalResponse(outcome=outcome, reason=f"approval {outcome}")

    def _finish(self, request: Request, response: Response) -> Response:
        ids = request.scope.fields()
        if isinstance(request, ClarificationRequest):
            assert isinstance(response, ClarificationResponse)
            self.bus.publish(
                ClarificationAnswered(
                    request_id=request.request_id,
                    outcome=response.outcome,
                    answers=response.answers,
                    **ids,
                )
            )
        else:
            assert isinstance(response, ApprovalResponse)
            self.bus.publish(
                ApprovalAnswered(
                    request_id=request.request_id,
                    tool=request.tool,
                    outcome=response.outcome,
                    **ids,
                )
            )
        return response

    @staticmethod
    def _requested_event(request: Request) -> ClarificationRequested | ApprovalRequested:
        ids = request.scope.fields()
        if isinstance(request, ClarificationRequest):
            return ClarificationRequested(
                request_id=request.request_id, questions=request.questions, **ids
            )
        return ApprovalRequested(
            request_id=request.request_id,
            tool=request.tool,
            args=preview(request.args),  # a dict stays a dict
            path=request.path,
            **ids,
        )
