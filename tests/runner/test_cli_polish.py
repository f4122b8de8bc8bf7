"""The ``soothe`` command as a new user meets it (issue 32 item 10):

- ``soothe --help`` lists every command with one line each (before: an epilog naming
  threads, doctor, skills, config and undo; no goals, mcp, worker).
- ``soothe frob`` says ``error: unknown command 'frob'``, lists the commands and how to
  send the word as a request, exit 2 (before: argparse's "unrecognized arguments").
- ``soothe "REQUEST"`` opens the app and sends the request; a lone word shaped like a
  command name is a command, ``soothe -- WORD`` sends it.
- A ``-p`` that fails before any goal (an unknown skill, a server that never answered)
  leaves no thread for ``soothe threads`` to list (before: an empty thread each time).
- A broken MCP server is one line on stderr (before: the log's warning and the ``!``
  line, twice) - tests/security/test_terminal_sanitise.py checks it in a subprocess.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from soothe.cli import COMMANDS, SUBCOMMANDS, _LastResort, main
from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, Result
from tests.runner.test_app_process import Terminal


def test_help_lists_every_command_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    listed = out[out.index("\ncommands:\n") :].splitlines()[2 : 2 + len(SUBCOMMANDS)]
    assert [line.split()[0] for line in listed] == list(SUBCOMMANDS)
    for name, line in zip(SUBCOMMANDS, listed, strict=True):
        assert line == f"  {name:9} {COMMANDS[name]}"
    assert {"goals", "mcp", "worker", "threads", "undo", "doctor", "config"} <= set(COMMANDS)
    assert 'soothe [OPTIONS] ["REQUEST"]' in out and "soothe -- WORD" in out


@pytest.mark.parametrize(
    ("argv", "first", "hint"),
    [
        (
            ["frob"],
            "error: unknown command 'frob'",
            'to send it as a request: soothe -- frob (the app) or soothe -p "frob"',
        ),
        (
            ["--provider", "demo", "thread"],
            "error: unknown command 'thread' (did you mean 'threads'?)",
            'to send it as a request: soothe -- thread (the app) or soothe -p "thread"',
        ),
        (
            ["fix", "the", "bug"],
            "error: unknown command 'fix'",
            'to send it as a request, quote it: soothe "fix the bug" (or soothe -p "fix the bug")',
        ),
    ],
)
def test_an_unknown_command_says_so_and_lists_the_commands(
    argv: list[str], first: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        first,
        "commands: threads, goals, worker, undo, mcp, skills, doctor, config, acp "
        "(soothe COMMAND --help)",
        hint,
    ]


def test_p_with_a_second_request_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-p", "list", "files"]) == 2
    assert capsys.readouterr().err == (
        "error: -p takes the request; 'files' is extra (quote the request)\n"
    )


@pytest.mark.parametrize(
    ("argv", "sent"),
    [
        (["why is the sky blue?"], "why is the sky blue?"),
        (["--provider", "demo", "Summarise README.md"], "Summarise README.md"),
        (["README.md?"], "README.md?"),  # not shaped like a command name
        (["--", "frob"], "frob"),
        (["--", "fix", "the", "bug"], "fix the bug"),
        ([], None),
    ],
)
def test_a_request_argument_opens_the_app_with_it(
    argv: list[str], sent: str | None, env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    import soothe.app.tui

    opened: list[tuple[Any, ...]] = []

    def run_tui(settings: Any, thread_id: str | None = None, request: str | None = None) -> int:
        opened.append((thread_id, request))
        return 0

    monkeypatch.setattr(soothe.app.tui, "run_tui", run_tui)
    assert main([*argv, "--data-dir", str(env.data_dir)]) == 0
    assert opened == [(None, sent)]


def test_soothe_text_in_a_terminal_sends_it_as_the_first_request(
    brain: Brain, fake: Any, env: Env, stored: Any
) -> None:
    brain.add(
        "Classification", {"label": "quiz", "answer": "Two and two make four.", "reason": "r"}
    )
    term = Terminal(env, "What is two and two?", *env.base_args())
    try:
        term.wait_for("Two and two make four.")
        deadline = time.monotonic() + 30
        while "idle" not in term.text().split("Two and two make four.", 1)[1]:
            assert time.monotonic() < deadline, term.text()[-2000:]  # the run ends
            time.sleep(0.1)
        term.type(b"\x11")  # ctrl+q
        assert term.wait_exit() == 0, term.text()[-2000:]
    finally:
        term.close()
    (thread,) = stored().threads
    assert thread.title == "What is two and two?"
    assert brain.count("Classification") == 1


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ["-p", "/skill:nope tidy up"],
            "error: unknown skill 'nope'; known skills: none (add .soothe/skills/NAME/SKILL.md)",
        ),
        (
            ["-p", "hello", "--base-url", "http://127.0.0.1:9"],
            "error: cannot reach Ollama at http://127.0.0.1:9 (start it with: ollama serve)",
        ),
    ],
    ids=["unknown-skill", "dead-server"],
)
def test_a_failed_request_leaves_no_empty_thread(
    soothe: Any, brain: Brain, env: Env, argv: list[str], error: str
) -> None:
    result: Result = soothe(*argv)
    assert result.code == 1
    assert result.one_error() == error
    listed: Result = soothe("threads")
    assert (listed.code, listed.out) == (0, "no threads yet\n"), listed.err

    # a request that worked keeps its thread, as a failed one with a goal would
    brain.add("Classification", {"label": "quiz", "answer": "Hello.", "reason": "r"})
    assert soothe("-p", "Say hello").code == 0
    (row,) = soothe("threads").out.splitlines()
    assert row.endswith("Say hello")


def test_the_last_resort_log_line_is_plain(capsys: pytest.CaptureFixture[str]) -> None:
    """Logged warnings reach stderr through ``_LastResort``: a quoted server's control
    sequences are removed; a caught exception's record only with --debug."""
    record = logging.LogRecord(
        "soothe", logging.WARNING, __file__, 1, "server said %s", ("\x1b]0;T\x07hi\x1b[2J",), None
    )
    handler = _LastResort()
    handler.handle(record)
    assert capsys.readouterr().err == "server said hi\n"
    try:
        raise ValueError("x")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    handler.handle(record)
    assert capsys.readouterr().err == ""
    _LastResort(debug=True).handle(record)
    assert capsys.readouterr().err.startswith("server said hi\n")
