"""``soothe -p``: the same engine, rendered for scripts.

stdout carries the final answer (or NDJSON events with --json); stderr carries a compact
progress line per step when it is a terminal, one line per prompt the server cut to fit
its window (``model.context``), and one ``error:`` line on failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sqlite3
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import IO, Any

from soothe.engine.agent.change_preview import ChangePreview
from soothe.engine.config import Settings
from soothe.engine.events import (
    ApprovalRequested,
    ClarificationRequested,
    ErrorEvent,
    EventBase,
    FinalAnswer,
    GoalCreated,
    GoalVerified,
    ModelContext,
    ModelProfileResolved,
    PlanCreated,
    RunFailed,
    StepCompleted,
    StepFailed,
    StepSkipped,
    StepStarted,
    StepSuspended,
    ToolCalled,
    ToolResult,
)
from soothe.engine.goal_verdicts import verdict_mark, verdict_summary
from soothe.engine.interact import ApprovalResponse, ClarificationResponse
from soothe.engine.outcome import RunOutcome
from soothe.engine.sanitize import json_safe, one_line, plain, plain_fields, visible


def _flat(value: object, limit: int) -> str:
    """One line, however many lines the value has (file content, commands); plain."""
    text = plain(str(value))
    text = " ⏎ ".join(text.splitlines()) if "\n" in text else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


SHOWN_WHOLE = ("command", "path")
"""Arguments an approval question shows whole: what runs and where it writes."""


def _asked(key: str, value: object) -> str:
    """One argument of an approval question, every control character visible (``␛``,
    ``␍``, ``␊`` ...): what the user approves is exactly what runs."""
    text = visible(value if isinstance(value, str) else str(value))
    if key in SHOWN_WHOLE or len(text) <= 60:
        return text
    return f"{text[:59]}… (+{len(text) - 59} chars)"


def approval_question(tool: str, args: dict[str, Any]) -> str:
    """``? allow run_shell(command=echo hi␍␛[2Kls) [y/N/a=always] ``"""
    shown = ", ".join(f"{visible(str(k))}={_asked(str(k), v)}" for k, v in args.items())
    return f"? allow {visible(tool)}({shown}) [y/N/a=always] "


PREVIEW_LINES = 40
"""A headless approval shows at most this many diff lines (the dialog scrolls 400)."""

_DIFF_COLOURS = (("+++", "1"), ("---", "1"), ("@@", "36"), ("+", "32"), ("-", "31"))
"""SGR codes of a diff line by its start: headers bold, hunks cyan, added green,
removed red (the colours of ``git diff``)."""


def wants_colour(stream: IO[str]) -> bool:
    """Colour for ``stream``: a terminal, unless NO_COLOR is set or TERM is dumb."""
    import os

    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def approval_preview(change: ChangePreview | None, *, colour: bool) -> str:
    """What an approval would change, shown above its question: the dialog's own preview
    (``change_preview``: the summary, why the tool would refuse, the unified diff cut at
    ``PREVIEW_LINES``, a multi-line script whole), every control character in it visible,
    coloured like ``git diff`` when ``colour``; "" when there is nothing to add."""
    if change is None or (change.command and "\n" not in change.command):
        return ""  # a one-line command: the question shows it whole

    def paint(line: str, code: str) -> str:
        return f"\x1b[{code}m{line}\x1b[0m" if colour and code else line

    out = [paint(f"  {visible(change.summary)}", "2")]
    if change.problem:
        out.append(paint(f"  ! {visible(change.problem)}", "33"))
    if change.command:  # a script: the question's one line of it is hard to read
        for i, line in enumerate(visible(change.command, keep_newlines=True).splitlines()):
            out.append(f"  {'$' if i == 0 else '>'} {line}")
    for line in change.diff.splitlines():
        shown = visible(line)
        code = next((c for start, c in _DIFF_COLOURS if shown.startswith(start)), "")
        out.append(paint(f"  {shown}", "2" if shown.startswith("... ") else code))
    return "\n".join(out) + "\n"


def progress_line(event: EventBase) -> str | None:
    """One short line per meaningful event, or None for events not worth a line; model,
    tool and file text in it is made plain (no control sequence reaches the terminal)."""
    line = _progress_line(plain_fields(event))
    return None if line is None else " ".join(plain(line).split("\n"))


def _progress_line(event: EventBase) -> str | None:
    step = event.step_id or ""
    match event:
        case GoalCreated():
            return f"goal {event.goal_id}: {event.description[:70]}"
        case PlanCreated():
            ids = ", ".join(s.id for s in event.steps)
            return f"plan ({event.execution_mode}): {ids}"
        case StepStarted():
            return f"▸ {step} {event.description[:70]}"
        case ToolCalled():
            args = ", ".join(f"{k}={_flat(v, 30)}" for k, v in event.args.items())
            return f"  {step} {event.tool}({args})"
        case StepCompleted():
            return f"✓ {step} done ({event.duration_s:.1f}s)"
        case StepFailed():
            return f"✗ {step} failed: {event.error[:100]}"
        case StepSkipped():
            return f"- {step} skipped: {event.reason[:80]}"
        case StepSuspended():
            why = f": {event.reason[:80]}" if event.reason else ""
            return f"‖ {step} paused{why} (resume continues it)"
        case GoalVerified():  # one line: the marks in order, then the summary
            marks = "".join(verdict_mark(c) for c in event.criteria)
            return f"{marks} {event.goal_id} {verdict_summary(event.criteria)}"
        case ErrorEvent():
            return f"! {event.message[:120]}"
        case ModelProfileResolved():
            why = f" ({event.reason})" if event.reason else ""
            return f"model {event.model}: profile {event.profile}{why}"
    return None


def context_line(event: ModelContext, setting: str = "model.num_ctx") -> str:
    """The stderr line for a prompt the server cut to fit its window, whatever stderr is
    (a script must learn its answers came from a clipped prompt); ``setting`` is the one
    that sets the window (``model.num_ctx``, ``model.context_window``)."""
    done = "re-packed and retried" if event.action == "repacked" else "cut again, the call failed"
    return one_line(
        f"soothe: the server cut a prompt to {event.evaluated_tokens} tokens (window "
        f"{event.window}, sent ~{event.sent_tokens}): {done}; raise {setting} or shorten "
        "the request",
        300,
    )


class Answerer:
    """Answers clarifications and approvals for a headless run, by policy or at the TTY."""

    def __init__(self, session: Any, settings: Settings, stdin: IO[str], stderr: IO[str]) -> None:
        self.session = session
        self.settings = settings
        self.stdin = stdin
        self.stderr = stderr

    def _interactive(self) -> bool:
        return self.stdin.isatty()

    async def _prompt(self, text: str) -> str:
        self.stderr.write(text)
        self.stderr.flush()
        line = await asyncio.to_thread(self.stdin.readline)
        return line.rstrip("\n")

    def _whole_args(self, event: ApprovalRequested) -> dict[str, Any]:
        """The request's own arguments (the event's are shortened for display)."""
        request = self.session.broker.get(event.request_id)
        args = getattr(request, "args", None)
        return dict(args) if isinstance(args, dict) else dict(event.args)

    def _preview(self, tool: str, args: dict[str, Any]) -> str:
        """The change the call would make, as the approval dialog shows it (read from
        the workspace, nothing written)."""
        from soothe.engine.agent.change_preview import preview_or_problem

        workspace = self.settings.tools.resolved_workspace()
        change = preview_or_problem(workspace, tool, args, max_lines=PREVIEW_LINES)
        return approval_preview(change, colour=wants_colour(self.stderr))

    async def handle(self, event: EventBase) -> None:
        broker = self.session.broker
        if isinstance(event, ClarificationRequested):
            if self.settings.tools.clarify == "ask" and self._interactive():
                answers = [
                    await self._prompt(f"? {visible(q, keep_newlines=True)}\n> ")
                    for q in event.questions
                ]
                broker.answer(event.request_id, ClarificationResponse(answers=answers))
            else:
                broker.answer(event.request_id, ClarificationResponse(outcome="auto"))
        elif isinstance(event, ApprovalRequested):
            if self._interactive():
                args = self._whole_args(event)
                self.stderr.write(self._preview(event.tool, args))
                reply = await self._prompt(approval_question(event.tool, args))
                outcome = {"y": "approve_once", "a": "approve_always"}.get(
                    reply.strip().lower()[:1], "deny"
                )
                broker.answer(event.request_id, ApprovalResponse(outcome=outcome))
            else:
                broker.answer(
                    event.request_id,
                    ApprovalResponse(
                        outcome="deny", reason="needs approval: run again with --yes to allow"
                    ),
                )


async def _run(settings: Settings, args: argparse.Namespace, seen: dict[str, str]) -> int:
    from soothe.engine.session import Session

    _sigterm_as_interrupt(seen)
    stdout, stderr = sys.stdout, sys.stderr
    show_progress = stderr.isatty() and not args.json
    window_setting = (
        "model.num_ctx" if settings.model.provider == "ollama" else "model.context_window"
    )
    session = Session(settings, thread_id=args.thread)
    answer: str | None = None
    failure: str | None = None
    last: EventBase | None = None
    resumed = False
    # The profile event is published inside start(), before any thread is followed.
    started = session.bus.subscribe("*", maxsize=50)
    try:
        # Inside the try: a start that fails after opening the database (an unknown
        # --thread) must still close it, or aiosqlite's thread keeps the process alive.
        try:
            await session.start()
        finally:
            started.close()
        profile = [e for e in started.drain() if isinstance(e, ModelProfileResolved)]

        def show_profile() -> None:
            """The profile event, once, under the thread the run follows (every --json
            line names one thread); a progress line only for a non-default profile."""
            for event in profile:
                event = event.model_copy(update={"thread_id": session.thread_id})
                _emit(
                    event, args.json, show_progress and event.profile != "default", stdout, stderr
                )
            profile.clear()

        answerer = Answerer(session, settings, sys.stdin, stderr)

        unanswered: set[tuple[str | None, str | None, str]] = set()
        """Calls shown and not yet answered, by goal, step and call id (ids can repeat:
        a server may number them per reply)."""

        async def consume(work: Callable[[], Awaitable[RunOutcome]]) -> None:
            nonlocal answer, failure, last
            answer, failure, last = None, None, None
            show_profile()
            late: list[EventBase] = []

            def show(event: EventBase) -> None:
                seen["thread"] = session.thread_id
                # a call under approval is published again once answered (its tool
                # node runs again): one progress line for it (--json keeps both)
                again = False
                if isinstance(event, ToolCalled | ToolResult):
                    key = (event.goal_id, event.step_id, event.call_id)
                    again = isinstance(event, ToolCalled) and key in unanswered
                    if isinstance(event, ToolCalled):
                        unanswered.add(key)
                    else:
                        unanswered.discard(key)
                if isinstance(event, ModelContext):
                    stderr.write(context_line(event, window_setting) + "\n")
                    stderr.flush()
                _emit(event, args.json, show_progress and not again, stdout, stderr)

            try:
                # aclosing: if rendering fails (e.g. a closed pipe), the run is stopped and
                # its goals suspended before the session closes, not after.
                async with contextlib.aclosing(follow(session, work, late)) as events:
                    async for event in events:
                        show(event)
                        await answerer.handle(event)
                        if isinstance(event, FinalAnswer):
                            answer, last = event.text, event
                            failure = _goal_failure(session, event)
                        elif isinstance(event, RunFailed):
                            failure, last = event.error, event
            except asyncio.CancelledError:
                # Ctrl+C: what the run published as it stopped (``‖ S-01 paused: ...``)
                # is shown before the ``error: interrupted`` line; nothing is answered.
                with contextlib.suppress(OSError):
                    for event in late:
                        show(event)
                raise

        if args.thread and session.unfinished_goals():
            resumed = True
            if show_progress:
                stderr.write(f"resuming thread {one_line(args.thread)}\n")
            await consume(session.resume)
        if args.prompt.strip() and failure is None:
            created = not session.thread_id
            await session.ensure_thread(args.prompt)  # the topic to follow names it
            request = f"/task {args.prompt}" if getattr(args, "task", False) else args.prompt
            try:
                criteria = getattr(args, "done_when", None) or ()
                await consume(
                    lambda: session.run(request, autonomous=args.autonomous, criteria=criteria)
                )
            except Exception:
                if created:
                    await _forget_if_empty(session)
                raise
            if created and (failure is not None or answer is None):
                await _forget_if_empty(session)
    finally:
        await session.close()
    if failure is None and answer is None:
        if args.thread and not args.prompt.strip() and not resumed:
            failure = f"thread {args.thread} has nothing to resume; give a request with -p TEXT"
        elif not args.prompt.strip() and not resumed:
            failure = "empty request: give it with -p TEXT (or --thread ID -p '' to resume)"
        else:
            failure = "the run ended without an answer"
    if args.json:
        if last is None or (failure is not None and not isinstance(last, RunFailed)):
            last = RunFailed(error=failure or "", thread_id=session.thread_id)
        stdout.write(json_safe(last.model_dump_json()) + "\n")
        stdout.flush()
    if failure is not None:
        if args.autonomous and answer and not args.json:
            # the report says what did get done
            stdout.write(plain(answer).rstrip("\n") + "\n")
            stdout.flush()
        stderr.write(f"error: {one_line(failure)}\n")
        return 1
    if not args.json:
        stdout.write(plain(answer or "").rstrip("\n") + "\n")
    stdout.flush()
    return 0


async def _forget_if_empty(session: Any) -> None:
    """A thread this run created that holds no goal after the run failed (an unknown
    skill, a server that never answered) is deleted: ``soothe threads`` must not list a
    thread with nothing in it. Never on an interrupt (its hint names the thread to
    resume); a thread with a goal is kept, whatever became of it."""
    thread_id = session.thread_id
    if not thread_id or session.context.list_goals(thread_id=thread_id):
        return
    with contextlib.suppress(Exception):  # the run's error is what the user must see
        if session.recorder is not None:
            await session.recorder.flush()  # nothing of it is written after the delete
        await session.delete_thread(thread_id)


async def follow(
    session: Any,
    work: Callable[[], Awaitable[RunOutcome]],
    late: list[EventBase] | None = None,
) -> AsyncGenerator[EventBase, None]:
    """Run ``work`` and yield the events of the session's thread as the bus carries them.

    The subscription closes when the work ends, so what is queued is read and then the
    loop stops. If the reader stops early (a closed pipe, Ctrl+C), the run is cancelled
    and given a moment to suspend its goals before the session closes; the events it
    published meanwhile and those not read yet (the step paused, the goal suspended)
    are added to ``late``, since a generator that is closing can no longer yield them.
    """
    sub = session.bus.subscribe(f"thread:{session.thread_id}", maxsize=5000)
    task = asyncio.ensure_future(work())
    task.add_done_callback(lambda _: sub.close())
    try:
        while True:
            # get(), not ``async for``: a cancelled __anext__ closes the subscription,
            # and what the run publishes as it stops would never be queued.
            try:
                event = await sub.get()
            except StopAsyncIteration:
                break
            yield event
        task.result()  # re-raise what the work raised
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(task), 2.0)
        sub.close()
        if late is not None:
            late.extend(sub.drain())


def _goal_failure(session: Any, event: FinalAnswer) -> str | None:
    """Why a final answer does not count as a finished job (exit 1), or None.

    An empty answer, or the answer of a goal that is not ``completed`` (failed, or left
    pending/blocked/suspended), is reported as a failure with the reason, never exit 0."""
    if not event.text.strip():
        return "the run ended with an empty answer"
    if not event.goal_id or not session.context.has_goal(event.goal_id):
        return None
    goal = session.context.get_goal(event.goal_id)
    if goal.status == "completed":
        return None
    if goal.status == "failed":
        return f"the goal could not be completed: {goal.error or 'no reason was given'}"
    # An answer for a goal left pending, blocked or suspended is not a finished job.
    return f"goal {goal.id} is {goal.status.replace('_', ' ')}, not completed"


def _emit(event: EventBase, as_json: bool, show: bool, stdout: IO[str], err: IO[str]) -> None:
    if isinstance(event, ErrorEvent) and event.kind == "mcp" and not (show and not as_json):
        # An MCP server that failed is one line on stderr whatever stderr is: a script
        # must learn that a tool it configured was not there.
        err.write(f"! {one_line(event.message, 300)}\n")
        err.flush()
    if as_json:
        if isinstance(event, FinalAnswer | RunFailed):
            return  # written last, after the stream, so scripts can read the final line

        stdout.write(json_safe(event.model_dump_json()) + "\n")
        stdout.flush()
        return
    if show:
        line = progress_line(event)
        if line:
            err.write(line + "\n")
            err.flush()


def run_headless(settings: Settings, args: argparse.Namespace) -> int:
    from soothe.engine.datalock import DataDirBusy
    from soothe.engine.llm.errors import LLMError
    from soothe.engine.session import StorageError

    seen = {"thread": args.thread or ""}
    try:
        return asyncio.run(_run(settings, args, seen))
    except KeyboardInterrupt:
        # The runner has suspended the active goals and the loop checkpoints are on disk.
        thread = seen["thread"]
        hint = f"; resume with: soothe --thread {thread} -p ''" if thread else ""
        if seen.get("signal") == "terminated":  # SIGTERM: the same stop, exit 128 + 15
            return _fail(args, f"terminated{hint}", 143, kind="interrupted", thread=thread)
        return _fail(args, f"interrupted{hint}", 130, kind="interrupted", thread=thread)
    except LLMError as exc:
        return _fail(args, exc.message, kind=str(exc.kind))
    except (StorageError, DataDirBusy) as exc:
        return _fail(args, str(exc), kind="storage")
    except sqlite3.Error as exc:  # a write failed mid-run (a full disk): which file, why
        from soothe.engine.storage_errors import storage_problem

        problem = storage_problem(exc, settings.storage.db_path)
        return _fail(args, problem, kind="storage", thread=seen["thread"])
    except LookupError as exc:
        return _fail(args, str(exc).strip(chr(39)), kind="not_found")
    finally:
        _restore_sigterm(seen)


def _sigterm_as_interrupt(seen: dict[str, str]) -> None:
    """SIGTERM stops the run the way Ctrl+C does: it calls the SIGINT handler
    ``asyncio.run`` installed (cancel the run, so its steps are suspended and the goal
    can be resumed; a second signal stops at once), and ``seen`` remembers it for the
    exit code (143)."""
    import signal

    on_interrupt = signal.getsignal(signal.SIGINT)
    if not callable(on_interrupt) or on_interrupt is signal.default_int_handler:
        return  # not the event loop's (asyncio.run off the main thread): leave SIGTERM be

    def on_terminate(signum: int, frame: Any) -> None:
        seen["signal"] = "terminated"
        on_interrupt(signal.SIGINT, frame)

    previous = signal.signal(signal.SIGTERM, on_terminate)
    _previous_sigterm.append(previous)


_previous_sigterm: list[Any] = []


def _restore_sigterm(seen: dict[str, str]) -> None:
    import signal

    while _previous_sigterm:
        signal.signal(signal.SIGTERM, _previous_sigterm.pop())


def _fail(
    args: argparse.Namespace, message: str, code: int = 1, *, kind: str, thread: str = ""
) -> int:
    """One ``error:`` line on stderr; with --json the last stdout line says it too."""
    if args.json:
        event = RunFailed(error=message, kind=kind, thread_id=thread)
        sys.stdout.write(json_safe(event.model_dump_json()) + "\n")
        sys.stdout.flush()
    print(f"error: {one_line(message)}", file=sys.stderr)
    return code
