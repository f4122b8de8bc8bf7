"""``soothe -p`` asking for an approval at a terminal shows what the call would change:
the same preview the app's dialog shows (``engine/agent/change_preview``), a unified diff
for write_file/edit_file (coloured on a terminal, cut at ``PREVIEW_LINES``), a multi-line
``run_shell`` script whole, every control character in it visible. Before, the question
alone said ``? allow write_file(path=README.md, content=Summary: …)``: nothing told that
the whole README would be overwritten."""

from __future__ import annotations

import io
import os
import re
import time

from soothe.engine.agent.change_preview import ChangePreview
from soothe.frontends.headless import PREVIEW_LINES, approval_preview, wants_colour
from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, brain, env, fake
from tests.fakes.pty_run import soothe_process

__all__ = ["brain", "env", "fake"]  # fixtures

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": False}
SGR = re.compile(r"\x1b\[[0-9;]*m")


def _answer_at_terminal(env: Env, reply: str, *args: str) -> tuple[int, str]:
    """``soothe ARGS`` with stdin and stderr a terminal; ``reply`` typed at the question.
    Returns (exit code, what reached the terminal)."""
    with soothe_process(env, *args, tty=True, stdin_tty=True) as term:
        deadline = time.monotonic() + 30
        while b"[y/N/a=always]" not in term.screen:
            assert term.proc.poll() is None, term.screen.decode()
            assert time.monotonic() < deadline, term.screen.decode()
            time.sleep(0.05)
        os.write(term.master, reply.encode())
        _out, terminal = term.finish(timeout=30)
    return term.proc.returncode, terminal


def _controls(text: str) -> list[str]:
    """Control characters other than newline and tab."""
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


def test_an_overwrite_shows_the_diff_in_colour_cut_to_its_bound(brain: Brain, env: Env) -> None:
    readme = env.workspace / "README.md"
    old = "".join(f"line {i}\n" for i in range(1, 61))
    readme.write_text(old)
    summary = "Summary: the project\x1b]0;PWNED\x07 does things.\nline 1\nline 2\n"
    call = {"name": "write_file", "args": {"path": "README.md", "content": summary}}
    brain.add("Classification", {"label": "simple", "reason": "r"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Summarise"}]})
    brain.step("S-01", FakeReply(tool_calls=[call]))
    brain.step("S-01", "Not allowed, so nothing was written.")
    brain.add("StatusAssessment", DONE)

    code, terminal = _answer_at_terminal(env, "n\n", "-p", "Summarise the project")

    assert code in (0, 1), terminal
    lines = terminal.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("? allow"))
    assert lines[at].startswith("? allow write_file(path=README.md, content=Summary: ")
    shown = [SGR.sub("", line) for line in lines[:at]]
    start = shown.index("  overwrites 60 lines")
    preview = shown[start:]
    assert preview[1:4] == ["  --- a/README.md", "  +++ b/README.md", "  @@ -1,60 +1,3 @@"]
    assert preview[4:8] == [
        "  +Summary: the project␛]0;PWNED␇ does things.",
        "   line 1",
        "   line 2",
        "  -line 3",
    ]
    # 3 header lines + 1 added + 2 kept + 58 removed = 64: 40 shown, then how many were cut
    assert len(preview) == 1 + PREVIEW_LINES + 1, preview
    assert preview[-1] == f"  ... {64 - PREVIEW_LINES} more diff lines not shown"
    # coloured as git diff colours it: removed red, headers bold, hunk cyan
    assert "\x1b[32m  +Summary: the project␛]0;PWNED␇ does things.\x1b[0m" in lines
    assert "\x1b[31m  -line 3\x1b[0m" in lines and "   line 1" in lines
    assert "\x1b[1m  --- a/README.md\x1b[0m" in lines
    assert "\x1b[36m  @@ -1,60 +1,3 @@\x1b[0m" in lines
    # nothing the model wrote acts on the terminal: our colours are the only sequences
    assert _controls(SGR.sub("", terminal)) == [], terminal
    assert readme.read_text() == old


def test_a_script_shows_whole_with_its_controls_visible(brain: Brain, env: Env) -> None:
    script = "cd src\nrm -rf build\r\x1b[2Kmake"
    brain.add("Classification", {"label": "simple", "reason": "r"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Build"}]})
    brain.step("S-01", FakeReply(tool_calls=[{"name": "run_shell", "args": {"command": script}}]))
    brain.step("S-01", "Not allowed.")
    brain.add("StatusAssessment", DONE)

    code, terminal = _answer_at_terminal(env, "n\n", "-p", "Build it")

    assert code in (0, 1), terminal
    plain = [SGR.sub("", line) for line in terminal.splitlines()]
    at = plain.index("  runs a 2-line script")
    assert plain[at + 1 : at + 3] == ["  $ cd src", "  > rm -rf build␍␛[2Kmake"]
    assert plain[at + 3].startswith("? allow run_shell(command=cd src␊rm -rf build␍␛[2Kmake")
    assert _controls(SGR.sub("", terminal)) == [], terminal


def test_the_preview_is_plain_off_a_terminal_and_says_why_a_call_would_fail() -> None:
    assert not wants_colour(io.StringIO())
    change = ChangePreview(
        summary="the tool would refuse this call",
        problem="'old' text not found in a\x1b[2J.py",
    )
    assert approval_preview(change, colour=False) == (
        "  the tool would refuse this call\n  ! 'old' text not found in a␛[2J.py\n"
    )
    diff = ChangePreview(summary="new file, 1 line", diff="--- /dev/null\n+++ b/a\n+x\n")
    assert approval_preview(diff, colour=False) == (
        "  new file, 1 line\n  --- /dev/null\n  +++ b/a\n  +x\n"
    )
    assert approval_preview(None, colour=True) == ""
    one_line = ChangePreview(summary="runs a command", command="make")
    assert approval_preview(one_line, colour=True) == ""  # the question shows it whole
