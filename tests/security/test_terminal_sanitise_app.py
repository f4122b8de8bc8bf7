"""Hostile text in the app (Pilot, the real Session against the fake Ollama).

The app must write no control sequence it did not make itself: a model's answer, a step
description or a tool's output holding OSC 0 (title), OSC 52 (clipboard), CSI 2J or
OSC 8 reaches the terminal without them. What the terminal would get is read where
Textual writes it (the compositor's full-screen update rendered to terminal text): only
the app's own SGR colours and cursor moves are escape sequences there. The approval
dialog shows a command's control characters visibly (``␍``, ``␛``).
"""

from __future__ import annotations

import re

from soothe.app.main import SootheApp
from soothe.app.screens.requests import ApprovalModal
from tests.app.real_harness import (
    Rig,
    brain,
    classify,
    ollama,
    ready,
    rig,
    screen_text,
    send,
    settle,
    until,
)
from tests.fakes._base import FakeReply
from tests.security.test_terminal_sanitise import CLEAR, COMMAND, HOSTILE, TITLE

__all__ = ["brain", "ollama", "rig"]  # fixtures

OWN_SEQUENCES = re.compile(r"\x1b\[[0-9;]*[mH]")
"""What the app itself writes in a screen update: SGR colours and cursor moves."""


def terminal_output(app: SootheApp) -> str:
    """The text Textual would write to the terminal to draw the whole screen now."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return update.render_segments(app.console)


def foreign(output: str) -> list[str]:
    """Control characters in ``output`` that are not part of the app's own sequences."""
    rest = OWN_SEQUENCES.sub("", output)
    return sorted({c for c in rest if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F})


async def test_a_hostile_answer_and_plan_reach_the_screen_without_their_sequences(
    rig: Rig,
) -> None:
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add(
        "PlanGeneration", {"steps": [{"id": "S-01", "description": f"Read {TITLE}the notes"}]}
    )
    rig.brain.step("S-01", f"Step says {HOSTILE}")
    rig.brain.add("complete", f"Final: {HOSTILE}")
    rig.brain.always["StatusAssessment"] = {
        "status": "done",
        "goal_progress": "complete",
        "require_goal_completion": False,
    }
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Read the notes")
        await until(lambda: "G1 completed" in screen_text(app), pilot, timeout=30)
        await settle(app, pilot)
        shown = screen_text(app)
        assert "S-01 Read the notes" in shown  # the title sequence gone whole
        answers = list(app.handler.answers.values())
        assert any(a.endswith("says before click after") for a in answers), answers
        output = terminal_output(app)
        assert foreign(output) == [], foreign(output)
        assert "PWNED" not in output and "52;" not in output


async def test_the_approval_dialog_shows_the_command_visibly(rig: Rig) -> None:
    """The measured attack: the dialog read ``ls -la`` and approving ran the echo."""
    rig.configure(tools={"approval": "ask"})
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "List files"}]})
    rig.brain.step(
        "S-01", FakeReply(tool_calls=[{"name": "run_shell", "args": {"command": COMMAND}}])
    )
    rig.brain.step("S-01", "Denied, nothing listed.")
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "List the files")
        await until(lambda: isinstance(app.screen, ApprovalModal), pilot, timeout=20)
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ApprovalModal)
        assert modal.query("#command")
        assert "echo DANGEROUS > owned.txt␍␛[2Kls -la" in screen_text(app)
        output = terminal_output(app)
        assert foreign(output) == [], foreign(output)
        await pilot.press("d")
        await settle(app, pilot)
    assert not (rig.workspace / "owned.txt").exists()


async def test_a_tool_error_quoting_markup_is_a_toast_of_plain_text(rig: Rig) -> None:
    """A failed tool's first output line becomes a toast: markup in it (a file name the
    model chose) must not become a link (OSC 8 to the attacker's address) or break it."""
    name = "[link='http://evil.example/']click[/link] [/].md"
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Read it"}]})
    rig.brain.step("S-01", FakeReply(tool_calls=[{"name": "read_file", "args": {"path": name}}]))
    rig.brain.step("S-01", "There is no such file.")
    rig.brain.always["StatusAssessment"] = {
        "status": "done",
        "goal_progress": "complete",
        "require_goal_completion": False,
    }
    app = rig.app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Read the file")
        await until(lambda: "Tool read_file failed" in screen_text(app), pilot, timeout=30)
        assert "[link='http://evil.example/']click[/link]" in screen_text(app)
        output = terminal_output(app)
        assert "\x1b]8;" not in output
        assert foreign(output) == [], foreign(output)
        assert not app.handler.errors


async def test_a_thread_title_holding_markup_is_listed_as_text(rig: Rig) -> None:
    """The threads screen's table read a title as markup: ``[/]`` in a request broke the
    screen (MarkupError) and ``[link=URL]`` made a hyperlink."""
    from soothe.app.screens.threads import ThreadsScreen

    request = f"Check [link='http://evil.example/']this[/link] [/] {TITLE}now"
    rig.brain.add("Classification", classify("quiz", "Checked."))
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, request)
        await settle(app, pilot)
        await pilot.press("ctrl+t")
        await until(lambda: isinstance(app.screen, ThreadsScreen), pilot)
        await settle(app, pilot)
        assert "Check [link='http://evil.example/']this[/link] [/]" in screen_text(app)
        output = terminal_output(app)
        assert "\x1b]8;" not in output
        assert foreign(output) == [], foreign(output)


def test_the_guard_takes_controls_out_of_every_segment_textual_writes() -> None:
    """The last door (app/terminal_guard.py, installed with the app): text that reaches a
    widget without the view model (a notification quoting an exception, a screen reading
    the session) is written without its control characters, styles kept."""
    import io

    from rich.console import Console
    from rich.segment import Segment
    from rich.style import Style
    from textual.strip import Strip

    from soothe.app import terminal_guard

    assert terminal_guard.installed()  # by importing the app
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor")
    strip = Strip([Segment(f"a{TITLE}b{CLEAR}c\r", Style(bold=True)), Segment("\x9b2Jd")])
    output = strip.render(console)
    assert foreign(output) == [] and "\x1b[1m" in output
    assert OWN_SEQUENCES.sub("", output) == "a]0;PWNED-TITLEb[2Jc2Jd"
    # the same cells as Textual measured (controls take none)
    assert strip.cell_length == len("a]0;PWNED-TITLEb[2Jc2Jd")


async def test_the_clarification_dialog_shows_a_question_visibly(rig: Rig) -> None:
    from soothe.app.screens.requests import ClarificationModal

    rig.configure(tools={"clarify": "ask"})
    rig.brain.add("Classification", classify("complex"))
    question = f"Which file?\r{CLEAR}Say yes"
    ask = {"id": "S-01", "kind": "ask_user", "description": "Ask", "questions": [question]}
    rig.brain.add("PlanGeneration", {"steps": [ask]})
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Pick a file")
        await until(lambda: isinstance(app.screen, ClarificationModal), pilot, timeout=20)
        await pilot.pause()
        assert "1. Which file?␍␛[2JSay yes" in screen_text(app)
        assert foreign(terminal_output(app)) == []
        await pilot.press("escape")
        await settle(app, pilot)


TEXTUAL_RENDER_SHA = "2ba7a4913a72125d"
"""The first 16 hex digits of the SHA-256 of Textual 8.2.8's ``Strip.render`` source."""


def test_the_guard_replaces_the_strip_render_it_was_written_against() -> None:
    """terminal_guard._render is Textual's Strip.render with the controls taken out: an
    upgrade that changes Textual's method must be read again before the guard replaces
    it (a stale copy would draw the screen another way, or lose a fix)."""
    import hashlib
    import inspect

    from soothe.app import terminal_guard

    source = inspect.getsource(terminal_guard.TEXTUAL_RENDER)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    assert digest == TEXTUAL_RENDER_SHA, (
        "Textual's Strip.render changed: compare it with app/terminal_guard._render, "
        "carry the change over, then update TEXTUAL_RENDER_SHA"
    )
