"""One ACP session's runs: a prompt starts a run on the Session (the runner the app and
``soothe -p`` use), its events go out as session updates until it ends, and how it ended
is the prompt's stop reason.

- An approval is the client's permission request (allow once / allow always, which is
  the session's rule as the app's "always" is / reject), answered on the broker.
- A clarification (an ask_user step) is sent as the agent's message and ends the turn;
  the run waits on the broker meanwhile, and the next prompt's text answers it.
- ``session/cancel`` is the app's Esc: the run is cancelled, its step suspended (the
  goal can be resumed: ``/resume``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from soothe.engine import events as ev
from soothe.engine.sanitize import one_line
from soothe.frontends.acp import tool_calls
from soothe.frontends.acp.translate import Translator, split_answers

if TYPE_CHECKING:
    from soothe.engine.bus import Subscription
    from soothe.engine.outcome import RunOutcome
    from soothe.engine.session import Session

log = logging.getLogger(__name__)

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]

STOP_BY_KIND: dict[str, StopReason] = {
    "context_overflow": "max_tokens",
    "run_limit": "max_turn_requests",
    "ValueError": "refusal",  # the request refused as given (an unknown skill, say)
}
"""A failed run's kind (``RunFailed.kind``) as the protocol's stop reason; any other
failure ends the turn (its error line was sent as the agent's message)."""

ALLOW_ONCE, ALLOW_ALWAYS, REJECT = "allow_once", "allow_always", "reject"


@dataclass
class Run:
    """A run in flight and the subscription its events are read from."""

    task: asyncio.Task[Any]
    sub: Subscription
    failure: str = ""
    """The kind of the RunFailed it published, if any."""

    @classmethod
    def start(cls, session: Session, work: Callable[[], Awaitable[RunOutcome]]) -> Run:
        sub = session.bus.subscribe(f"thread:{session.thread_id}", maxsize=5000)
        task = asyncio.ensure_future(work())
        task.add_done_callback(lambda _: sub.close())
        return cls(task, sub)


@dataclass
class AcpSession:
    """One ACP session: one Soothe thread (its id is the session id)."""

    id: str
    cwd: str
    servers: list[Any]
    translator: Translator
    mode: str = "ask"
    created: bool = False
    """The thread was created by this process (deleted at exit if nothing was asked)."""
    run: Run | None = None
    asked: ev.ClarificationRequested | None = None
    cancelled: bool = False
    permissions: set[asyncio.Task[None]] = field(default_factory=set)


Send = Callable[[str, Any], Awaitable[None]]
Ask = Callable[..., Awaitable[Any]]


class Turns:
    """Drives the runs of the ACP sessions on one Session, one run at a time."""

    def __init__(self, session: Session, send: Send, ask_permission: Ask) -> None:
        self.session = session
        self.send = send
        self.ask_permission = ask_permission

    @property
    def workspace(self) -> Path:
        return self.session.settings.tools.resolved_workspace()

    # --- a prompt -----------------------------------------------------------------------

    async def prompt(self, state: AcpSession, text: str) -> StopReason:
        state.cancelled = False
        if state.asked is not None and state.run is not None and not state.run.task.done():
            asked, state.asked = state.asked, None
            if self._answer(asked, text):
                return await self._follow(state, state.run)
        await self.stop_parked(state)
        self.session.thread_id = state.id
        if text.strip() == "/resume":
            if not self.session.unfinished_goals():
                await self._say(state, "Nothing to resume in this session.")
                return "end_turn"
            work: Callable[[], Awaitable[RunOutcome]] = self.session.resume
        else:
            await self._title(state, text)
            autonomous = state.mode == "autonomous"
            work = lambda: self.session.run(text, autonomous=autonomous)  # noqa: E731
        state.run = Run.start(self.session, work)
        return await self._follow(state, state.run)

    def _answer(self, asked: ev.ClarificationRequested, text: str) -> bool:
        from soothe.engine.interact import ClarificationResponse, UnknownRequest

        answers = split_answers(text, len(asked.questions))
        try:
            self.session.broker.answer(asked.request_id, ClarificationResponse(answers=answers))
        except UnknownRequest:  # timed out or cancelled meanwhile: a new request then
            return False
        return True

    async def _title(self, state: AcpSession, text: str) -> None:
        """A thread made by ``session/new`` is titled by its first request."""
        from soothe.engine.loader import split_task

        context = self.session.context
        thread = context.get_thread(state.id)
        if thread is None or not state.created or await context.messages(state.id, limit=1):
            return
        title = " ".join(split_task(text)[0].split())[:60]
        if title:
            await context.touch_thread(state.id, title)

    async def _say(self, state: AcpSession, text: str) -> None:
        import acp

        await self.send(state.id, acp.update_agent_message_text(text))

    async def _follow(self, state: AcpSession, run: Run) -> StopReason:
        """Send the run's events as updates until it ends (its stop reason) or asks the
        user a question (end_turn, the run waiting for the next prompt)."""
        translator = state.translator
        while True:
            try:
                event = await run.sub.get()
            except StopAsyncIteration:
                break
            for update in translator.updates(event):
                await self.send(state.id, update)
            if isinstance(event, ev.ApprovalRequested):
                task = asyncio.ensure_future(self._permission(state, event))
                state.permissions.add(task)
                task.add_done_callback(state.permissions.discard)
            elif isinstance(event, ev.ClarificationRequested):
                if self.session.broker.get(event.request_id) is not None:
                    state.asked = event
                    return "end_turn"
            elif isinstance(event, ev.RunFailed):
                run.failure = event.kind
        for task in list(state.permissions):
            task.cancel()
        with contextlib.suppress(BaseException):
            await run.task
        state.run = None
        if state.cancelled or run.failure == "interrupted":
            return "cancelled"
        return STOP_BY_KIND.get(run.failure, "end_turn")

    # --- approvals ----------------------------------------------------------------------

    async def _permission(self, state: AcpSession, event: ev.ApprovalRequested) -> None:
        """Ask the client; answer the broker as the app's dialog does."""
        from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

        from soothe.engine.interact import ApprovalResponse, UnknownRequest

        request = self.session.broker.get(event.request_id)
        whole = getattr(request, "args", None)
        args = dict(whole) if isinstance(whole, dict) else dict(event.args)
        translator = state.translator
        tool_call_id = translator.open_call_of(event.goal_id, event.step_id, event.tool)
        if tool_call_id is None:  # an approval without a call shown (an MCP tool's)
            call = ev.ToolCalled(
                call_id=event.request_id,
                tool=event.tool,
                args=event.args,
                **{k: getattr(event, k) for k in ("thread_id", "loop_id", "goal_id", "step_id")},
            )
            for update in translator.updates(call):
                await self.send(state.id, update)
            tool_call_id = translator.open_call_of(event.goal_id, event.step_id, event.tool)
        assert tool_call_id is not None
        content: list[Any] = []
        diff = tool_calls.diff_of(self.workspace, event.tool, args)
        if diff is not None:
            translator.add_diff(tool_call_id, diff)
            content.append(diff)
        elif event.tool == "run_shell":
            import acp

            command = tool_calls.shown(str(args.get("command", "")))
            content.append(acp.tool_content(acp.text_block(f"```sh\n{command}\n```")))
        pending = ToolCallUpdate(
            tool_call_id=tool_call_id,
            title=tool_calls.title_of(event.tool, args),
            kind=tool_calls.kind_of(event.tool),
            status="pending",
            content=content or None,
            locations=tool_calls.locations_of(self.workspace, event.tool, args) or None,
            raw_input={str(k): tool_calls.shown(str(v)) for k, v in args.items()},
        )
        options = [
            PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
            PermissionOption(
                option_id=ALLOW_ALWAYS, name=always_label(event.tool, args), kind="allow_always"
            ),
            PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
        ]
        try:
            reply = await self.ask_permission(
                session_id=state.id, tool_call=pending, options=options
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the client failed to answer: a refusal, said so
            log.warning("permission request failed: %s", one_line(str(exc), 200))
            reply = None
        outcome = getattr(reply, "outcome", None)
        chosen = outcome.option_id if isinstance(outcome, AllowedOutcome) else REJECT
        answer: Any = {ALLOW_ONCE: "approve_once", ALLOW_ALWAYS: "approve_always"}.get(
            chosen, "deny"
        )
        reason = "" if isinstance(outcome, AllowedOutcome) or outcome is None else "cancelled"
        with contextlib.suppress(UnknownRequest):  # answered elsewhere (timeout, cancel)
            self.session.broker.answer(
                event.request_id, ApprovalResponse(outcome=answer, reason=reason)
            )

    # --- cancel -------------------------------------------------------------------------

    async def cancel(self, state: AcpSession) -> None:
        """The app's Esc: the run is cancelled (its step suspended, resumable); a prompt
        in flight then ends with ``cancelled``."""
        state.cancelled = True
        run = state.run
        if run is None or run.task.done():
            return
        run.task.cancel()
        if state.asked is not None:  # no prompt follows it: wait for it here
            state.asked = None
            await self.stop_parked(state)

    async def stop_parked(self, state: AcpSession) -> None:
        """A run waiting for an answer that will not come (another request was sent, or
        the session cancelled): cancelled, its step suspended; its last events read."""
        run = state.run
        if run is None:
            return
        state.asked = None
        if not run.task.done():
            run.task.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(run.task), 10.0)
        for event in run.sub.drain():
            for update in state.translator.updates(event):
                await self.send(state.id, update)
        state.run = None

    async def stop_all(self, states: list[AcpSession]) -> None:
        for state in states:
            if state.run is not None and not state.run.task.done():
                state.run.task.cancel()
        for state in states:
            if state.run is not None:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(state.run.task), 10.0)
                state.run = None


def always_label(tool: str, args: dict[str, Any]) -> str:
    """What "always" covers, as the app's dialog says it: the tool, or for run_shell the
    command's program (a compound command: this command only)."""
    from soothe.engine.agent.approval import shell_program
    from soothe.engine.sanitize import visible

    if tool != "run_shell":
        return f"Always allow {visible(tool)}"
    program = shell_program(str(args.get("command", "")))
    return f"Always allow {visible(program)}" if program else "Always allow this command"
