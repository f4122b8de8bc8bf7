"""The EventHandler: engine events -> the view model -> the widgets, in batches.

It subscribes to the bus once, drains it at ~20 Hz and feeds each batch to the one view
model (``soothe.app.view_state.ViewState``) inside one ``batch_update`` (a batch's
streamed tokens first, in their own frame: ``tokens_first``); the view model reaches the
widgets only through ``AppPort`` (its ``ViewPort``). A bad event is logged and shown,
never allowed to stop the pump.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from soothe.app import terminal_guard
from soothe.app.evidence_pace import EvidencePace
from soothe.app.lazy import lazy
from soothe.app.view_paging import read_released
from soothe.app.view_port import parse_records
from soothe.app.view_state import CONVERSATION, ViewState, one_line, records_of
from soothe.widgets.goal_tree import NodeRef
from soothe.widgets.transcript import Awaiting, Block, Note, NoteKind, Transcript

if TYPE_CHECKING:
    from textual.widget import AwaitMount

    from soothe.app.main import SootheApp
    from soothe.app.session_api import EvidenceView, GoalView, ThreadSnapshot
    from soothe.engine import events as ev
    from soothe.engine.bus import EventBus, Subscription
else:
    ev = lazy("soothe.engine.events")

__all__ = ["CONVERSATION", "AppPort", "EventHandler"]

terminal_guard.install()  # what this handler shows, and any other text, is drawn safe

DRAIN_INTERVAL = 1 / 30
"""The shortest time between two batches while events pour in. A token waits for the next
batch, then for its frame: at 1/20 s the wait alone put a stream's lag p95 past 50 ms."""
MAX_GAP = 0.5
"""The longest the pump waits between batches (however slow the last repaint was)."""
MOUNT_HOLD = 0.2
"""The longest the screen waits for what a batch mounted (``EventHandler._mounted``)."""
SETTLE_TURNS = 10
"""Loop turns the hold gives the layouts the mounts asked for to reach the screen."""
PAGE_RECORDS = 200
"""Stored transcript records read per page when the user scrolls back past what is held."""
FOLLOW_QUIET_S = 4.0
"""A goal the engine activates takes the middle panel unless the user scrolled or
selected something this recently (the user's own request takes it whatever they did
before sending it: ``AppPort.take_panel``)."""


def urgent_events() -> tuple[type[ev.EventBase], ...]:
    """Events applied without waiting out the batch interval. A model call that ended (its
    Usage) has sent its stream's last tokens. A step that started gets its card mounted
    before its first tokens come (15-20 ms later): held for the interval, the card's mount
    layout came with them, and they waited for it (40-50 ms, the worst of two parallel
    streams)."""
    return (ev.Usage, ev.StepStarted)


def _stream_of(event: ev.EventBase) -> tuple[str | None, ...]:
    """The card an event goes to: the view model keys cards by goal and step."""
    return (event.goal_id, event.step_id)


def tokens_first(batch: list[ev.EventBase]) -> tuple[list[ev.EventBase], list[ev.EventBase]]:
    """Split a batch so that the streamed tokens are painted in a frame of their own,
    before what would lay the screen out (each a layout of 20-40 ms they would wait for).

    Without a step that starts: split after the last token; what follows them (a step
    that ended, its evidence, the goal's answer) comes in the next frame. With one: the
    tokens of the steps already on screen come first, the new step (its card is a layout)
    and the rest next, so a stream that runs is not held by the card of one that starts.
    A step's own events keep their order: its tokens after any other event of it in the
    batch stay behind that event."""
    started = {_stream_of(e) for e in batch if isinstance(e, ev.StepStarted)}
    if not started:
        for index in range(len(batch) - 1, -1, -1):
            if isinstance(batch[index], ev.StepToken):
                return batch[: index + 1], batch[index + 1 :]
        return batch, []
    first: list[ev.EventBase] = []
    rest: list[ev.EventBase] = []
    held = set(started)
    for event in batch:
        stream = _stream_of(event)
        if isinstance(event, ev.StepToken) and stream not in held:
            first.append(event)
        else:
            rest.append(event)
            held.add(stream)
    if not first:
        return rest, []
    return first, rest


class AppPort:
    """The app's side of the view model's port: each call lands on one widget or action."""

    def __init__(self, app: SootheApp) -> None:
        self.app = app
        self.last_user_move = float("-inf")
        self._paging = False
        self.syncing = False
        """The goals are being matched to the session's (start-up, a reopened thread):
        they are not new goals arriving, the tree stays where it is."""
        self.evidence = EvidencePace(
            show=lambda entries: app.main.evidence.add_entries(entries),
            streaming=lambda: app.handler.state.streaming,
            later=app.set_timer,
        )

    def upsert_goal(self, goal: GoalView) -> None:
        tree = self.app.main.goal_tree
        new = tree.goal(goal.id) is None
        tree.upsert_goal(goal)
        if new and not self.syncing:
            self.reveal(goal.id)

    def reveal(self, goal_id: str) -> None:
        """A new goal, or one that became active, is scrolled into view in the tree
        (the cursor stays), unless the user is at the tree: moving in it or choosing a
        view (as ``follow``), scrolling it (the wheel, its scrollbar) in the last
        FOLLOW_QUIET_S, or working in it (focused: the cursor's line stays in sight)."""
        tree = self.app.main.goal_tree
        if self.app.clock() - self.last_user_move < FOLLOW_QUIET_S or tree.has_focus:
            return
        tree.reveal(goal_id)

    def remove_goal(self, goal_id: str) -> None:
        self.app.main.goal_tree.remove_goal(goal_id)

    def clear_goals(self) -> None:
        self.app.main.goal_tree.clear_goals()

    def goals_changed(self, count: int) -> None:
        self.app.main.goals_changed(count)

    def show(self, transcript: Transcript) -> None:
        stream = self.app.main.stream
        stream.load_earlier = self.load_earlier
        stream.show(transcript)

    def load_earlier(self, key: str) -> bool:
        """Page the view's released blocks back in from the store (home at the top)."""
        handler = self.app.handler
        cursor = handler.state.earlier_cursor(key)
        session = self.app.session
        if cursor is None or session is None or not session.thread_id or self._paging:
            return False
        self._paging = True
        self.app.run_worker(handler.page_back(key, cursor), group="page-back")
        return True

    def rebuild(self, key: str, first: int, last: int) -> None:
        self.app.run_worker(self.app.handler.rebuild_view(key, first, last), group="rebuild")

    def touch(self, blocks: list[Block]) -> None:
        stream = self.app.main.stream
        stream.touch(blocks)
        if self.evidence.held and not self.app.handler.state.streaming:
            self.evidence.flush()

    def take_mounting(self) -> list[AwaitMount]:
        return self.app.main.stream.take_mounting()

    def set_evidence(self, entries: list[EvidenceView]) -> None:
        self.evidence.drop()
        self.app.main.evidence.set_entries(entries)

    def add_evidence(self, entries: list[EvidenceView]) -> None:
        self.evidence.add(entries)

    def status(self, **fields: Any) -> None:
        self.app.main.status.set(**fields)

    def notify(self, message: str, title: str = "", severity: str = "information") -> None:
        self.app.notify(message, title=title, severity=severity)  # type: ignore[arg-type]

    def run_started(self) -> None:
        self.app.run_started()

    def run_ended(self, duration: float | None) -> None:
        self.app.run_ended(duration)

    def server_lost(self, error: str) -> None:
        self.app.server_lost(error)

    def server_answered(self) -> None:
        self.app.server_answered()

    def set_awaiting(self, goal_id: str, waits: dict[str, Awaiting]) -> None:
        self.app.main.goal_tree.set_awaiting(goal_id, waits)

    def open_clarification(self, event: ev.ClarificationRequested, asker: str) -> None:
        self.app.open_clarification(event, asker)

    def open_approval(self, event: ev.ApprovalRequested, asker: str) -> None:
        self.app.open_approval(event, asker)

    def close_request(self, request_id: str) -> None:
        self.app.close_request(request_id)

    def user_moved(self) -> None:
        """The user scrolled the stream, moved in the goal tree or scrolled it (follow
        and the tree's reveal back off)."""
        self.last_user_move = self.app.clock()

    def take_panel(self) -> None:
        """The user's own request started: the conversation takes the middle panel and
        follows its end, whatever the user looked at before sending it; what they chose
        before no longer holds off the goals it starts."""
        self.last_user_move = float("-inf")
        handler = self.app.handler
        if handler.visible != CONVERSATION:
            handler.show(CONVERSATION)
        self.app.main.stream.follow_end()

    def follow(self, key: str) -> None:
        app = self.app
        handler = app.handler
        if app.clock() - self.last_user_move < FOLLOW_QUIET_S:
            return  # the user just chose what to look at
        if key != CONVERSATION:  # a goal that became active: in sight in the tree
            self.reveal(key)
        if not app.main.stream.follow:
            return  # the user scrolled up to read
        if key == handler.visible or (key != CONVERSATION and handler.visible == CONVERSATION):
            return  # the conversation shows every goal's cards already
        handler.show(key)


class EventHandler:
    def __init__(self, app: SootheApp, *, interval: float = DRAIN_INTERVAL) -> None:
        self.app = app
        self.interval = interval
        self.port = AppPort(app)
        self.state = ViewState(self.port)
        self.errors: list[str] = []
        self.applied = 0
        self.batches = 0
        self.repaint_s = 0.0
        """How long the last batch took to lay out and paint (it spaces the next one)."""
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._applying = False
        self._idle_waiters: list[asyncio.Future[None]] = []

    # the view model's state, read by the app's parts
    @property
    def goals(self) -> dict[str, GoalView]:
        return self.state.goals

    @property
    def evidence(self) -> dict[str, EvidenceView]:
        return self.state.evidence

    @property
    def answers(self) -> dict[str, str]:
        return self.state.answers

    @property
    def visible(self) -> str:
        return self.state.visible

    def transcript(self, key: str) -> Transcript:
        return self.state.view(key)

    # -- the pump --------------------------------------------------------------------------

    def attach(self, bus: EventBus) -> None:
        self.detach()
        self._sub = bus.subscribe("*", urgent=urgent_events())
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
        urgent = urgent_events()
        last = -self.interval
        gap = self.interval
        early = False  # the last batch went without its pause
        while True:
            try:
                first = await sub.get()
            except StopAsyncIteration:
                return
            wait = gap - (loop.time() - last)
            # an urgent event read first (read, it no longer cuts the pause) goes without
            # it, but not twice in a row: steps that start one after another would each
            # be a batch and a layout
            early = wait > 0 and isinstance(first, urgent) and not early
            if wait > 0:
                self._applying = True  # events are waiting for us: not idle
                # an urgent event cuts short the interval, not the wait a slow repaint
                # added to it (that share spares the engine: see below)
                hold = wait - self.interval
                if hold > 0:
                    await asyncio.sleep(hold)
                if not early:
                    await sub.pause(min(wait, self.interval))
            began = loop.time()
            tokens, rest = tokens_first([first, *sub.drain()])
            self.apply(tokens)
            self._applying = True
            await self._mounted()
            await self._repainted()
            if rest:
                self.apply(rest)
                self._applying = True
                await self._mounted()
                await self._repainted()
            last = loop.time()
            # The run and the screen share this loop: a batch's layout and paint (0.1 s
            # and more on a full screen) must not starve the engine that makes the next
            # events. The next batch waits at least as long as this one's repaint took,
            # so the screen gets at most about half of the loop while events pour in.
            self.repaint_s = last - began
            gap = max(self.interval, min(self.repaint_s, MAX_GAP))
            self._applying = False
            if not len(sub):
                self._wake_idle()

    async def _mounted(self) -> None:
        """Hold the screen while what the batch mounted (a step's card, a note) composes
        and mounts. Textual lays the screen out when widgets are added and once more when
        they have mounted; held, the two are one layout (a step that starts while another
        streams was two, 20-40 ms each, that its tokens and the keys waited for)."""
        mounting = self.port.take_mounting()
        if not mounting:
            return
        app = self.app
        app._begin_batch()  # what ``App.batch_update`` does, across an await
        try:
            await asyncio.wait_for(asyncio.gather(*(m() for m in mounting)), MOUNT_HOLD)
            stream = app.main.stream
            for _ in range(SETTLE_TURNS):  # the layouts the mounts asked for reach the screen
                if stream.layout_settled():
                    break
                await asyncio.sleep(0)
        except Exception:  # timed out, or the widgets went away: show what is there
            pass
        finally:
            app._end_batch()

    async def _repainted(self) -> None:
        """Wait until the screen has laid out and painted what the last batch changed."""
        done = asyncio.get_running_loop().create_future()

        def painted() -> None:
            if not done.done():
                done.set_result(None)

        try:
            self.app.call_after_refresh(painted)
            await asyncio.wait_for(done, MAX_GAP)
        except Exception:  # timed out, or no screen (yet, any more): go on
            return

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
                event: ev.EventBase | None = None
                for event in batch:
                    self.applied += 1
                    try:
                        self.state.feed(event)
                    except Exception as exc:
                        self._display_error(event, exc)
                try:
                    self.state.flush()
                except Exception as exc:  # a widget that failed to update: the pump goes on
                    self._display_error(event or ev.ErrorEvent(message="flush"), exc)
        finally:
            self._applying = False

    def _display_error(self, event: ev.EventBase, exc: Exception) -> None:
        message = f"could not show {getattr(event, 'type', type(event).__name__)}: {exc!r}"
        self.errors.append(message)
        self.app.log.error(message)
        if len(self.errors) == 1:
            self.app.notify(message, title="Display error", severity="error")

    # -- what the app asks -------------------------------------------------------------------

    async def page_back(self, key: str, cursor: int) -> None:
        """Read the records before ``cursor`` and put the blocks they made in front."""
        stream = self.app.main.stream
        try:
            session = self.app.require_session()
            where = {"before": cursor} if cursor > 0 else {"before_seq": -cursor}
            rows = await session.transcript(session.thread_id, limit=PAGE_RECORDS, **where)
            added = self.state.page_back(key, parse_records(rows), more=len(rows) >= PAGE_RECORDS)
            if stream.key == key:
                stream.show_loaded(stream.window + added)
        except Exception as exc:  # paging back must never break the view
            self._display_error(ev.ErrorEvent(message="page back", kind="page"), exc)
        finally:
            self.port._paging = False

    async def rebuild_view(self, key: str, first: int, last: int) -> None:
        """Read a released view's records from the store and rebuild the view from them."""
        records: list[tuple[Any, ...]] = []
        try:
            session = self.app.require_session()
            records = await read_released(session, session.thread_id, first, last)
        except Exception as exc:  # a rebuild must never break the view
            self._display_error(ev.ErrorEvent(message="rebuild a view", kind="page"), exc)
        with self.app.batch_update():
            self.state.rebuilt(key, records)

    def local_note(self, text: str, kind: NoteKind = "info") -> None:
        """A note from the app itself, shown right away (not kept in the store: only for
        what has no session to publish it, see ``engine_error``); an interrupted run is
        the engine's RunFailed, not a note of the app's."""
        last = self.state.view(CONVERSATION).segments
        if last and isinstance(last[-1], Note) and last[-1].text == text:
            return
        self.state.note([CONVERSATION], text, kind)
        self.state.flush()

    def ref_of(self, key: str) -> NodeRef:
        if key == CONVERSATION:
            return NodeRef("conversation")
        goal_id, _, step_id = key.partition("/")
        return NodeRef("step", goal_id, step_id) if step_id else NodeRef("goal", goal_id)

    def select(self, ref: NodeRef, *, from_tree: bool = False) -> None:
        """The user chose a node (follow backs off for a few seconds). From the tree, the
        cursor is already there: moving it again would chase the keys pressed since."""
        self.port.user_moved()
        self.show(ref.key, move_cursor=not from_tree)

    def show(self, key: str, *, move_cursor: bool = True) -> None:
        """Put ``key``'s view in the middle panel, the tree cursor and the evidence on it."""
        ref = self.ref_of(key)
        self.state.select(key)
        self.app.main.evidence.follow(ref.goal_id, ref.step_id)
        if move_cursor:
            self.app.main.goal_tree.show_ref(ref)

    def jump_active(self) -> None:
        """The key for "show me what is running": the active goal, else the conversation."""
        active = [g.id for g in self.goals.values() if g.status == "active"]
        self.show(active[-1] if active else CONVERSATION)

    def sync_goals(self, views: list[GoalView]) -> None:
        with self.app.batch_update(), self._syncing():
            self.state.sync_goals(views)

    def reset(self) -> None:
        with self.app.batch_update():
            self.state.reset()

    def restore(self, snapshot: ThreadSnapshot) -> None:
        """Show a stored thread: its transcript replayed through the view model."""
        records = records_of(snapshot)
        with self.app.batch_update(), self._syncing():
            self.state.restore(snapshot, records)

    @contextlib.contextmanager
    def _syncing(self) -> Iterator[None]:
        self.port.syncing = True
        try:
            yield
        finally:
            self.port.syncing = False

    def set_evidence(self, entries: list[EvidenceView]) -> None:
        self.state.set_evidence(entries)

    def engine_error(self, exc: BaseException, where: str = "run") -> None:
        """An error that escaped the engine: published on the session's bus as an
        ErrorEvent, so the transcript keeps it (a reopened thread shows it) and the view
        model shows it like any event (a note and a toast)."""
        message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        text = f"{where} stopped by an error: {message}"
        session = self.app.session
        if session is None:
            self.local_note(text, "error")
            self.app.notify(
                one_line(message, 200), title=f"Engine error ({where})", severity="error"
            )
            return
        session.bus.publish(ev.ErrorEvent(message=text, kind=f"Engine error ({where})"))

    def shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self.detach()
