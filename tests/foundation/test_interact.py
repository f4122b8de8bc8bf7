"""InteractBroker: questions and approvals are published, answered, timed out or cancelled."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from soothe.engine.bus import EventBus
from soothe.engine.events import (
    ApprovalAnswered,
    ApprovalRequested,
    ClarificationAnswered,
    ClarificationRequested,
    EventBase,
)
from soothe.engine.interact import (
    ApprovalRequest,
    ApprovalResponse,
    ClarificationRequest,
    ClarificationResponse,
    InteractBroker,
    UnknownRequest,
)

IDS = {"thread_id": "th-1", "loop_id": "lp-1", "goal_id": "g-1", "step_id": "KFA-02"}
WAIT = 2.0


@pytest.fixture
def broker(bus: EventBus) -> InteractBroker:
    return InteractBroker(bus)


def clarification() -> ClarificationRequest:
    return ClarificationRequest(questions=["Which file?", "How deep?"], **IDS)


def approval() -> ApprovalRequest:
    return ApprovalRequest(tool="write_file", args={"path": "a.txt"}, path="a.txt", **IDS)


async def ask_in_task(
    broker: InteractBroker, request: Any, timeout: float | None = None
) -> asyncio.Task[Any]:
    """Start ``broker.ask`` in a task; return once its request event is on the bus."""
    sub = broker.bus.subscribe("thread:th-1")
    task = asyncio.create_task(broker.ask(request, timeout=timeout))
    event = await asyncio.wait_for(sub.get(), WAIT)
    sub.close()
    assert isinstance(event, ClarificationRequested | ApprovalRequested)
    assert event.request_id == request.request_id
    return task


def answered_events(recorded: list[EventBase]) -> list[EventBase]:
    return [e for e in recorded if isinstance(e, ClarificationAnswered | ApprovalAnswered)]


def assert_ids(event: EventBase) -> None:
    assert (event.thread_id, event.loop_id, event.goal_id, event.step_id) == tuple(IDS.values())


async def test_clarification_is_asked_and_answered(
    broker: InteractBroker, recorded: list[EventBase]
) -> None:
    request = clarification()
    task = await ask_in_task(broker, request)
    assert broker.pending() == [request]
    assert broker.get(request.request_id) is request

    response = ClarificationResponse(answers=["a.txt", "two levels"])
    broker.answer(request.request_id, response)
    assert await asyncio.wait_for(task, WAIT) == response

    requested, answered = recorded
    assert isinstance(requested, ClarificationRequested)
    assert requested.questions == ["Which file?", "How deep?"]
    assert isinstance(answered, ClarificationAnswered)
    assert answered.request_id == requested.request_id == request.request_id
    assert answered.outcome == "answered"
    assert answered.answers == ["a.txt", "two levels"]
    assert requested.seq < answered.seq
    assert_ids(requested)
    assert_ids(answered)
    assert broker.pending() == []
    assert broker.get(request.request_id) is None


@pytest.mark.parametrize("outcome", ["approve_once", "approve_always", "deny"])
async def test_approval_is_asked_and_answered(
    broker: InteractBroker, recorded: list[EventBase], outcome: Any
) -> None:
    request = approval()
    task = await ask_in_task(broker, request)
    broker.answer(request.request_id, ApprovalResponse(outcome=outcome))
    result = await asyncio.wait_for(task, WAIT)
    assert isinstance(result, ApprovalResponse)
    assert result.outcome == outcome
    assert result.approved is (outcome != "deny")

    requested, answered = recorded
    assert isinstance(requested, ApprovalRequested)
    assert (requested.tool, requested.args, requested.path) == (
        "write_file",
        {"path": "a.txt"},
        "a.txt",
    )
    assert isinstance(answered, ApprovalAnswered)
    assert answered.request_id == request.request_id
    assert (answered.tool, answered.outcome) == ("write_file", outcome)
    assert_ids(requested)
    assert_ids(answered)
    assert broker.pending() == []


@pytest.mark.parametrize("make", [clarification, approval], ids=["clarification", "approval"])
async def test_timeout_resolves_with_a_timeout_outcome(
    broker: InteractBroker, recorded: list[EventBase], make: Any
) -> None:
    request = make()
    result = await asyncio.wait_for(broker.ask(request, timeout=0.05), WAIT)
    assert result.outcome == "timeout"
    if isinstance(result, ApprovalResponse):
        assert not result.approved
    (answered,) = answered_events(recorded)
    assert answered.request_id == request.request_id
    assert answered.outcome == "timeout"
    assert_ids(answered)
    assert broker.pending() == []
    with pytest.raises(UnknownRequest):
        broker.answer(request.request_id, ClarificationResponse())


@pytest.mark.parametrize("make", [clarification, approval], ids=["clarification", "approval"])
async def test_cancelled_asker_publishes_cancelled_and_leaves_nothing_pending(
    broker: InteractBroker, recorded: list[EventBase], make: Any
) -> None:
    request = make()
    task = await ask_in_task(broker, request)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT)
    (answered,) = answered_events(recorded)
    assert answered.request_id == request.request_id
    assert answered.outcome == "cancelled"
    assert broker.pending() == []


async def test_cancel_all_resolves_every_open_request(
    broker: InteractBroker, recorded: list[EventBase]
) -> None:
    assert broker.cancel_all() == 0
    first, second = clarification(), approval()
    tasks = [await ask_in_task(broker, first), await ask_in_task(broker, second)]
    assert len(broker.pending()) == 2

    assert broker.cancel_all() == 2
    results = await asyncio.wait_for(asyncio.gather(*tasks), WAIT)
    assert isinstance(results[0], ClarificationResponse)
    assert isinstance(results[1], ApprovalResponse)
    assert [r.outcome for r in results] == ["cancelled", "cancelled"]
    answered = answered_events(recorded)
    assert {e.request_id for e in answered} == {first.request_id, second.request_id}
    assert all(e.outcome == "cancelled" for e in answered)
    assert broker.pending() == []
    assert broker.cancel_all() == 0


def test_answering_an_unknown_id_raises(broker: InteractBroker) -> None:
    with pytest.raises(UnknownRequest):
        broker.answer("req-nope", ClarificationResponse())
    assert issubclass(UnknownRequest, KeyError)


@pytest.mark.parametrize(
    ("make", "wrong"),
    [
        (clarification, ApprovalResponse(outcome="approve_once")),
        (approval, ClarificationResponse(answers=["yes"])),
    ],
    ids=["clarification-got-approval", "approval-got-clarification"],
)
async def test_wrong_response_type_raises_and_keeps_the_request_open(
    broker: InteractBroker, recorded: list[EventBase], make: Any, wrong: Any
) -> None:
    request = make()
    task = await ask_in_task(broker, request)
    with pytest.raises(TypeError):
        broker.answer(request.request_id, wrong)
    assert answered_events(recorded) == []
    assert broker.pending() == [request]
    assert not task.done()

    right = (
        ClarificationResponse(outcome="skipped")
        if isinstance(request, ClarificationRequest)
        else ApprovalResponse(outcome="deny")
    )
    broker.answer(request.request_id, right)
    assert await asyncio.wait_for(task, WAIT) == right


async def test_a_second_answer_is_refused(
    broker: InteractBroker, recorded: list[EventBase]
) -> None:
    """A double key press must not publish an answer the asker never receives."""
    request = clarification()
    task = await ask_in_task(broker, request)
    broker.answer(request.request_id, ClarificationResponse(answers=["first"]))
    with pytest.raises(UnknownRequest):
        broker.answer(request.request_id, ClarificationResponse(answers=["second"]))
    assert (await asyncio.wait_for(task, WAIT)).answers == ["first"]
    (answered,) = answered_events(recorded)
    assert answered.answers == ["first"]


async def test_answer_then_cancel_publishes_one_outcome(
    broker: InteractBroker, recorded: list[EventBase]
) -> None:
    request = approval()
    task = await ask_in_task(broker, request)
    broker.answer(request.request_id, ApprovalResponse(outcome="approve_once"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, WAIT)
    assert [e.outcome for e in answered_events(recorded)] == ["approve_once"]
    assert broker.pending() == []


class _Clock:
    """Stands in for the ``time`` module inside soothe.engine.llm.budget."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


async def test_the_run_deadline_stops_while_the_user_is_asked(
    broker: InteractBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An approval left open longer than run.deadline does not fail the run: only the
    run's own time counts (two overlapping asks, as from parallel steps, count once)."""
    from soothe.engine.config import RunSettings
    from soothe.engine.llm import budget as budget_module

    clock = _Clock()
    monkeypatch.setattr(budget_module, "time", clock)
    with budget_module.run_budget(RunSettings(deadline=60, max_model_calls=0)) as budget:
        clock.now += 20  # the run works for 20 s
        first, second = approval(), clarification()
        asking = [await ask_in_task(broker, first), await ask_in_task(broker, second)]
        clock.now += 3600  # the user is at lunch
        broker.answer(first.request_id, ApprovalResponse(outcome="approve_once"))
        await asyncio.wait_for(asking[0], WAIT)
        clock.now += 600  # the second dialog stays open
        broker.answer(second.request_id, ClarificationResponse(answers=["x", "y"]))
        await asyncio.wait_for(asking[1], WAIT)
        assert budget.remaining() == pytest.approx(40)
        budget.admit()  # still within the deadline
        clock.now += 41
        with pytest.raises(Exception, match=r"passed its deadline of 60s"):
            budget.admit()
