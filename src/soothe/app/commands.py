"""The slash commands typed in the prompt: ONE table drives them all.

``COMMANDS`` is the registry: parsing and its usage messages, tab completion (the command
words and their argument sources), the F1 help rows, the command palette's actions and
the dispatch to the app's handler methods all read it. Adding a command is one row here
and, if it is new behaviour, one method on the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Passes = Literal["nothing", "arg", "raw"]
"""What the handler is called with: no argument, the text after the word, or all of it."""
Completion = Literal["themes", "models"]
"""Where the argument's tab completions come from (the app supplies the names)."""


@dataclass(frozen=True)
class Command:
    name: str
    """What ``parse`` returns as ``SlashCommand.name`` (``goal`` for ``/goal TEXT``)."""
    summary: str
    """The F1 help line."""
    handler: str
    """The app method that carries it out."""
    passes: Passes = "nothing"
    usage: str = ""
    """Set when an argument is required: the one-line usage shown when it is missing."""
    completes: Completion | None = None
    palette: str = ""
    """The command palette's label (commands without an argument only)."""
    palette_help: str = ""
    prefix: bool = False
    """Typed as ``/name:WHAT args`` (``/skill:NAME``): WHAT is required."""

    @property
    def word(self) -> str:
        """What the user types and tab completes: ``/goal`` or ``/skill:``."""
        return f"/{self.name}:" if self.prefix else f"/{self.name}"


COMMANDS: tuple[Command, ...] = (
    Command(
        "goal",
        "add a goal: /goal TEXT",
        "goal_command",
        "arg",
        usage='/goal TEXT [--done-when "…"] [--budget calls=N,tokens=N,time=30m]',
    ),
    Command(
        "autonomous",
        "run a request as an autonomous goal",
        "run_autonomous",
        "arg",
        usage="/autonomous TEXT",
    ),
    Command(
        "run",
        "run the ready goals",
        "action_run_goals",
        palette="Run ready goals",
        palette_help="the autonomous scheduler",
    ),
    Command("model", "switch model: /model NAME", "switch_model", "arg", completes="models"),
    Command(
        "theme",
        "switch theme: /theme NAME",
        "switch_theme",
        "arg",
        usage="/theme NAME",
        completes="themes",
    ),
    Command(
        "threads",
        "open the threads screen",
        "action_threads",
        palette="Threads",
        palette_help="list, open, delete, export",
    ),
    Command(
        "new",
        "start a new thread",
        "start_new_thread",
        palette="New thread",
        palette_help="start fresh",
    ),
    Command(
        "export",
        "export this thread to Markdown",
        "export_current",
        palette="Export thread to Markdown",
        palette_help="writes a .md file",
    ),
    Command(
        "demo",
        "use the demo model (no server needed)",
        "use_demo",
        palette="Use the demo model",
        palette_help="no model server needed",
    ),
    Command(
        "help", "keys and commands", "action_help", palette="Help", palette_help="keys and commands"
    ),
    Command(
        "task",
        "run as a task (never a quiz answer): /task TEXT",
        "start_run",
        "raw",
        usage="/task TEXT",
    ),
    Command("skill", "run a skill: /skill:NAME args", "start_run", "raw", prefix=True),
    Command(
        "undo",
        "undo the files the last run changed (asks first)",
        "undo_last_run",
        palette="Undo the last run's file changes",
        palette_help="lists the files, asks first",
    ),
    Command(
        "steer",
        "a note to the running goal, read at its next assessment: /steer TEXT",
        "steer",
        "arg",
        usage="/steer TEXT",
    ),
    Command("quit", "quit", "exit"),
)

BY_NAME: dict[str, Command] = {command.name: command for command in COMMANDS}


RUN_HANDLERS = frozenset({"start_run", "run_autonomous", "action_run_goals"})
"""The handlers that start a run: typed during one, such a command waits in the queue."""


def starts_a_run(text: str) -> bool:
    """Whether enter on ``text`` starts a run (a request, /task, /skill:, /autonomous,
    /run), which during a run is queued; other commands are carried out at once."""
    command = parse(text)
    if command is None:
        return True
    known = command.command
    return known is not None and known.handler in RUN_HANDLERS and command.problem() is None


def words() -> list[str]:
    """Every command word, in help order (what tab completes)."""
    return [command.word for command in COMMANDS]


@dataclass(frozen=True)
class SlashCommand:
    name: str
    arg: str
    raw: str

    @property
    def command(self) -> Command | None:
        return BY_NAME.get(self.name)

    def problem(self) -> str | None:
        """A one-line reason this command cannot run as typed, or None."""
        command = self.command
        if command is None:
            return f"unknown command /{self.name} — /help lists the commands"
        if command.usage and not self.arg:
            return f"usage: {command.usage}"
        if command.prefix and not self.raw.partition(" ")[0].removeprefix(command.word):
            return f"usage: {command.word}NAME args"
        return None

    def arguments(self) -> tuple[str, ...]:
        """What the command's handler is called with."""
        command = self.command
        if command is None or command.passes == "nothing":
            return ()
        return (self.raw,) if command.passes == "raw" else (self.arg,)


def parse(text: str) -> SlashCommand | None:
    """``/name arg`` -> SlashCommand; plain text (or ``//text``, sent as ``/text``) -> None."""
    text = text.strip()
    if not text.startswith("/") or text.startswith("//"):
        return None
    head, _, arg = text[1:].partition(" ")
    for command in COMMANDS:
        if command.prefix and head.startswith(f"{command.name}:"):
            return SlashCommand(command.name, arg.strip(), text)
    return SlashCommand(head.lower(), arg.strip(), text)


def unescape(text: str) -> str:
    """``//text`` sends ``/text`` as a plain request."""
    text = text.strip()
    return text[1:] if text.startswith("//") else text
