"""No key crashes the app: every key a binding declares, pressed in every focus, on an
empty app, mid-run (two parallel streams held open), and on a finished thread, at 80x24
and 120x40, on the real Session (fake Ollama).

The keys are collected, not listed: in each focus, every key of every binding in the
focus's chain (Textual's ``_binding_chain``: the focused widget, its ancestors, the
screen, the app, with the user's keymap applied), so a binding added later is pressed
without touching this file. A key that opens a screen (palette, help, threads, a dialog)
is followed into it: its keys are pressed in each of its focuses (it is opened again the
same way when a key closes it), then escape goes back; once per state, at the first
size. Escape on the main screen (it interrupts a run) and the quit keys come last.
``DECLARED`` (the keys of every Soothe class's bindings) checks the collection.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import pkgutil
import unicodedata
from collections.abc import Iterator
from typing import Any

import pytest
from textual import events
from textual.dom import DOMNode
from textual.keys import REPLACED_KEYS, _get_unicode_name_from_key
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.worker import WorkerState

import soothe.app
import soothe.widgets
from soothe.app.main import SootheApp
from soothe.app.screens.dialogs import ConfirmDialog
from soothe.app.screens.goals import DependencyDialog
from soothe.app.screens.main import MainScreen
from soothe.app.screens.requests import ApprovalModal, ClarificationModal
from soothe.widgets.goal_tree import NodeRef
from tests.app import real_harness
from tests.app.real_harness import (
    Pause,
    Rig,
    parallel_flow,
    readme_flow,
    ready,
    send,
    settle,
    until,
    wait_event,
)
from tests.fakes import FakeReply

QUIT_KEYS = ("ctrl+c", "ctrl+q")  # pressed on their own, at the end
LAST_KEYS = ("escape",)  # on the main screen: interrupts the run, so after the rest


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def declared_classes() -> list[type[DOMNode]]:
    """Every DOMNode class Soothe defines (each module under soothe.app and
    soothe.widgets imported first, so none is missed)."""
    for package in (soothe.app, soothe.widgets):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            importlib.import_module(module.name)
    return sorted(
        {c for c in _subclasses(DOMNode) if c.__module__.startswith("soothe.")},
        key=lambda c: f"{c.__module__}.{c.__qualname__}",
    )


def keys_of(cls: type[DOMNode]) -> set[str]:
    """The keys a class binds, its own and the ones it inherits (as Textual merges them)."""
    return set(cls._merge_bindings().key_to_bindings)


DECLARED = sorted(set().union(*(keys_of(c) for c in declared_classes())))


def keys_here(app: SootheApp) -> list[str]:
    """Every key a binding in the focus's chain binds (the focused widget, its
    ancestors, the screen, the app: each binding that can fire here, with the user's
    keymap applied); escape last, the quit keys not at all (they have their own check)."""
    found: set[str] = set()
    for _node, bindings in app._binding_chain:
        found |= set(bindings.key_to_bindings)
    rest = sorted(found - set(QUIT_KEYS) - set(LAST_KEYS))
    return rest + [k for k in LAST_KEYS if k in found]


def key_event(key: str) -> events.Key:
    """The Key event a terminal sends for ``key`` (as ``Pilot.press`` builds it)."""
    original = REPLACED_KEYS.get(key, key)
    try:
        char: str | None = unicodedata.lookup(_get_unicode_name_from_key(original))
    except KeyError:
        char = key if len(key) == 1 else None
    return events.Key(key, char)


async def quick_press(pilot: Pilot[Any], key: str) -> None:
    """Press ``key`` and wait until the app and every widget on the screen handled what
    it caused. (``Pilot.press`` also waits for the whole process to go idle, up to a
    second a key while a run's threads work: too slow for a thousand keys.)"""
    app = pilot.app
    event = key_event(key)
    event.set_sender(app)
    assert app._driver is not None
    app._driver.send_message(event)
    for _ in range(3):  # the key, what it posted, what that posted
        await asyncio.sleep(0)
        await pilot._wait_for_screen()
    await app._animator.wait_until_complete()


class Presser:
    """Presses keys and checks after each one that the app is alive and clean."""

    def __init__(
        self,
        app: SootheApp,
        pilot: Pilot[Any],
        caplog: pytest.LogCaptureFixture,
        explored: set[type] | None = None,
    ):
        self.app = app
        self.pilot = pilot
        self.caplog = caplog
        self.presses = 0
        self.pressed: set[str] = set()
        self.explored = set() if explored is None else explored
        """The screens whose keys were pressed (a state's second size skips them)."""

    def alive(self, where: str) -> None:
        app = self.app
        assert app._exception is None, f"{where}: {app._exception!r}"
        assert app.is_running and app.return_code is None, f"{where}: the app exited"
        assert not app.handler.errors, f"{where}: {app.handler.errors}"
        failed = [w for w in app.workers if w.state == WorkerState.ERROR]
        assert not failed, f"{where}: worker failed: {[(w.name, w.error) for w in failed]}"
        logged = [r for r in self.caplog.records if r.levelno >= logging.ERROR]
        assert not logged, f"{where}: logged {[r.getMessage() for r in logged]}"

    async def press(self, key: str, where: str) -> None:
        if key == "enter" and self.app.prompt.value:
            self.app.prompt.value = ""  # enter sends: nothing typed, nothing sent
        await quick_press(self.pilot, key)
        self.presses += 1
        self.pressed.add(key)
        self.alive(f"{key!r} in {where}")

    async def back_to_main(self, where: str) -> None:
        """Escape until the main screen is on top again (a dialog, the threads screen,
        help, the palette); a ConfirmDialog takes escape as its No."""
        for _ in range(6):
            if isinstance(self.app.screen, MainScreen):
                return
            await self.press("escape", f"{where}, going back")
        raise AssertionError(f"{where}: escape leaves {self.app.screen!r} open")

    def focuses(self, screen: Screen[Any]) -> list[Widget | None]:
        chain = [w for w in screen.focus_chain if w.is_attached]
        return list(chain) or [None]

    def describe(self, widget: Widget | None) -> str:
        if widget is None:
            return f"{type(self.app.screen).__name__} (no focus)"
        name = f"#{widget.id}" if widget.id else ""
        return f"{type(self.app.screen).__name__} > {type(widget).__name__}{name}"

    async def focus(self, widget: Widget | None) -> None:
        if widget is not None and widget.is_attached and self.app.focused is not widget:
            widget.focus()
            await self.pilot.pause()

    async def every_key(self, where: str) -> None:
        """Every key in each focus of the main screen, following the screens they open."""
        main = self.app.screen
        assert isinstance(main, MainScreen)
        for widget in self.focuses(main):
            if widget is not None and not widget.is_attached:
                continue
            place = f"{where}: {self.describe(widget)}"
            await self.focus(widget)
            for key in keys_here(self.app):
                if key in LAST_KEYS:
                    continue
                await self.focus(widget)
                await self.press(key, place)
                opened = self.app.screen
                if not isinstance(opened, MainScreen):
                    if type(opened) not in self.explored:
                        self.explored.add(type(opened))
                        await self.inside(opened, widget, key, f"{place} -> {key}")
                    await self.back_to_main(f"{place} -> {key}")
        for key in LAST_KEYS:
            self.app.prompt.focus()
            await self.press(key, f"{where}: main screen")
            await self.back_to_main(f"{where}: {key}")

    async def inside(
        self, screen: Screen[Any], opener: Widget | None, opener_key: str, where: str
    ) -> None:
        """Every key in each focus of a screen a key opened; when one closes it, it is
        opened again as before (``opener_key`` in ``opener``)."""
        kind = type(screen)

        async def reopen() -> bool:
            await self.back_to_main(where)
            if opener is not None and opener.is_attached:
                opener.focus()
                await self.pilot.pause()
            await self.press(opener_key, f"{where} (again)")
            return type(self.app.screen) is kind

        for index in range(len(self.focuses(screen))):

            async def target(index: int = index) -> Widget | None:
                chain = self.focuses(self.app.screen)
                widget = chain[min(index, len(chain) - 1)]
                await self.focus(widget)
                return widget

            await target()
            for key in keys_here(self.app):
                if type(self.app.screen) is not kind and not await reopen():
                    return
                current = self.app.screen
                focused = await target()
                if isinstance(current, ConfirmDialog) and key == "y":
                    continue  # yes to "quit?" ends the app: the quit check presses it
                await self.press(key, f"{where} > {self.describe(focused)}")

    async def quit_keys(self) -> None:
        """ctrl+c shows how to quit; ctrl+q quits, asking first while a run still goes (no
        keeps the app). Whether it still goes depends on the race with escape, pressed last
        among the keys, which interrupts the run; test_run_control pins the question."""
        app = self.app
        app.prompt.focus()
        await self.press("ctrl+c", "quit check")
        await self.pilot.press("ctrl+q")
        await until(lambda: isinstance(app.screen, ConfirmDialog) or not app.is_running, self.pilot)
        if isinstance(app.screen, ConfirmDialog):
            await self.press("n", "quit check: no")
            assert isinstance(app.screen, MainScreen)
            await self.pilot.press("ctrl+q")
            await until(
                lambda: isinstance(app.screen, ConfirmDialog) or not app.is_running, self.pilot
            )
            if app.is_running:
                await self.pilot.press("y")
        await until(lambda: not app.is_running, self.pilot)
        assert app._exception is None, repr(app._exception)
        assert app.return_code in (None, 0)


SIZES = [(80, 24), (120, 40)]


def sizes(in_make_test: tuple[int, int] | None = None) -> list[Any]:
    """Each size as a parameter. The whole matrix (three states at two sizes, ~2 minutes
    of CPU) runs under ``make test-keys`` (marker ``keys``, run by CI); ``make test``
    keeps the one case ``in_make_test`` so the README's test command still presses every
    key once."""
    return [
        pytest.param(
            size,
            id=f"{size[0]}x{size[1]}",
            marks=() if size == in_make_test else (pytest.mark.keys,),
        )
        for size in SIZES
    ]


EXPLORED: dict[str, set[type]] = {}
"""Per state, the screens a key opened whose own keys were pressed: once per state, at
the first size (the main screen's keys are pressed at both)."""


def test_the_keys_are_collected_from_the_classes() -> None:
    """The collection sees the app's, the prompt's, the tree's and the modals' keys."""
    for key in ("f1", "ctrl+t", "pageup", "plus", "minus", "D", "a", "A", "y", "n", "enter"):
        assert key in DECLARED, key
    assert "ctrl+q" in DECLARED and "escape" in DECLARED


@pytest.mark.parametrize("size", sizes())
async def test_every_key_on_an_empty_app(
    rig: Rig, size: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    app = rig.app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        presser = Presser(app, pilot, caplog, EXPLORED.setdefault("empty app", set()))
        await presser.every_key("empty app")
        await settle(app, pilot)
        presser.alive("empty app, settled")
        await presser.quit_keys()


@pytest.mark.parametrize("size", sizes(in_make_test=(80, 24)))
async def test_every_key_mid_run(
    rig: Rig,
    size: tuple[int, int],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.ERROR)
    monkeypatch.setattr(real_harness, "PAUSE_LIMIT_S", 120.0)  # held until the keys are done
    first, second = parallel_flow(rig.brain)
    app = rig.app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Read the README and write a haiku")
        await wait_event(first.reached, pilot)
        await wait_event(second.reached, pilot)
        await until(lambda: len(app.main.stream._cards()) >= 2, pilot)
        presser = Presser(app, pilot, caplog, EXPLORED.setdefault("mid-run", set()))
        try:
            await presser.every_key("mid-run")
            presser.alive("mid-run, after every key")
            await presser.quit_keys()
        finally:
            _release(first, second)


def _release(*pauses: Pause) -> None:
    for pause in pauses:
        pause.release.set()


@pytest.mark.parametrize("size", sizes())
async def test_every_key_on_a_finished_thread(
    rig: Rig, size: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    readme_flow(rig.brain)
    readme_flow(rig.brain, final="Soothe keeps every goal.")
    app = rig.app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Summarise the README")
        await settle(app, pilot)
        await send(app, pilot, "Summarise the README again")  # d has a goal to offer
        await settle(app, pilot)
        goals = app.session.goals()
        assert len(goals) == 2, "each request made a goal"
        app.main.goal_tree.show_ref(NodeRef("goal", goals[0].id))  # its keys act on it
        await settle(app, pilot)
        presser = Presser(app, pilot, caplog, EXPLORED.setdefault("finished thread", set()))
        if DependencyDialog not in presser.explored:  # d on a goal: the dependency picker
            tree = app.main.goal_tree
            tree.show_ref(NodeRef("goal", goals[0].id))
            await presser.focus(tree)
            await settle(app, pilot)
            await presser.press("d", "finished thread: the goal tree on G1")
            assert isinstance(app.screen, DependencyDialog), type(app.screen)
            presser.explored.add(DependencyDialog)
            await presser.inside(app.screen, tree, "d", "finished thread -> d")
            await presser.back_to_main("finished thread -> d")
        await presser.every_key("finished thread")
        await settle(app, pilot)
        presser.alive("finished thread, settled")
        await presser.quit_keys()


async def test_page_keys_in_a_list_not_laid_out_yet_do_nothing() -> None:
    """The state the palette's list is in for a moment as it opens (seen by the test
    above: ctrl+p, then pageup at 120x40, KeyError(0) from Textual's
    OptionList._move_page): options, one highlighted, no lines placed yet (its content
    region was empty). textual_fixes "option page" moves no page then."""
    from textual.app import App, ComposeResult
    from textual.widgets import OptionList

    from soothe.widgets import textual_fixes

    textual_fixes.apply()
    assert "option page" in textual_fixes.applied()

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield OptionList(*[f"option {i}" for i in range(30)], id="list")

    app = Host()
    async with app.run_test(size=(40, 10)) as pilot:
        options = app.query_one(OptionList)
        options.display = False  # as the palette's list before its results show
        await pilot.pause()
        options._clear_caches()
        options.highlighted = 0
        options.action_page_down()
        options.action_page_up()
        assert options.highlighted == 0
        options.display = True
        await pilot.pause()
        options.action_page_down()  # laid out: pages as before
        assert options.highlighted and options.highlighted > 0


async def _modal_keys(
    presser: Presser,
    kind: type[Screen[Any]],
    where: str,
    last: tuple[str, ...],
    last_focus: str = "",
) -> tuple[set[str], bool]:
    """Every key in each focus of the engine's request modal ``kind`` (opened by the run,
    not by a key, so it cannot be reopened: each key that answers it is followed by the
    next request of the run). A key that opens another screen over it (help, the
    palette) is followed by escape back to the modal. ``last`` are pressed last in
    this order, in the focus with id ``last_focus`` (visited last; an "always" answer
    ends the asking). Returns the keys that answered it, and
    whether every focus was visited (False: the run stopped asking first)."""
    app, pilot = presser.app, presser.pilot
    answered: set[str] = set()

    async def next_modal() -> bool:
        """The run's next request, or False once the run has ended without one."""
        await until(lambda: isinstance(app.screen, kind) or not app._run_going(), pilot, timeout=20)
        await pilot.pause()
        return isinstance(app.screen, kind)

    await until(lambda: isinstance(app.screen, kind), pilot, timeout=20)
    await pilot.pause()
    chain = presser.focuses(app.screen)
    count = len(chain)
    ids = [getattr(widget, "id", None) for widget in chain]
    order = sorted(range(count), key=lambda i: bool(last_focus) and ids[i] == last_focus)
    for step, index in enumerate(order):
        focus = presser.focuses(app.screen)[index]
        await presser.focus(focus)
        keys = [k for k in keys_here(app) if k not in last]
        if step == count - 1:
            keys += [k for k in last if k in keys_here(app)]
        for key in keys:
            modal = app.screen
            widget = presser.focuses(modal)[index]
            await presser.focus(widget)
            place = f"{where}: {presser.describe(widget)}"
            await presser.press(key, place)
            for _ in range(4):  # a screen opened over the modal: back to it
                if app.screen is modal or isinstance(app.screen, (kind, MainScreen)):
                    break
                await presser.press("escape", f"{place} -> {key}, going back")
            if app.screen is not modal:
                answered.add(key)
                if not await next_modal():
                    return answered, step == count - 1
    return answered, True


@pytest.mark.keys
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_every_key_in_the_approval_dialog(
    rig: Rig, size: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    """The approval dialog, opened by a step's writes (one dialog per write): every key
    in each of its focuses; "A" (always) last, which approves the rest (three steps of
    six writes: a step stops after a few denials)."""
    caplog.set_level(logging.ERROR)
    rig.configure(tools={"approval": "ask"})
    rig.brain.add("Classification", real_harness.classify("complex"))
    steps = [  # a step stops asking after a few writes: three, one after another
        real_harness.step(f"S-0{n}", f"Write notes {n}", [f"S-0{n - 1}"] if n > 1 else None)
        for n in (1, 2, 3)
    ]
    rig.brain.add("PlanGeneration", real_harness.plan(*steps))
    for n in (1, 2, 3):
        writes = [
            FakeReply(
                tool_calls=[{"name": "write_file", "args": {"path": f"{n}{i}", "content": "x"}}]
            )
            for i in range(6)
        ]
        rig.brain.step(f"S-0{n}", *writes, f"Wrote notes {n}.")
    rig.brain.add("StatusAssessment", real_harness.assess("done"))
    app = rig.app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Write the notes")
        presser = Presser(app, pilot, caplog)
        answered, complete = await _modal_keys(
            presser, ApprovalModal, "approval", last=("A",), last_focus="approve_always"
        )
        assert complete, f"the run stopped asking before every focus: {answered}"
        # enter on the "Always" button answers as A does, and ends the asking too
        assert {"a", "d", "escape"} <= answered and {"A", "enter"} & answered, answered
        await settle(app, pilot)
        presser.alive("approval, settled")


@pytest.mark.keys
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_every_key_in_the_clarification_dialog(
    rig: Rig, size: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    """The clarification dialog, opened by ask_user steps (one each): every key in each
    of its focuses (the answer fields, the buttons)."""
    caplog.set_level(logging.ERROR)
    rig.configure(tools={"clarify": "ask"})
    rig.brain.add("Classification", real_harness.classify("complex"))
    for first in (1, 11, 21):  # a plan has at most 8 steps: three plans, one after another
        asks = [
            real_harness.step(
                f"S-{i:02d}",
                f"Ask question {i}",
                [f"S-{i - 1:02d}"] if i > first else None,
                kind="ask_user",
                questions=["Which dates?", "What budget?"],
            )
            for i in range(first, first + 8)
        ]
        rig.brain.add("PlanGeneration", real_harness.plan(*asks))
        rig.brain.add("StatusAssessment", real_harness.assess("replan" if first < 21 else "done"))
    app = rig.app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Plan a weekend")
        presser = Presser(app, pilot, caplog)
        answered, complete = await _modal_keys(presser, ClarificationModal, "clarification", ())
        assert complete, f"the run stopped asking before every focus: {answered}"
        assert {"ctrl+s", "escape"} <= answered, answered
        presser.alive("clarification, after every key")
        while isinstance(app.screen, ClarificationModal):  # the questions left: skipped
            await presser.press("escape", "clarification, skipping the rest")
            await until(
                lambda: isinstance(app.screen, ClarificationModal) or not app._run_going(), pilot
            )
        await presser.quit_keys()
