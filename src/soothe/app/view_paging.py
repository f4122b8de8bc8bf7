"""The view model's memory bounds: blocks and whole views let go, and rebuilt from the store.

Two bounds, one source to rebuild from (the thread's stored transcript, see
``soothe.engine.context.transcript``):

- a view holds at most ``MAX_SEGMENTS`` blocks; older ones are released and paged back in
  (``page_back``) when the user scrolls back past them;
- the view model holds the blocks of at most ``max_views`` goal and step views besides the
  conversation and the one on screen. Each request makes a goal view and a view per step,
  so without this every goal ever run kept up to 200 blocks. The least recently fed views
  of finished goals are released (``released`` remembers where their records lie) and
  rebuilt, whole, when the user selects one (``rebuild`` asks the port to read the records;
  ``rebuilt`` replays them on a scratch view model).

ViewState inherits this part; the names it uses below are ViewState's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from soothe.app.lazy import lazy
from soothe.app.view_port import CONVERSATION, NullPort, ViewPort, parse_records
from soothe.widgets.transcript import Note, Transcript

if TYPE_CHECKING:
    from soothe.app.session_api import SessionAPI
    from soothe.app.view_state import ViewState
    from soothe.engine import events as ev
    from soothe.engine.views import GoalView
else:
    ev = lazy("soothe.engine.events")

MAX_VIEWS = 24
"""Goal and step views held with their blocks (about eight requests' worth), besides the
conversation and the visible one."""
TERMINAL = frozenset({"completed", "failed", "cancelled"})
LOADING = "loading from the thread's history…"
UNBOUNDED = 1 << 30
REBUILD_RECORDS = 5000
"""At most this many records are read to rebuild a released view (one goal's run)."""


@dataclass(frozen=True)
class Released:
    """Where a released view's records lie: ``first`` is the origin of its oldest block and
    ``last`` of the last event about its goal (record ids, or ``-seq`` of live events);
    ``earlier``: the view had released blocks of its own (older than ``first``)."""

    first: int
    last: int
    earlier: bool


def ends_at(record: tuple[Any, ...], last: int) -> bool:
    """Whether ``record`` (event, tokens, record id) is the one ``last`` names."""
    event, _, record_id = record[:3]
    return int(record_id) >= last if last > 0 else event.seq == -last


async def read_released(
    session: SessionAPI, thread: str, first: int, last: int, *, page: int = 200
) -> list[tuple[Any, ...]]:
    """A released view's records (see ``Released``), read forward from the store: from
    the one with origin ``first`` to the one with origin ``last``, at most
    REBUILD_RECORDS."""
    if first > 0:
        after = first - 1
    else:  # a live event: start after the record before it (found by its seq)
        rows = await session.transcript(thread, before_seq=-first, limit=1)
        after = int(rows[0]["id"]) if rows else 0
    records: list[tuple[Any, ...]] = []
    while len(records) < REBUILD_RECORDS:
        rows = await session.transcript(thread, after=after, limit=page)
        for record in parse_records(rows):
            records.append(record)
            if ends_at(record, last):
                return records
        if len(rows) < page:
            break
        after = int(rows[-1]["id"])
    return records


def starts_inside_run(records: list[tuple[Any, ...]]) -> bool:
    """Whether the records begin in the middle of a run (a run ends before one starts)."""
    for event, *_ in records:
        if isinstance(event, ev.RunStarted):
            return False
        if isinstance(event, ev.RunFinished | ev.RunFailed):
            return True
    return False


class ViewPaging:
    port: ViewPort
    views: dict[str, Transcript]
    goals: dict[str, GoalView]
    visible: str
    paging: bool
    max_views: int
    released: dict[str, Released]
    _last: dict[str, int]
    """Goal id -> origin of the last event about it (tokens and usage aside)."""
    _origin: int

    if TYPE_CHECKING:  # defined by ViewState

        def view(self, key: str) -> Transcript: ...

        def _title(self, key: str) -> str: ...

        def replay(self, records: Any) -> None: ...

    # -- scratch -----------------------------------------------------------------------------

    def _scratch(self, records: list[tuple[Any, ...]], *, paging: bool) -> ViewState:
        """A view model with no screen that replays ``records`` (nothing live changes)."""
        from soothe.app.view_state import ViewState

        scratch = ViewState(cast(ViewPort, NullPort()))
        scratch.paging = paging
        scratch.max_views = UNBOUNDED  # it must keep every view it builds
        scratch.running = starts_inside_run(records)
        scratch.goals = dict(self.goals)
        scratch.replay(records)
        return scratch

    # -- paging back (released blocks come back from the store) ------------------------------

    def earlier_cursor(self, key: str) -> int | None:
        """Where to page ``key``'s view back from: the origin of its oldest block (a record
        id, or ``-seq`` of a live event), or None when the store has nothing older."""
        transcript = self.view(key)
        return transcript.cursor if transcript.earlier else None

    def page_back(
        self,
        key: str,
        records: list[tuple[Any, ...]],
        *,
        more: bool,
        following: list[tuple[Any, ...]] = (),  # type: ignore[assignment]
    ) -> int:
        """Rebuild the blocks of ``key``'s view from stored records older than it holds
        (replayed on a scratch view model, so nothing live changes) and put them in
        front. ``following`` are the records after the page: replayed too, so a step
        card that started in the page shows how it went on, but the blocks they make
        (held already) are not taken. Returns how many blocks came back."""
        if not records:
            self.view(key).earlier = False
            return 0
        last = max(int(r[2]) for r in records)
        scratch = self._scratch([*records, *following], paging=True)
        found = scratch.views.get(key)
        pairs = list(zip(found.segments, found.origins, strict=True)) if found else []
        pairs = [(block, origin) for block, origin in pairs if 0 < origin <= last]
        start = min(int(r[2]) for r in records)
        self.view(key).prepend([b for b, _ in pairs], [o for _, o in pairs], more=more, start=start)
        return len(pairs)

    # -- whole views released and rebuilt --------------------------------------------------

    def _seen(self, event: ev.EventBase) -> None:
        if event.goal_id and not isinstance(event, ev.StepToken | ev.Usage):
            self._last[event.goal_id] = self._origin

    def _recent(self, key: str) -> None:
        """``key``'s view was fed: it is the most recent (dicts keep insertion order)."""
        if key != CONVERSATION:
            self.views[key] = self.views.pop(key)

    def _release_views(self) -> None:
        """Let go of the least recently fed views of finished goals beyond ``max_views``."""
        excess = len(self.views) - 2 - self.max_views  # the conversation and the visible
        for key in list(self.views):
            if excess <= 0:
                break
            if key in (CONVERSATION, self.visible) or key in self.released:
                continue  # (released still: a placeholder waiting for its records)
            goal = self.goals.get(key.partition("/")[0])
            if goal is not None and goal.status not in TERMINAL:
                continue  # it may still change: keep it live
            transcript = self.views.pop(key)
            excess -= 1
            if transcript.origins:
                first = transcript.origins[0]
                last = self._last.get(key.partition("/")[0], transcript.origins[-1])
                self.released[key] = Released(first, last, transcript.earlier)

    def _revived(self, transcript: Transcript) -> None:
        """A released view is fed again (its goal runs again): it holds the new blocks, the
        older ones page back from the store (home)."""
        if self.released.pop(transcript.key, None) is not None:
            transcript.earlier = True

    def _select_released(self, key: str) -> Transcript | None:
        """The user picked a released view: a placeholder now, the port reads its records."""
        where = self.released.get(key)
        if where is None or key in self.views:
            return None
        placeholder = self.views[key] = Transcript(key, self._title(key))
        placeholder.add(Note(LOADING, "info"))
        self.port.rebuild(key, where.first, where.last)
        return placeholder

    def rebuilt(self, key: str, records: list[tuple[Any, ...]]) -> Transcript:
        """Put back ``key``'s view from its stored records (read by the port); blocks that
        landed in the placeholder meanwhile stay, after the rebuilt ones."""
        where = self.released.pop(key, None)
        placeholder = self.views.get(key)
        if where is None or placeholder is None:  # the thread changed meanwhile (reset)
            return Transcript(key, self._title(key))  # shown nowhere
        scratch = self._scratch(records, paging=False)
        found = scratch.views.get(key)
        transcript = Transcript(key, self._title(key))
        if found is not None:
            for block, origin in zip(found.segments, found.origins, strict=True):
                transcript.add(block, origin)
        for block, origin in zip(placeholder.segments, placeholder.origins, strict=True):
            if not (isinstance(block, Note) and block.text == LOADING):
                transcript.add(block, origin)
        if where.earlier:
            transcript.earlier = True
        self.views[key] = transcript
        if self.visible == key:
            self.port.show(transcript)
        return transcript
