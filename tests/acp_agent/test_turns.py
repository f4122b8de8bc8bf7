"""``turns.Turns`` in-process, on the real EventBus and InteractBroker with a run that
publishes what the engine publishes: the stop reasons, the permission choices as the
broker's answers, a clarification ending the turn and the next prompt answering it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from soothe.engine import events as ev
from soothe.engine.bus import EventBus
from soothe.engine.interact import (
    ApprovalRequest,
    ClarificationRequest,
    InteractBroker,
)
from soothe.engine.outcome import RunOutcome
from soothe.frontends.acp.translate import Translator
from soothe.frontends.acp.turns import AcpSession, Turns

IDS = {"thread_id": "T1", "goal_id": "G1", "step_id": "S-01"}


class FakeSession:
    """What Turns uses of a Session; ``script`` is the run (publishes, asks, returns)."""

    def __init__(self, tmp_path: Path, script: Any) -> None:
        self.bus = EventBus()
        self.broker = InteractBroker(self.bus)
        self.thread_id = "T1"
        self.settings = SimpleNamespace(tools=SimpleNamespace(resolved_workspace=lambda: tmp_path))
        self.context = SimpleNamespace(get_thread=lambda _id: None)
        self.script = script
        self.asked: list[Any] = []

    async def run(self, text: str, *, autonomous: bool = False) -> RunOutcome:
        return await self.script(self, text)

    def unfinished_goals(self) -> list[str]:
        return []


def _drive(
    tmp_path: Path, script: Any, prompts: list[str], choices: list[Any] | None = None
) -> tuple[list[str], list[Any], list[Any]]:
    sent: list[Any] = []
    asked: list[Any] = []

    async def send(_sid: str, update: Any) -> None:
        sent.append(update)

    async def ask_permission(**kwargs: Any) -> Any:
        asked.append(kwargs)
        choice = (choices or []).pop(0)
        if choice == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def main() -> list[str]:
        session = FakeSession(tmp_path, script)
        state = AcpSession("T1", str(tmp_path), [], Translator(tmp_path, lambda _g: None))
        turns = Turns(session, send, ask_permission)  # type: ignore[arg-type]
        return [await turns.prompt(state, text) for text in prompts]

    stops = asyncio.run(asyncio.wait_for(main(), 10))
    return stops, sent, asked


def _failing(kind: str) -> Any:
    async def script(session: FakeSession, text: str) -> RunOutcome:
        session.bus.publish(ev.RunFailed(error="no room", kind=kind, thread_id="T1"))
        return RunOutcome(thread_id="T1", status="failed", error="no room", kind=kind)

    return script


@pytest.mark.parametrize(
    ("kind", "stop"),
    [
        ("context_overflow", "max_tokens"),
        ("run_limit", "max_turn_requests"),
        ("ValueError", "refusal"),
        ("unreachable", "end_turn"),
    ],
)
def test_a_failed_run_s_kind_is_the_stop_reason(tmp_path: Path, kind: str, stop: str) -> None:
    stops, sent, _ = _drive(tmp_path, _failing(kind), ["go"])
    assert stops == [stop]
    assert sent[-1].content.text == "\n\nerror: no room\n"


def test_permission_choices_answer_the_broker_as_the_app_does(tmp_path: Path) -> None:
    outcomes: list[str] = []

    async def script(session: FakeSession, text: str) -> RunOutcome:
        for n in range(3):
            session.bus.publish(
                ev.ToolCalled(call_id=f"c{n}", tool="run_shell", args={"command": "ls"}, **IDS)
            )
            request = ApprovalRequest(tool="run_shell", args={"command": "ls"}, **IDS)
            response = await session.broker.ask(request)
            outcomes.append(response.outcome)
            session.bus.publish(
                ev.ToolResult(call_id=f"c{n}", tool="run_shell", output="", ok=True, **IDS)
            )
        session.bus.publish(ev.FinalAnswer(text="ok", thread_id="T1"))
        return RunOutcome(thread_id="T1", status="answered", answer="ok")

    stops, _, asked = _drive(tmp_path, script, ["go"], ["allow_always", "reject", "cancelled"])
    assert stops == ["end_turn"]
    assert outcomes == ["approve_always", "deny", "deny"]
    first = asked[0]
    assert [o.name for o in first["options"]] == ["Allow once", "Always allow ls", "Reject"]
    assert first["tool_call"].tool_call_id == "G1/S-01/c0"
    assert first["tool_call"].content[0].content.text == "```sh\nls\n```"


def test_a_question_ends_the_turn_and_the_next_prompt_answers_it(tmp_path: Path) -> None:
    answers: list[list[str]] = []

    async def script(session: FakeSession, text: str) -> RunOutcome:
        request = ClarificationRequest(questions=["Which file?", "Which line?"], **IDS)
        response = await session.broker.ask(request)
        answers.append(response.answers)
        session.bus.publish(ev.FinalAnswer(text="done", thread_id="T1"))
        return RunOutcome(thread_id="T1", status="answered", answer="done")

    stops, sent, _ = _drive(tmp_path, script, ["go", "a.txt\n3"])
    assert stops == ["end_turn", "end_turn"]
    assert answers == [["a.txt", "3"]]
    texts = [u.content.text for u in sent if u.session_update == "agent_message_chunk"]
    assert texts == [
        "1. Which file?\n2. Which line?\n\nReply to answer (one line per question).",
        "done",
    ]


def test_cancel_stops_the_run_and_the_prompt_says_cancelled(tmp_path: Path) -> None:
    started = asyncio.Event()
    stopped: list[str] = []

    async def script(session: FakeSession, text: str) -> RunOutcome:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            session.bus.publish(
                ev.RunFailed(error="interrupted by the user", kind="interrupted", thread_id="T1")
            )
            stopped.append("suspended")
            raise
        return RunOutcome(thread_id="T1", status="answered")

    async def main() -> str:
        session = FakeSession(tmp_path, script)
        state = AcpSession("T1", str(tmp_path), [], Translator(tmp_path, lambda _g: None))

        async def send(_sid: str, update: Any) -> None:
            pass

        turns = Turns(session, send, send)  # type: ignore[arg-type]
        prompt = asyncio.ensure_future(turns.prompt(state, "go"))
        await started.wait()
        await turns.cancel(state)
        return await prompt

    assert asyncio.run(asyncio.wait_for(main(), 10)) == "cancelled"
    assert stopped == ["suspended"]
