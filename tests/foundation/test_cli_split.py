"""Common options may come before a subcommand; -p's value is never a command."""

from __future__ import annotations

import pytest

from soothe.cli import split_command


@pytest.mark.parametrize(
    ("argv", "command", "rest"),
    [
        (["threads", "show", "X"], "threads", ["show", "X"]),
        (["--data-dir", "D", "threads"], "threads", ["--data-dir", "D"]),
        (["--config=F", "--debug", "config", "show"], "config", ["--config=F", "--debug", "show"]),
        (["--provider", "demo", "doctor"], "doctor", ["--provider", "demo"]),
        (["-p", "threads"], None, ["-p", "threads"]),
        (["--yes", "threads"], "threads", ["--yes"]),  # refused there, with its reason
        (["--workspace", "W", "worker"], "worker", ["--workspace", "W"]),
        (
            ["--json", "--clarify=auto", "goals", "list"],
            "goals",
            ["--json", "--clarify=auto", "list"],
        ),
        ([], None, []),
    ],
)
def test_split_command(argv: list[str], command: str | None, rest: list[str]) -> None:
    assert split_command(argv) == (command, rest)
