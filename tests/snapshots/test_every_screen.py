"""Every screen, modal and panel state a user can reach, at 80x24 and 120x40 (issue 32
item 13), on the real Session against the fake Ollama server (tests/app/real_harness.py).

Run with ``make test-snapshots`` (the ``snapshots`` marker keeps them out of
``make test``). Every SVG here was rendered to PNG and reviewed, and its text read
(``screen_text``); regenerate with ``--snapshot-update`` and review the diff.

Deterministic by construction: a still clock (``still_engine``), no animation, thread ids
t-0001..., a fixed workspace where a screen names it; every shot waits for the workers or
a named condition, then for the handler to be idle, held evidence to show, the running
cards' headers to draw their counts and the footer to recompose.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from textual import events
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets._collapsible import CollapsibleTitle

from soothe.app.main import SootheApp
from soothe.app.screens.budget import BudgetDialog
from soothe.app.screens.criteria import CriteriaDialog
from soothe.app.screens.dialogs import ConfirmDialog, EvidenceDialog
from soothe.app.screens.goals import DependencyDialog, GoalDetailDialog, GoalInputDialog
from soothe.app.screens.help import HelpScreen
from soothe.app.screens.requests import ApprovalModal, ClarificationModal
from soothe.engine.goal_contract import GoalBudget
from soothe.widgets.footer import SteadyFooter
from soothe.widgets.goal_tree import NodeRef
from soothe.widgets.pasted import PastedRequest
from soothe.widgets.step_card import StepCardView
from soothe.widgets.thinking_block import ThinkingBlock
from soothe.widgets.tool_call import ToolCallBlock
from tests.app.real_harness import (
    MODEL,
    Pause,
    Rig,
    assess,
    classify,
    fixed_workspace,
    parallel_flow,
    plan,
    quiz,
    readme_flow,
    ready,
    screen_text,
    send,
    settle,
    step,
    until,
    wait_event,
)
from tests.fakes import FakeReply
from tests.fakes.brain import Brain
from tests.fakes.ollama_server import FakeOllamaModel

pytestmark = pytest.mark.snapshots

CLOSED_PORT = "http://127.0.0.1:9"  # the discard port: nothing listens there
SIZES = {"80x24": (80, 24), "120x40": (120, 40)}
THEMES = ["soothe-dark", "soothe-light", "soothe-high-contrast", "soothe-dusk"]

Stage = Callable[[Pilot[Any]], Awaitable[None]]


@pytest.fixture(params=list(SIZES))
def size(request: pytest.FixtureRequest) -> tuple[int, int]:
    return SIZES[request.param]


# --- waiting for a still screen ----------------------------------------------------------


async def still(app: SootheApp, pilot: Pilot[Any]) -> None:
    """The handler idle, held evidence shown, running cards' headers drawn, the footer of
    the screen on top recomposed: what the user sees a second later."""
    await pilot.pause()
    await app.handler.wait_idle()
    pace = app.handler.port.evidence
    await until(lambda: not pace.held, pilot)
    cards = app.main.stream.query(StepCardView)
    await until(lambda: not any(card.header_pending for card in cards), pilot)
    for footer in app.screen.query(SteadyFooter):  # the keys it shows (two hidden
        # bindings of one key, ctrl+d, take turns in active_bindings)
        await until(lambda f=footer: shown_keys(f._shown) == shown_keys(f._keys()), pilot)  # type: ignore[misc]
    await pilot.pause()


def shown_keys(keys: tuple[object, ...] | None) -> list[object]:
    return [key for key in keys or () if key[3]]  # type: ignore[index]


async def on_top(app: SootheApp, pilot: Pilot[Any], kind: type[Screen[Any]]) -> None:
    """Wait for a screen of ``kind`` on top, then for a still screen."""
    await until(lambda: isinstance(app.screen, kind), pilot, timeout=20)
    await still(app, pilot)


async def shown(app: SootheApp, pilot: Pilot[Any], *texts: str) -> None:
    await until(lambda: all(t in screen_text(app) for t in texts), pilot)
    await still(app, pilot)


def shot(snap_compare: Any, app: SootheApp, size: tuple[int, int], stage: Stage) -> None:
    assert snap_compare(app, terminal_size=size, run_before=stage)


@pytest.fixture
def releases() -> Iterator[list[Pause]]:
    """Pauses to release after the shot (the app exits with the streams held)."""
    held: list[Pause] = []
    yield held
    for pause in held:
        pause.release.set()


class StillMonotonic:
    """``time`` with ``monotonic`` standing still: a goal's time spend (its budget's clock)
    is 0 s on screen instead of the second or two a loaded machine takes."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def monotonic() -> float:
        return 1000.0


@pytest.fixture(autouse=True)
def _still_spend(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("soothe.engine.context.spend", "soothe.engine.context.goals"):
        monkeypatch.setattr(f"{module}.time", StillMonotonic())


@pytest.fixture(autouse=True)
def _scripted(brain: Brain) -> Iterator[None]:
    """Every model call a shot made was scripted: the screen shows what the test meant."""
    yield
    assert not brain.unscripted, brain.unscripted


# --- scripts -----------------------------------------------------------------------------


def held_goal(rig: Rig, text: str = "A long answer that is still being written") -> Pause:
    """One goal, one step whose reply stops after its first words until released."""
    held = Pause(text=text, after=3)
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Think it over")))
    rig.brain.step("S-01", held)
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", "Thought over.")
    return held


def one_step(rig: Rig, description: str, *replies: Any) -> None:
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", description)))
    rig.brain.step("S-01", *replies)


def tool(name: str, **args: object) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "args": args}])


async def mid_stream(app: SootheApp, pilot: Pilot[Any], first: Pause, second: Pause) -> None:
    await ready(app, pilot)
    await send(app, pilot, "Read the README and write a haiku")
    await wait_event(first.reached, pilot)
    await wait_event(second.reached, pilot)
    await shown(app, pilot, "The README describes a small", "Green checks at dawn")


def goal_status(app: SootheApp, goal_id: str) -> str:
    goal = app.handler.goals.get(goal_id)
    return goal.status if goal else ""


def step_status(app: SootheApp, goal_id: str, step_id: str) -> str:
    goal = app.main.goal_tree.goal(goal_id)
    return next((s.status for s in goal.steps if s.id == step_id), "") if goal else ""


# --- the main screen ---------------------------------------------------------------------


def test_empty(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """Started, nothing asked: the prompt focused, the empty panels, the footer keys."""
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


def test_parallel_mid_stream(
    snap_compare: Any, rig: Rig, size: tuple[int, int], releases: list[Pause]
) -> None:
    """Two steps of one goal streaming at once: S-01 after its read_file call, S-02."""
    first, second = parallel_flow(rig.brain)
    releases += [first, second]
    app = rig.app()
    shot(snap_compare, app, size, lambda p: mid_stream(app, p, first, second))


def test_parallel_done(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """Both parallel steps done, the answer written, the evidence in."""
    first, second = parallel_flow(rig.brain)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await mid_stream(app, pilot, first, second)
        first.release.set()  # one after the other: evidence lands in a fixed order
        await until(lambda: step_status(app, "G1", "S-01") == "completed", pilot)
        second.release.set()
        await settle(app, pilot)
        await still(app, pilot)

    try:
        shot(snap_compare, app, size, stage)
    finally:
        first.release.set()
        second.release.set()


def test_failed_step(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """A step whose stream ends in a model error, and whose assessment fails too: the
    tool row marked failed, the error in the stream and the toasts."""
    one_step(
        rig,
        "Read nope.txt",
        tool("read_file", path="nope.txt"),
        FakeReply(text="Let me look", error="CUDA error: out of memory"),
    )
    rig.brain.always["StatusAssessment"] = assess("replan", progress="none")
    rig.brain.add("complete", "nope.txt could not be read: it is not in the workspace.")
    rig.configure(loop={"max_iterations": 1, "agentic_max_iterations": 1})
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "Summarise nope.txt")
        await settle(app, pilot)
        app.main.goal_tree.show_ref(NodeRef("goal", "G1"))
        await settle(app, pilot)
        app.clear_notifications()  # the failure toasts: see the goal's own view
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


def test_queued_requests(
    snap_compare: Any, rig: Rig, size: tuple[int, int], releases: list[Pause]
) -> None:
    """Enter during a run: two requests queued above the prompt, in order."""
    releases.append(held_goal(rig))
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "Think about the README")
        await wait_event(releases[0].reached, pilot)
        for text in ("Then list the workspace files", "And count the words in README.md"):
            await send(app, pilot, text)
        await shown(app, pilot, "queued (2)")

    shot(snap_compare, app, size, stage)


def test_no_server_notice(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """The model server is down at start: the notice names ctrl+d and /demo."""
    rig.server.stop()
    rig.configure(model={"base_url": CLOSED_PORT})  # the notice names it: not a random port
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


PASTED = "\n".join(
    f"row {i:03d} | {i * 7 % 100:>2} apples | {i * 3 % 50:>2} pears" for i in range(40)
)


async def pasted(app: SootheApp, pilot: Pilot[Any], *, open_it: bool) -> None:
    await ready(app, pilot)
    app.prompt.focus()
    app.post_message(events.Paste(PASTED))
    await until(lambda: app.prompt.value == PASTED, pilot)
    await pilot.press("ctrl+j", *"How many apples in all?", "enter")
    await settle(app, pilot)
    if open_it:
        (block,) = app.main.stream.query(PastedRequest)
        title = block.query_one(CollapsibleTitle)
        title.focus()
        await pilot.press("enter")
        await until(lambda: not block.collapsed, pilot)
        app.main.stream.scroll_to_widget(block, animate=False, top=True)
        await settle(app, pilot)
    await still(app, pilot)


@pytest.mark.parametrize("opened", [False, True], ids=["folded", "opened"])
def test_pasted(snap_compare: Any, rig: Rig, size: tuple[int, int], opened: bool) -> None:
    """A 40-line paste and a question: one folded line ("pasted 41 lines"); enter on it
    opens it."""
    quiz(rig.brain, "About 1,980 apples in all.")
    app = rig.app()
    shot(snap_compare, app, size, lambda p: pasted(app, p, open_it=opened))


TRACE = [f"weighing option {i}; " for i in range(60)]


@pytest.mark.parametrize("opened", [False, True], ids=["folded", "opened"])
def test_thinking(snap_compare: Any, rig: Rig, size: tuple[int, int], opened: bool) -> None:
    """A thinking model: its reasoning folded to one dim line in the step card; enter on
    it opens it."""
    rig.server.add_model(FakeOllamaModel(MODEL, thinking=True))
    rig.configure(model={"think": True})
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Read README.md")))
    rig.brain.step(
        "S-01",
        FakeReply(
            tool_calls=[{"name": "read_file", "args": {"path": "README.md"}}], thinking=TRACE
        ),
        FakeReply(text="README.md describes a terminal workbench.", thinking=TRACE[:3]),
    )
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", FakeReply(text="Soothe is a terminal workbench.", thinking=TRACE[:2]))
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "Summarise the README")
        await settle(app, pilot)
        app.main.goal_tree.show_ref(NodeRef("step", "G1", "S-01"))
        await until(lambda: app.main.stream.key == "G1/S-01", pilot)
        await settle(app, pilot)
        (block,) = app.main.stream.query(ThinkingBlock)
        if opened:
            block._title.focus()
            await pilot.press("enter")
            await until(lambda: not block.collapsed, pilot)
            await settle(app, pilot)
            # the opened block grows the card: the panel may or may not have scrolled to
            # keep the focused title in view (a race seen once in CI): from the top
            app.main.stream.scroll_home(animate=False)
            await settle(app, pilot)
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


def test_tool_row_opened(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """enter on a tool row: its full arguments and result, under the row."""
    readme_flow(rig.brain)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "Summarise README.md")
        await settle(app, pilot)
        block = app.main.stream.query(ToolCallBlock).first()
        title = block.query_one(CollapsibleTitle)
        app.main.stream.scroll_to_widget(block, animate=False)
        title.focus()
        await settle(app, pilot)
        await pilot.press("enter")
        await until(lambda: not block.collapsed, pilot)
        await settle(app, pilot)
        app.main.stream.scroll_to_widget(block, animate=False, top=True)
        await settle(app, pilot)
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


def test_reopened_thread(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """``soothe --thread t-0001`` after a goal ran: as it was shown live."""
    readme_flow(rig.brain)

    async def earlier() -> None:
        session = rig.session()
        await session.start()
        try:
            await session.run("Summarise README.md")
        finally:
            await session.close()

    asyncio.run(earlier())
    app = rig.app("t-0001")

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


# --- evidence ----------------------------------------------------------------------------


async def readme_done(app: SootheApp, pilot: Pilot[Any]) -> None:
    await ready(app, pilot)
    await send(app, pilot, "Summarise README.md")
    await settle(app, pilot)


def test_evidence_panel(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """ctrl+e after a run: the evidence panel shown (also at 80x24) and focused."""
    readme_flow(rig.brain)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await readme_done(app, pilot)
        await pilot.press("ctrl+e")
        await until(lambda: app.main.evidence.has_focus, pilot)
        await settle(app, pilot)
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


def test_evidence_entry(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """enter on an evidence entry: the entry whole, in a dialog."""
    readme_flow(rig.brain)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await readme_done(app, pilot)
        await pilot.press("ctrl+e")
        await until(lambda: app.main.evidence.has_focus, pilot)
        await pilot.press("down", "down", "enter")
        await on_top(app, pilot, EvidenceDialog)

    shot(snap_compare, app, size, stage)


# --- modals --------------------------------------------------------------------------------


def test_clarification(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """A plan that asks first: the clarification dialog, two questions."""
    rig.configure(tools={"clarify": "ask"})
    rig.brain.add("Classification", classify("complex"))
    questions = ["Which dates work for you?", "What is your budget per night?"]
    ask = step("S-01", "Ask about dates and budget", kind="ask_user", questions=questions)
    rig.brain.add("PlanGeneration", plan(ask))
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "Plan a weekend in Lisbon")
        await on_top(app, pilot, ClarificationModal)

    shot(snap_compare, app, size, stage)


def approval_shot(snap_compare: Any, rig: Rig, size: tuple[int, int], reply: FakeReply) -> None:
    with fixed_workspace() as ws:  # the dialog may name the workspace
        rig.use_workspace(ws)
        (ws / "notes.md").write_text("# Notes\n- buy milk\n- call Ana\n- water the plants\n")
        rig.configure(tools={"approval": "ask"})
        one_step(rig, "Update the notes", reply)
        app = rig.app()

        async def stage(pilot: Pilot[Any]) -> None:
            await ready(app, pilot)
            await send(app, pilot, "Add the dentist on Friday to notes.md")
            await on_top(app, pilot, ApprovalModal)

        shot(snap_compare, app, size, stage)


def test_approval_write_file(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """write_file over a file on disk: the diff, "overwrites 4 lines"."""
    content = "# Notes\n- buy milk\n- call Ana\n- dentist on Friday\n- water the plants\n"
    approval_shot(snap_compare, rig, size, tool("write_file", path="notes.md", content=content))


def test_approval_edit_file(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """edit_file: the diff of the one line it changes."""
    reply = tool("edit_file", path="notes.md", old="- call Ana", new="- call Ana (Tuesday)")
    approval_shot(snap_compare, rig, size, reply)


def test_approval_run_shell(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """run_shell: the full command, however long, as a command."""
    command = (
        "grep -rn --include='*.md' -e 'dentist' -e 'Friday' . | sort | uniq -c "
        "| tee /tmp/soothe-dentist-report.txt && wc -l /tmp/soothe-dentist-report.txt"
    )
    approval_shot(snap_compare, rig, size, tool("run_shell", command=command, timeout=60))


def test_undo_confirmation(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """/undo after a run that wrote two files: the files listed (by their full path: a
    fixed workspace), y/n."""
    with fixed_workspace() as ws:
        rig.use_workspace(ws)
        undo_shot(snap_compare, rig, size)


def undo_shot(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    one_step(
        rig,
        "Rewrite the README, add notes.txt",
        tool("write_file", path="README.md", content="# Soothe\nRewritten.\n"),
        tool("write_file", path="notes.txt", content="notes\n"),
        "Rewrote the README and added notes.txt.",
    )
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", "Rewrote the README and added notes.txt.")
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "Rewrite the README and add notes")
        await settle(app, pilot)
        await send(app, pilot, "/undo")
        await on_top(app, pilot, ConfirmDialog)

    shot(snap_compare, app, size, stage)


def test_quit_mid_run(
    snap_compare: Any, rig: Rig, size: tuple[int, int], releases: list[Pause]
) -> None:
    """ctrl+q while a step streams: asks before interrupting."""
    releases.append(held_goal(rig))
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "Think about the README")
        await wait_event(releases[0].reached, pilot)
        await shown(app, pilot, "A long answer")
        await pilot.press("ctrl+q")
        await on_top(app, pilot, ConfirmDialog)

    shot(snap_compare, app, size, stage)


def test_help(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await pilot.press("f1")
        await on_top(app, pilot, HelpScreen)

    shot(snap_compare, app, size, stage)


def test_command_palette(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """ctrl+p after a run, "soothe-" typed: the four themes to pick from."""
    readme_flow(rig.brain)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        from textual.command import CommandInput, CommandList, CommandPalette

        await readme_done(app, pilot)
        await pilot.press("ctrl+p")
        await until(lambda: isinstance(app.screen, CommandPalette), pilot)
        palette = app.screen
        # a search that one provider answers: hits of equal score (every discovery hit
        # scores 0) show in the order their providers answer, which differs run to run
        field = palette.query_one(CommandInput)
        field.cursor_blink = False  # Textual's own input: the app's animate=False misses it
        field.value = "soothe-"  # one search, not one per key: the themes
        await until(lambda: palette.query_one(CommandList).option_count > 1, pilot)
        await until(lambda: all(w.is_finished for w in app.workers), pilot)  # its search
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


async def stored_threads(rig: Rig) -> None:
    """Three threads, made by real requests at fixed store times (no clock on screen)."""
    quiz(rig.brain, "Cheapest: **TP1351** on Friday morning, 142 EUR.")
    quiz(rig.brain, "A terminal workbench for goal-driven agents.")
    clock = rig.clock
    assert clock is not None
    session = rig.session()
    await session.start()
    try:
        clock.at(2025, 3, 1, 9, 30)
        await session.run("Plan a weekend in Lisbon")
        await session.new_thread()
        clock.at(2025, 2, 20, 14, 0)
        await session.run("What is Soothe?")
        await session.new_thread()
        clock.at(2025, 3, 3, 8, 0)
        await session.add_goal("Tidy the notes folder")
    finally:
        await session.close()


def test_threads(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """ctrl+t: the stored threads, id first."""
    asyncio.run(stored_threads(rig))
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        from soothe.app.screens.threads import ThreadsScreen

        await ready(app, pilot)
        await pilot.press("ctrl+t")
        await until(lambda: isinstance(app.screen, ThreadsScreen), pilot)
        await settle(app, pilot)
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


# --- the goal tree -------------------------------------------------------------------------


async def several_goals(app: SootheApp, pilot: Pilot[Any]) -> None:
    """G1 completed (a real run), G2 failed, G3 blocked on G2, G4 suspended, G5 waiting
    for G1's sibling at priority 80."""
    await readme_done(app, pilot)
    session = app.require_session()
    g2 = await session.add_goal("Publish the docs site")
    g3 = await session.add_goal("Announce the release on the blog")
    await session.add_dependency(g3, g2)
    await session.context.fail_goal(g2, error="no deploy key in the workspace", allow_retry=False)  # type: ignore[attr-defined]
    g4 = await session.add_goal("Tidy the notes folder")
    await session.toggle_suspend(g4)
    await session.add_goal("Write the changelog", priority=80)
    await settle(app, pilot)


def test_goal_tree_states(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """Five goals: completed, failed, blocked (on the failed one), suspended, pending at
    priority 80; the blocked one selected."""
    readme_flow(rig.brain)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await several_goals(app, pilot)
        tree = app.main.goal_tree
        tree.focus()
        tree.show_ref(NodeRef("goal", "G3"))
        await settle(app, pilot)
        app.clear_notifications()  # G2's failure toast: the tree is the subject here
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


def test_goal_details(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """enter on the completed goal in the tree: everything known about it."""
    readme_flow(rig.brain)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await readme_done(app, pilot)
        tree = app.main.goal_tree
        tree.focus()
        tree.show_ref(NodeRef("goal", "G1"))
        await settle(app, pilot)
        await pilot.press("enter")
        await on_top(app, pilot, GoalDetailDialog)

    shot(snap_compare, app, size, stage)


def test_new_goal_dialog(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """n in the goal tree: the new-goal dialog, a description typed."""
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await pilot.press("ctrl+g")
        await until(lambda: app.main.goal_tree.has_focus, pilot)
        await pilot.press("n")
        await until(lambda: isinstance(app.screen, GoalInputDialog), pilot)
        await pilot.press(*"Summarise the meeting notes")
        await on_top(app, pilot, GoalInputDialog)

    shot(snap_compare, app, size, stage)


def test_dependency_picker(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """d on a goal: pick the goal it waits for (those without a cycle)."""
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        session = app.require_session()
        for text in ("Collect the numbers", "Draw the charts", "Write the report"):
            await session.add_goal(text)
        await settle(app, pilot)
        tree = app.main.goal_tree
        tree.focus()
        tree.show_ref(NodeRef("goal", "G3"))
        await settle(app, pilot)
        await pilot.press("d")
        await on_top(app, pilot, DependencyDialog)

    shot(snap_compare, app, size, stage)


def test_steer_dialog(
    snap_compare: Any, rig: Rig, size: tuple[int, int], releases: list[Pause]
) -> None:
    """enter on the running goal in the tree: a note to it, typed."""
    releases.append(held_goal(rig))
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "Think about the README")
        await wait_event(releases[0].reached, pilot)
        await shown(app, pilot, "A long answer")
        tree = app.main.goal_tree
        tree.focus()
        tree.show_ref(NodeRef("goal", "G1"))
        await still(app, pilot)
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, GoalInputDialog), pilot)
        await pilot.press(*"Skip the tests folder")
        await on_top(app, pilot, GoalInputDialog)

    shot(snap_compare, app, size, stage)


# --- themes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("theme", THEMES)
def test_theme_mid_stream(
    snap_compare: Any, rig: Rig, size: tuple[int, int], releases: list[Pause], theme: str
) -> None:
    """Each built-in theme on a busy screen: two parallel steps streaming."""
    rig.configure(ui={"theme": theme})
    first, second = parallel_flow(rig.brain)
    releases += [first, second]
    app = rig.app()
    shot(snap_compare, app, size, lambda p: mid_stream(app, p, first, second))


# --- issue 33: done-when criteria and budgets ------------------------------------------------

CRITERION = "the README names Soothe"


def verified_flow(rig: Rig) -> None:
    """G1 with two criteria and a budget, run with ctrl+r: the verifier finds both met,
    the first on evidence E-G1-1."""
    brain = rig.brain
    brain.add("PlanGeneration", plan(step("S-01", "Read README.md")))
    brain.step("S-01", "Soothe is a terminal workbench.")
    brain.add("StatusAssessment", assess("done", progress="complete"))
    brain.add("complete", "Soothe is a terminal workbench.")
    met = {"number": 1, "verdict": "met", "reason": "the README's title", "evidence": ["E-G1-1"]}
    brain.add(
        "Verification",
        {"criteria": [met, {"number": 2, "verdict": "met", "reason": "six words"}]},
    )


async def verified(app: SootheApp, pilot: Pilot[Any]) -> None:
    await ready(app, pilot)
    session = app.require_session()
    criteria = [CRITERION, "the summary is under 50 words"]
    budget = GoalBudget(calls=40, tokens=200_000)
    await session.add_goal("Say what the README is about", criteria=criteria, budget=budget)
    await settle(app, pilot)
    await pilot.press("ctrl+r")
    await until(lambda: session.context.get_goal("G1").status == "completed", pilot)  # type: ignore[attr-defined]
    await settle(app, pilot)
    tree = app.main.goal_tree
    tree.focus()
    tree.show_ref(NodeRef("goal", "G1"))
    await settle(app, pilot)


def test_goal_verified_view(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """A goal with done-when criteria and a budget, verified (unmet, sent back, then met
    and unknown): its view, selected in the tree."""
    verified_flow(rig)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await verified(app, pilot)
        await still(app, pilot)

    shot(snap_compare, app, size, stage)
    assert rig.brain.leftover() == {}  # the screen shows what the script meant


def test_goal_verified_details(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """enter on it: the details with the Done when block (✓ ? and the evidence id) and
    the budget line (spent against the caps)."""
    verified_flow(rig)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await verified(app, pilot)
        await pilot.press("enter")
        await on_top(app, pilot, GoalDetailDialog)

    shot(snap_compare, app, size, stage)
    assert rig.brain.leftover() == {}  # the screen shows what the script meant


LOOPING = FakeReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}], usage=(3000, 20))


def test_budget_running(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """A goal with a token cap, its step's call held: the status line shows its spend
    against the cap."""
    rig.configure(goals={"budget": "tokens=10k"})
    one_step(rig, "List the files")
    rig.brain.always["step:S-01"] = LOOPING
    gate = rig.brain.hold("step:S-01")
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "List the files")
        await wait_event(rig.brain.seen("step:S-01"), pilot)
        await until(lambda: "G1 tokens" in str(app.main.status.render()), pilot)
        await still(app, pilot)

    try:
        shot(snap_compare, app, size, stage)
    finally:
        gate.set()


async def capped(app: SootheApp, pilot: Pilot[Any]) -> None:
    await ready(app, pilot)
    await send(app, pilot, "List the files")
    await until(lambda: goal_status(app, "G1") == "suspended", pilot, timeout=20)
    await settle(app, pilot)
    # masked: a run stopped by a cap ends in run.failed, whose elapsed time is the
    # events' own timestamps (wall clock: EventBase.ts), 0:01 on a loaded machine
    app.main.status.set(elapsed=0.0)
    tree = app.main.goal_tree
    tree.focus()
    tree.show_ref(NodeRef("goal", "G1"))
    await settle(app, pilot)


def capped_flow(rig: Rig) -> None:
    rig.configure(goals={"budget": "tokens=10k"})
    one_step(rig, "List the files")
    rig.brain.always["step:S-01"] = LOOPING


def test_budget_reached(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """The goal reached its token cap: suspended, naming the cap, in its view."""
    capped_flow(rig)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await capped(app, pilot)
        app.clear_notifications()
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


def test_budget_reached_details(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """enter on it: the budget line, spent against the cap, "reached tokens 10k"."""
    capped_flow(rig)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await capped(app, pilot)
        app.clear_notifications()
        await pilot.press("enter")
        await on_top(app, pilot, GoalDetailDialog)

    shot(snap_compare, app, size, stage)


def test_budget_resume_dialog(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """s on the capped goal: resume offers the cap raised."""
    capped_flow(rig)
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await capped(app, pilot)
        app.clear_notifications()
        await pilot.press("s")
        await on_top(app, pilot, BudgetDialog)

    shot(snap_compare, app, size, stage)


async def goal_with_contract(app: SootheApp, pilot: Pilot[Any]) -> None:
    await ready(app, pilot)
    await send(
        app,
        pilot,
        f'/goal Summarise the README --done-when "{CRITERION}" --done-when "it is short"'
        " --budget calls=40,tokens=200k,time=30m",
    )
    await until(lambda: "G1" in app.handler.goals, pilot)
    await settle(app, pilot)
    tree = app.main.goal_tree
    tree.focus()
    tree.show_ref(NodeRef("goal", "G1"))
    await settle(app, pilot)


def test_budget_dialog(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """b on a goal added with /goal ... --budget: its caps, to edit."""
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await goal_with_contract(app, pilot)
        await pilot.press("b")
        await on_top(app, pilot, BudgetDialog)

    shot(snap_compare, app, size, stage)


def test_criteria_dialog(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """e on a goal added with /goal ... --done-when: its criteria, one per line."""
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await goal_with_contract(app, pilot)
        await pilot.press("e")
        await on_top(app, pilot, CriteriaDialog)

    shot(snap_compare, app, size, stage)


# --- hostile text ----------------------------------------------------------------------------

HOSTILE = "\x1b[31mred\x1b[0m \x1b]0;pwned\x07title \x1b[2Jclear \u202eevil\u202c \x07bell"


def test_hostile_text(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """Escape sequences, a bidi override and a bell in a file the agent reads, in the
    model's step text and in its answer: shown plain, in the card, the opened tool row,
    the evidence and the answer. A fixed workspace: its path is in the prompts, whose
    token count the status line shows."""
    with fixed_workspace() as ws:
        rig.use_workspace(ws)
        hostile_shot(snap_compare, rig, size)


def hostile_shot(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    (rig.workspace / "notes.md").write_text(f"# Notes\n{HOSTILE}\n")
    one_step(
        rig,
        "Read notes.md",
        tool("read_file", path="notes.md"),
        f"The notes say: {HOSTILE}",
    )
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", f"Answer: {HOSTILE}")
    rig.brain.always["text"] = f"From the facts: {HOSTILE}"  # the answer check's re-ask
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, f"Read notes.md {HOSTILE}")
        await settle(app, pilot)
        block = app.main.stream.query(ToolCallBlock).first()
        title = block.query_one(CollapsibleTitle)
        title.focus()
        await pilot.press("enter")
        await until(lambda: not block.collapsed, pilot)
        await settle(app, pilot)
        app.main.stream.scroll_to_widget(block, animate=False, top=True)
        await settle(app, pilot)
        await still(app, pilot)
        text = screen_text(app)
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text

    shot(snap_compare, app, size, stage)


def test_queue_focused(
    snap_compare: Any, rig: Rig, size: tuple[int, int], releases: list[Pause]
) -> None:
    """shift+tab from the prompt during a run: the queue focused, its second request
    under the cursor, its keys (e edit, d remove) in the footer."""
    releases.append(held_goal(rig))
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        await ready(app, pilot)
        await send(app, pilot, "Think about the README")
        await wait_event(releases[0].reached, pilot)
        for text in ("Then list the workspace files", "And count the words in README.md"):
            await send(app, pilot, text)
        await shown(app, pilot, "queued (2)")
        await pilot.press("shift+tab")
        await until(lambda: app.focused is app.main.queued, pilot)
        await pilot.press("down")
        await still(app, pilot)

    shot(snap_compare, app, size, stage)


def test_thread_delete_confirmation(snap_compare: Any, rig: Rig, size: tuple[int, int]) -> None:
    """d on a thread in the threads screen: asks first, naming it."""
    asyncio.run(stored_threads(rig))
    app = rig.app()

    async def stage(pilot: Pilot[Any]) -> None:
        from soothe.app.screens.threads import ThreadsScreen

        await ready(app, pilot)
        await pilot.press("ctrl+t")
        await until(lambda: isinstance(app.screen, ThreadsScreen), pilot)
        await settle(app, pilot)
        await pilot.press("down", "d")
        await on_top(app, pilot, ConfirmDialog)

    shot(snap_compare, app, size, stage)
