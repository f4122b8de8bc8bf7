"""Hostile text at every terminal edge of the CLI: one sanitiser (engine/sanitize.py).

Model replies and workspace files can carry terminal control sequences: OSC 0 (title),
OSC 52 (clipboard, through tmux too), CSI 2J (clear), OSC 8 (a link), and CR plus
erase-line, which made ``echo DANGEROUS > owned.txt\\r\\x1b[2Kls -la`` show as ``ls -la``
in the approval question. The properties of the two forms first, then ``soothe`` as a
subprocess against the fake Ollama: ``-p`` (plain and --json), the [y/N] question at a
terminal (a pty), ``threads``, ``threads show``/``export``, ``doctor``, ``skills``, ``mcp``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from soothe.engine.sanitize import drop_controls, json_safe, plain, plain_fields, visible
from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, brain, env, fake
from tests.fakes.ollama_server import FakeOllamaServer
from tests.fakes.pty_run import soothe_process

__all__ = ["brain", "env", "fake"]  # fixtures

TITLE = "\x1b]0;PWNED-TITLE\x07"
CLIPBOARD = "\x1b]52;c;UFdORUQ=\x07"
CLEAR = "\x1b[2J"
LINK = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
HOSTILE = f"before {TITLE}{CLIPBOARD}{CLEAR}{LINK} \x9b2J\u202eafter"
COMMAND = "echo DANGEROUS > owned.txt\r\x1b[2Kls -la"
DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": False}


def unsafe(text: str, *, allowed: str = "\n\t") -> list[str]:
    """The characters a terminal could act on: C0 (but ``allowed``), DEL, C1, bidi."""
    return [
        c
        for c in text
        if (ord(c) < 0x20 and c not in allowed)
        or 0x7F <= ord(c) <= 0x9F
        or 0x202A <= ord(c) <= 0x202E
        or 0x2066 <= ord(c) <= 0x2069
    ]


# --- the two forms ------------------------------------------------------------------------

PIECES = [
    *("\x1b", "\x1b[", "\x1b]", "\x1bP", "\x1b\\", "\x07", "\x9b", "\x9d", "\x9c", "\r", "\\"),
    *("2J", "0;", "\u202e", "\u2066", "\u200b", "\u240d", "\u241b", "\u27ea", "\u27eb"),
    *("\udcff", "U+", "\n", "\t", "\x00", "\x7f"),
]
HOSTILE_TEXT = st.lists(
    st.one_of(st.characters(codec="utf-8"), st.sampled_from(PIECES)), max_size=30
).map("".join)


def unvisible(shown: str, *, keep_newlines: bool = False) -> str:
    """The inverse of ``visible``: that it exists is what makes ``visible`` injective."""
    out: list[str] = []
    i = 0
    while i < len(shown):
        char = shown[i]
        if char == "\u27ea":
            end = shown.index("\u27eb", i)
            assert shown[i + 1 : i + 3] == "U+"
            out.append(chr(int(shown[i + 3 : end], 16)))
            i = end + 1
            continue
        code = ord(char)
        if 0x2400 <= code < 0x2420:
            out.append(chr(code - 0x2400))
        elif code == 0x2421:
            out.append("\x7f")
        else:
            assert char != "\n" or keep_newlines
            out.append(char)
        i += 1
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(HOSTILE_TEXT)
def test_plain_leaves_nothing_a_terminal_acts_on(text: str) -> None:
    shown = plain(text)
    assert unsafe(shown) == [], repr(shown)
    assert plain(shown) == shown  # idempotent
    assert drop_controls(shown) == shown.replace("\n", "").replace("\t", "")


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cc",)), max_size=60))
def test_plain_keeps_text_without_controls(text: str) -> None:
    if not any(0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069 for c in text):
        assert plain(text) == text


@settings(max_examples=400, deadline=None)
@given(HOSTILE_TEXT, st.booleans())
def test_visible_shows_every_character_and_two_texts_never_look_the_same(
    text: str, keep_newlines: bool
) -> None:
    shown = visible(text, keep_newlines=keep_newlines)
    assert unsafe(shown, allowed="\n" if keep_newlines else "") == [], repr(shown)
    hidden = [c for c in shown if unicodedata.category(c) in ("Cf", "Cs", "Zl", "Zp")]
    assert hidden == [], repr(shown)
    assert unvisible(shown, keep_newlines=keep_newlines) == text  # injective
    shown.encode("utf-8")  # lone surrogates too: it can always be written


def test_visible_uses_control_pictures() -> None:
    assert visible(COMMAND) == "echo DANGEROUS > owned.txt␍␛[2Kls -la"
    assert visible("a\tb\x08\n\x7f\x00") == "a␉b␈␊␡␀"
    assert visible("a\nb", keep_newlines=True) == "a\nb"
    assert visible("\x9b \u202e \u241b") == "⟪U+009B⟫ ⟪U+202E⟫ ⟪U+241B⟫"
    assert visible("ls -la") == "ls -la"


def test_plain_removes_whole_sequences() -> None:
    assert plain(HOSTILE) == "before click after"
    assert plain("one\r\ntwo\rthree") == "one\ntwo\nthree"
    assert plain("tab\tand\nline") == "tab\tand\nline"
    # a string sequence without its end loses its introducer only; its text is harmless
    assert plain("a\x1b]0;title b") == "a0;title b"


@settings(max_examples=200, deadline=None)
@given(HOSTILE_TEXT)
def test_json_safe_keeps_the_value_and_escapes_every_control(text: str) -> None:
    line = json_safe(json.dumps({"text": text}, ensure_ascii=False))
    assert unsafe(line, allowed="") == []
    assert json.loads(line) == {"text": text}


def test_plain_fields_cleans_an_event_and_copies_only_when_needed() -> None:
    from soothe.engine.events import StepToken, ToolCalled

    calm = StepToken(text="hello", goal_id="G1", step_id="S-01")
    assert plain_fields(calm) is calm
    call = ToolCalled(tool="run_shell", call_id="c", args={"command": COMMAND, "n": [TITLE]})
    clean = plain_fields(call)
    assert clean.args == {"command": "echo DANGEROUS > owned.txt\nls -la", "n": [""]}
    assert call.args["command"] == COMMAND  # the event itself is not changed


# --- soothe as a subprocess ---------------------------------------------------------------


def run(env: Env, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "soothe", *args],
        cwd=env.workspace,
        env=env.environ(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def ask(env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    """``soothe -p`` with the model, server, storage and workspace options."""
    return run(env, *args, *env.base_args())


def test_p_prints_a_hostile_answer_without_its_sequences(brain: Brain, env: Env) -> None:
    brain.add("Classification", {"label": "quiz", "answer": HOSTILE, "reason": "r"})

    result = ask(env, "-p", "Say something")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "before click after\n"
    assert unsafe(result.stdout + result.stderr) == []


def test_json_keeps_the_answer_exactly_and_escaped(brain: Brain, env: Env) -> None:
    brain.add("Classification", {"label": "quiz", "answer": HOSTILE, "reason": "r"})

    result = ask(env, "-p", "Say something", "--json")

    assert result.returncode == 0, result.stderr
    assert unsafe(result.stdout, allowed="\n") == [], result.stdout
    assert "\\u001b]0;PWNED-TITLE\\u0007" in result.stdout
    assert "\\u009b2J\\u202eafter" in result.stdout
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["type"] == "answer.final" and events[-1]["text"] == HOSTILE


def test_threads_and_threads_show_print_hostile_titles_and_answers_plain(
    brain: Brain, env: Env
) -> None:
    brain.add("Classification", {"label": "quiz", "answer": HOSTILE, "reason": "r"})
    request = f"Say {TITLE}hello{CLEAR}"
    assert ask(env, "-p", request).returncode == 0
    data = ["--data-dir", str(env.data_dir)]

    listed = run(env, "threads", *data)
    assert listed.returncode == 0, listed.stderr
    assert unsafe(listed.stdout) == [], listed.stdout
    (row,) = listed.stdout.splitlines()
    thread_id = row.split()[0]
    assert row.endswith("Say hello")

    shown = run(env, "threads", "show", thread_id, *data)
    assert shown.returncode == 0, shown.stderr
    assert unsafe(shown.stdout) == [], shown.stdout
    assert "# Say hello" in shown.stdout and "before click after" in shown.stdout

    target = env.workspace / "thread.md"
    exported = run(env, "threads", "export", thread_id, "-o", str(target), *data)
    assert exported.returncode == 0, exported.stderr
    assert unsafe(target.read_text(encoding="utf-8")) == []


def _answer_at_terminal(
    env: Env, reply: str, *args: str, asked: bytes = b"[y/N/a=always]"
) -> tuple[int, str, str]:
    """``soothe ARGS`` with stdin and stderr a terminal (a pty); ``reply`` is typed once
    ``asked`` is on the screen. Returns (exit code, stdout, the terminal)."""
    with soothe_process(env, *args, tty=True, stdin_tty=True) as term:
        deadline = time.monotonic() + 30
        while asked not in term.screen:
            assert term.proc.poll() is None, term.screen.decode()
            assert time.monotonic() < deadline, term.screen.decode()
            time.sleep(0.05)
        os.write(term.master, reply.encode())
        out, terminal = term.finish(timeout=30)
    return term.proc.returncode, out, terminal


def test_the_approval_question_shows_the_whole_command_with_its_controls(
    brain: Brain, env: Env
) -> None:
    """The measured attack: CR and erase-line made the question read ``ls -la``."""
    brain.add("Classification", {"label": "simple", "reason": "r"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": f"List {TITLE}it"}]})
    brain.step("S-01", FakeReply(tool_calls=[{"name": "run_shell", "args": {"command": COMMAND}}]))
    brain.step("S-01", "Not allowed, so nothing was listed.")
    brain.add("StatusAssessment", DONE)

    code, _out, terminal = _answer_at_terminal(env, "n\n", "-p", "List the files")

    assert code in (0, 1), terminal
    (question,) = [line for line in terminal.splitlines() if line.startswith("? allow")]
    assert question == (
        "? allow run_shell(command=echo DANGEROUS > owned.txt␍␛[2Kls -la, timeout=30) "
        "[y/N/a=always] n"
    )
    # the pty echoes the typed "n"; nothing else the program wrote holds a control
    assert unsafe(terminal) == [], terminal
    assert "▸ S-01 List it" in terminal.splitlines()
    assert not (env.workspace / "owned.txt").exists()


def test_a_clarification_question_shows_its_controls(brain: Brain, env: Env) -> None:
    brain.add("Classification", {"label": "complex"})
    question = f"Which file?\r{CLEAR}Say yes to delete everything"
    ask_step = {"id": "S-01", "kind": "ask_user", "description": "Ask", "questions": [question]}
    write = {"id": "S-02", "description": "Answer", "dependencies": ["S-01"]}
    brain.add("PlanGeneration", {"steps": [ask_step, write]})
    brain.step("S-02", "Noted.")
    brain.add("StatusAssessment", DONE)

    code, _out, terminal = _answer_at_terminal(
        env, "notes.txt\n", "-p", "Pick a file", "--clarify", "ask", asked=b"\n> "
    )

    assert code == 0, terminal
    assert "? Which file?␍␛[2JSay yes to delete everything" in terminal.splitlines()
    assert unsafe(terminal) == [], terminal


def test_doctor_prints_a_hostile_server_plain(env: Env) -> None:
    server = FakeOllamaServer(
        models=["llama3.2", f"evil{CLIPBOARD}:latest"],
        version=f"0.6.3{TITLE}",
        responder=lambda body: f"ok {CLEAR}",  # doctor's chat call
    )
    with server:
        result = run(env, "doctor", *env.base_args(url=server.url)[:8])
    assert "server" in result.stdout and "0.6.3" in result.stdout, result.stdout
    assert unsafe(result.stdout + result.stderr) == [], result.stdout


def test_skills_lists_a_hostile_skill_plain(env: Env) -> None:
    skill = env.workspace / ".soothe" / "skills" / "review"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"# Review {TITLE}code{CLEAR}\nbody\n")

    result = run(env, "skills", "--workspace", str(env.workspace))

    assert result.returncode == 0, result.stderr
    assert result.stdout.split(None, 1)[1].startswith("Review code  (")
    assert unsafe(result.stdout) == []


def configure_hostile_mcp_server(env: Env, tmp_path: Path) -> None:
    """The user's config names an MCP server that writes controls to its stderr
    (``cannot start`` TITLE CLEAR ``now``) and exits 3."""
    server = tmp_path / "hostile_server.py"
    server.write_text(
        f"import sys\nsys.stderr.write({('cannot start ' + TITLE + CLEAR + 'now')!r})\n"
        "sys.exit(3)\n"
    )
    config = env.home / "xdg-config" / "soothe" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[mcp.servers.bad]\ncommand = "{sys.executable}"\nargs = ["{server}"]\n')


def test_mcp_prints_a_hostile_server_error_plain(env: Env, tmp_path: Path) -> None:
    configure_hostile_mcp_server(env, tmp_path)

    result = run(env, "mcp")

    assert result.returncode == 1
    assert "cannot start now" in result.stdout, result.stdout
    assert unsafe(result.stdout + result.stderr) == [], result.stdout


@pytest.mark.parametrize("debug", [False, True])
def test_a_hostile_server_that_fails_is_reported_once_and_plain(
    env: Env, tmp_path: Path, debug: bool
) -> None:
    """An MCP server that fails to start is reported on stderr by `-p`, quoting its
    stderr: plain, and once (it was logged through the log's last resort as well, raw
    once and then twice; the last resort's own plainness: tests/runner/test_cli_polish)."""
    configure_hostile_mcp_server(env, tmp_path)

    extra = ["--debug"] if debug else []
    result = run(env, "-p", "List the files", "--task", "--provider", "demo", *extra)

    assert result.returncode == 0, result.stderr
    assert "cannot start" in result.stderr
    assert result.stderr.count("cannot start") == 1, result.stderr
    assert unsafe(result.stderr) == [], result.stderr
