"""The ``soothe`` command. Imports nothing heavy until a command needs it."""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import sys
from typing import Any

from soothe import __version__
from soothe.engine.sanitize import one_line

COMMANDS = {
    "threads": "list the threads; show, export or delete one",
    "goals": "the goal queue: list, add, show, cancel, retry, suspend, resume, priority, "
    "(un)depend, remove",
    "worker": "run the queued goals until none is ready (--idle-exit, --max-goals, --workspace)",
    "undo": "undo the file changes of a thread or a step (--list shows them)",
    "mcp": "start the configured MCP servers once: their state and tools",
    "skills": "list the skills a request can name with /skill:NAME",
    "doctor": "can this config work? the server, the model, one real chat call",
    "config": "show the settings in effect and where they come from",
    "acp": "serve the Agent Client Protocol on stdio (Zed, JetBrains, toad ...)",
}
"""Every ``soothe COMMAND``, with the one line ``soothe --help`` gives it."""

SUBCOMMANDS = tuple(COMMANDS)

_USAGE = """soothe [OPTIONS] ["REQUEST"]        the app (a REQUEST is sent as its first)
       soothe -p REQUEST [OPTIONS]        one request headless (-p - reads stdin)
       soothe COMMAND [OPTIONS]           (soothe COMMAND --help)"""

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
"""What a command name looks like: a lone argument of this shape is read as a command,
never as a request (``soothe frob`` is an unknown command; ``soothe -- frob`` sends it)."""


def _epilog() -> str:
    lines = ["commands:"]
    lines += [f"  {name:9} {line}" for name, line in COMMANDS.items()]
    lines += [
        "",
        "A request of one word is read as a command name: send it with",
        '`soothe -- WORD` (the app) or `soothe -p "WORD"` (headless).',
    ]
    return "\n".join(lines)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="config file (default: XDG config)")
    parser.add_argument("--data-dir", metavar="DIR", help="where threads and goals are stored")
    parser.add_argument("--provider", choices=["ollama", "openai", "demo"])
    parser.add_argument("--model", metavar="NAME", help="model name")
    parser.add_argument("--base-url", metavar="URL", help="model server URL")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="soothe",
        usage=_USAGE,
        description="A terminal workbench for goal-driven LLM agents on local models.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "request",
        nargs="*",
        metavar="REQUEST",
        help="open the app and send this as its first request (quote it: one argument)",
    )
    parser.add_argument("--version", action="version", version=f"soothe {__version__}")
    parser.add_argument(
        "-p", "--prompt", metavar="TEXT", help="run one request headless (-p - reads it from stdin)"
    )
    parser.add_argument("--autonomous", action="store_true", help="treat the request as a goal")
    parser.add_argument(
        "--task", action="store_true", help="force the task path (plan and tools, no quiz answer)"
    )
    parser.add_argument(
        "--done-when",
        action="append",
        default=[],
        metavar="CRITERION",
        help="with -p: the goal is done only when this holds (repeatable; checked on evidence)",
    )
    parser.add_argument("--thread", metavar="ID", help="continue a thread")
    parser.add_argument("--workspace", metavar="DIR", help="tool root (default: cwd)")
    parser.add_argument("--max-iterations", type=int, metavar="N")
    parser.add_argument("--yes", action="store_true", help="approve tool calls needing approval")
    parser.add_argument("--clarify", choices=["ask", "auto", "fail"], help="ask_user policy")
    parser.add_argument("--json", action="store_true", help="NDJSON events on stdout")
    _common(parser)
    return parser


GOAL_VERBS = {
    "list": "every goal: id, status, priority, text (--json: one object per line)",
    "add": "add TEXT (--after ID[,ID], --priority N, --done-when, --budget, --workspace DIR)",
    "show": "show ID: status, steps, evidence, criteria, budget",
    "cancel": "cancel ID (and its unfinished sub-goals); a worker running it stops",
    "retry": "retry ID: a failed goal back to pending",
    "suspend": "suspend ID: a pending or running goal, until resumed",
    "resume": "resume ID: a paused or cancelled goal back to pending (--budget raises a cap)",
    "priority": "priority ID N: set its priority (0-100)",
    "depend": "depend ID --on ID[,ID]: ID waits for those goals (a cycle is refused)",
    "undepend": "undepend ID --on ID[,ID]: drop those dependencies",
    "remove": "remove ID: delete a goal no other goal depends on",
}
"""Every ``soothe goals VERB``, with the one line ``soothe goals --help`` gives it."""

_GOAL_USAGE = "soothe goals VERB [ID] [OPTIONS]   (verbs below; every verb takes --json)"

COMMON_FLAGS = (
    "--config",
    "--data-dir",
    "--provider",
    "--model",
    "--base-url",
    "--workspace",
    "--json",
    "--yes",
    "--clarify",
    "--max-iterations",
    "--debug",
)
"""The flags ``soothe -p`` takes that a command may take too; each command takes those it
can honour and refuses the others with a reason (``FLAG_REFUSALS``)."""

_NO_MODEL = "it calls no model"
_RUNS_NOTHING = "it runs no request"
FLAG_REFUSALS: dict[str, dict[str, str]] = {
    "threads": {
        "--workspace": "threads are not tied to a folder",
        **dict.fromkeys(("--provider", "--model", "--base-url"), _NO_MODEL),
        **dict.fromkeys(("--yes", "--clarify", "--max-iterations"), _RUNS_NOTHING),
    },
    "goals": {
        **dict.fromkeys(
            ("--provider", "--model", "--base-url"), _NO_MODEL + " (soothe worker does)"
        ),
        **dict.fromkeys(
            ("--yes", "--clarify", "--max-iterations"), "it runs no goal (soothe worker does)"
        ),
    },
    "worker": {},
    "undo": {
        **dict.fromkeys(("--provider", "--model", "--base-url"), _NO_MODEL),
        **dict.fromkeys(("--yes", "--clarify", "--max-iterations"), _RUNS_NOTHING),
        "--json": "it prints one line per file",
    },
    "mcp": {
        "--data-dir": "MCP servers keep nothing in the data dir",
        "--workspace": "MCP servers start in the cwd their config gives",
        **dict.fromkeys(("--provider", "--model", "--base-url"), _NO_MODEL),
        **dict.fromkeys(("--yes", "--clarify", "--max-iterations"), _RUNS_NOTHING),
        "--json": "it prints each server's state and tools as text",
    },
    "skills": {
        "--data-dir": "skills are read from the workspace and the config dir",
        **dict.fromkeys(("--provider", "--model", "--base-url"), _NO_MODEL),
        **dict.fromkeys(("--yes", "--clarify", "--max-iterations"), _RUNS_NOTHING),
    },
    "doctor": {
        "--workspace": "it checks the model server and the data dir, not a folder",
        **dict.fromkeys(("--yes", "--clarify", "--max-iterations"), _RUNS_NOTHING),
        "--json": "it prints a report for a person",
    },
    "config": {},
    "acp": {
        "--workspace": "each session's workspace is the cwd its client gives",
        "--json": "it speaks JSON-RPC on stdout already",
    },
}
"""For each command, the common flags it cannot honour and why (the others it honours:
``config show`` shows every one of them in effect)."""


def flag_refusal(command: str, flag: str) -> str | None:
    """The one line refusing ``flag`` for ``soothe command``, or None if it takes it."""
    why = FLAG_REFUSALS.get(command, {}).get(flag)
    return f"soothe {command} does not take {flag}: {why}" if why else None


def _given_flags(args: argparse.Namespace) -> list[str]:
    """The common flags set on the command line (in ``COMMON_FLAGS`` order)."""
    given = []
    for flag in COMMON_FLAGS:
        value = getattr(args, flag[2:].replace("-", "_"), None)
        if value not in (None, False):
            given.append(flag)
    return given


def _goal_epilog() -> str:
    lines = ["verbs:"]
    lines += [f"  {verb:9} {line}" for verb, line in GOAL_VERBS.items()]
    lines += [
        "",
        "An unknown goal, or a move its state does not allow, is one error: line (exit 1).",
        "On SQLite a change waits for no one: while the app or a worker holds the data dir",
        "it says so; on PostgreSQL running workers see the change (a cancel stops one).",
    ]
    return "\n".join(lines)


def build_sub_parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"soothe {command}", description=COMMANDS[command])
    _common(parser)
    if command == "threads":
        parser.add_argument(
            "action", nargs="?", default="list", choices=["list", "show", "export", "delete"]
        )
        parser.add_argument("thread_id", nargs="?")
        parser.add_argument("--output", "-o", metavar="FILE", help="export to this file")
    elif command == "goals":
        parser.usage = _GOAL_USAGE
        parser.epilog = _goal_epilog()
        parser.formatter_class = argparse.RawDescriptionHelpFormatter
        parser.add_argument(
            "action",
            nargs="?",
            default="list",
            metavar="VERB",
            help="one of the verbs below (default: list)",
        )
        parser.add_argument("words", nargs="*", metavar="ID|TEXT", help="the goal id (add: text)")
        parser.add_argument("--after", metavar="ID[,ID]", help="add: goals this one waits for")
        parser.add_argument("--priority", type=int, metavar="N", help="add: 0-100 (default 50)")
        parser.add_argument("--thread", metavar="ID", help="add: default the 'goal queue' thread")
        parser.add_argument(
            "--done-when",
            action="append",
            default=[],
            metavar="CRITERION",
            help="add: the goal is done only when this holds (repeatable)",
        )
        parser.add_argument(
            "--budget",
            metavar="CAPS",
            help="add/resume: calls=40,tokens=200k,time=30m (resume: raise a cap it reached)",
        )
        parser.add_argument("--on", metavar="ID[,ID]", help="depend/undepend: the other goals")
        parser.add_argument("--reason", metavar="TEXT", help="cancel/suspend: why (recorded)")
    elif command == "worker":
        parser.description = (
            "Claim ready goals and run each through the loop. On SQLite the data-dir lock "
            "allows one worker per data dir; on PostgreSQL (storage.backend) any number."
        )
        parser.add_argument("--idle-exit", type=float, default=5.0, metavar="SECONDS")
        parser.add_argument("--max-goals", type=int, metavar="N")
        parser.add_argument("--lease", type=float, default=30.0, metavar="SECONDS")
    elif command == "config":
        parser.add_argument("action", nargs="?", default="show", choices=["show"])
    elif command == "acp":
        parser.description = (
            "Speak the Agent Client Protocol on stdin/stdout for an editor or another "
            "front end; each session's cwd is its workspace. Logs go to stderr."
        )
    elif command == "undo":
        parser.add_argument(
            "--thread", metavar="ID", help="default: the last thread that changed files"
        )
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--all", action="store_true", help="every change of the thread")
        which.add_argument("--step", metavar="G1/S2", help="the changes of one step")
        which.add_argument("--list", action="store_true", help="show what can be undone")
        parser.add_argument("--force", action="store_true", help="restore files changed since")
    _run_flags(parser, command)
    return parser


_WORKSPACE_HELP = {
    "goals": "add: tie the goal to this folder (only a worker there runs it); list: its goals",
    "worker": "the tools' root for the goals it runs (default: cwd)",
    "undo": "only the changes to files in this folder (default: every file)",
    "skills": "the workspace whose .soothe/skills are listed (default: cwd)",
    "config": "tools.workspace",
}


def _run_flags(parser: argparse.ArgumentParser, command: str) -> None:
    """The common flags of ``soothe -p`` that ``_common`` does not add: parsed for every
    command (so a flag it cannot honour gets its one-line reason, not argparse's usage),
    with help only where the command honours them."""
    refused = FLAG_REFUSALS.get(command, {})

    def shown(flag: str, text: str) -> str:
        return argparse.SUPPRESS if flag in refused else text

    parser.add_argument(
        "--workspace", metavar="DIR", help=shown("--workspace", _WORKSPACE_HELP.get(command, ""))
    )
    parser.add_argument(
        "--json", action="store_true", help=shown("--json", "JSON on stdout (stable keys)")
    )
    parser.add_argument(
        "--yes", action="store_true", help=shown("--yes", "approve tool calls needing approval")
    )
    parser.add_argument(
        "--clarify", choices=["ask", "auto", "fail"], help=shown("--clarify", "ask_user policy")
    )
    parser.add_argument(
        "--max-iterations", type=int, metavar="N", help=shown("--max-iterations", "per goal")
    )
    for action in parser._actions:  # the model flags: help only where they are honoured
        if action.option_strings and action.option_strings[0] in refused:
            action.help = argparse.SUPPRESS


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, dict[str, Any]] = {}

    def put(section: str, key: str, value: Any) -> None:
        if value is not None:
            out.setdefault(section, {})[key] = value

    put("model", "provider", getattr(args, "provider", None))
    put("model", "name", getattr(args, "model", None))
    put("model", "base_url", getattr(args, "base_url", None))
    put("storage", "data_dir", getattr(args, "data_dir", None))
    put("tools", "workspace", getattr(args, "workspace", None))
    put("tools", "clarify", getattr(args, "clarify", None))
    put("loop", "max_iterations", getattr(args, "max_iterations", None))
    if getattr(args, "yes", False):
        put("tools", "approval", "auto")
    return out


def error(message: str, code: int = 1) -> int:
    # an exception's text can quote a file name, a server's reply or a model's words
    print(f"error: {one_line(message)}", file=sys.stderr)
    return code


# The common flags may come before the command: `soothe --data-dir D threads` must find
# `threads` as the command, not as the value of an option (a command that cannot honour
# one of them refuses it with its reason, wherever it stands).
_COMMON_VALUED = (
    "--config",
    "--data-dir",
    "--provider",
    "--model",
    "--base-url",
    "--workspace",
    "--clarify",
    "--max-iterations",
)
_COMMON_SWITCHES = ("--debug", "--json", "--yes")


def split_command(argv: list[str]) -> tuple[str | None, list[str]]:
    """(subcommand, the other arguments), allowing common options before the command."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in SUBCOMMANDS:
            return token, argv[:i] + argv[i + 1 :]
        if token in _COMMON_VALUED:
            i += 2
        elif token in _COMMON_SWITCHES or token.split("=", 1)[0] in _COMMON_VALUED:
            i += 1
        else:
            return None, argv
    return None, argv


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command, rest = split_command(argv)
    if command:
        args = build_sub_parser(command).parse_args(rest)
        for flag in _given_flags(args):
            if (refusal := flag_refusal(command, flag)) is not None:
                return error(refusal, 2)
    else:
        args = build_parser().parse_intermixed_args(argv)
        if (refused := _request_problem(args, argv)) is not None:
            return refused
    _setup_logging(args.debug)
    if command is None and args.prompt == "-":  # the request on stdin (any length)
        args.prompt = _read_request()
        if not args.prompt.strip():
            return error("-p -: stdin held no request; pipe the request in, or give -p TEXT", 2)
    if getattr(args, "workspace", None) and (why := _not_a_directory(args.workspace)):
        return error(f"--workspace {args.workspace}: {why}", 2)  # before any model call
    from soothe.engine.config_file import ConfigError, FrameConfig

    settings: Any
    try:
        if command is None and args.prompt is None and not args.thread:
            # the workbench: its first frame reads the file without pydantic; the full
            # settings are built (and a bad value reported, exit 2) right after it
            settings = FrameConfig.read(args.config, overrides_from(args))
        else:
            from soothe.engine.config import load_settings

            settings = load_settings(args.config, overrides_from(args))
    except ConfigError as exc:
        print(exc.cli_line(), file=sys.stderr)
        return 2
    workspace = getattr(getattr(settings, "tools", None), "workspace", None)
    if command in (None, "skills", "worker") and workspace and (why := _not_a_directory(workspace)):
        from soothe.engine.config import env_variable

        where = env_variable(("tools", "workspace")) or settings.config_file
        return error(f"config: {where}: tools.workspace: {workspace}: {why}", 2)
    try:
        return _dispatch(command, args, settings)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `soothe threads | head`: the reader left, nothing to say
        _silence_stdout()
        return 141
    except Exception as exc:
        if args.debug:
            raise
        if getattr(exc, "user_facing", False):  # our own one-line errors, already worded
            return error(str(exc))
        problem = _storage_problem(exc, settings)
        return error(problem or f"{type(exc).__name__}: {exc} (run with --debug for details)")


def _request_problem(args: argparse.Namespace, argv: list[str]) -> int | None:
    """``soothe "REQUEST"`` takes one argument, which becomes ``args.request`` (a str, or
    None); a lone word shaped like a command name (``soothe frob``), or several words
    unquoted, is an unknown command (exit 2, the commands listed) unless it follows
    ``--``; with -p no REQUEST is taken."""
    words: list[str] = args.request
    args.request = None
    if args.done_when and args.prompt is None:
        return error("--done-when goes with -p TEXT (in the app: /goal TEXT --done-when ...)", 2)
    if not words:
        return None
    if args.prompt is not None:
        extra = one_line(" ".join(words), 60)
        return error(f"-p takes the request; '{extra}' is extra (quote the request)", 2)
    explicit = "--" in argv
    if len(words) == 1 and (explicit or not _WORD.fullmatch(words[0])):
        args.request = words[0]
        return None
    if explicit:  # `soothe -- fix the bug`: after -- the words are the request
        args.request = " ".join(words)
        return None
    return unknown_command(words)


def unknown_command(words: list[str]) -> int:
    """``error: unknown command 'frob'``, the commands, and how to send the words as a
    request instead (exit 2)."""
    import difflib

    shown = one_line(words[0], 40)
    close = difflib.get_close_matches(words[0], SUBCOMMANDS, n=1)
    guess = f" (did you mean '{close[0]}'?)" if close else ""
    if len(words) > 1:
        text = one_line(" ".join(words), 60)
        hint = f'to send it as a request, quote it: soothe "{text}" (or soothe -p "{text}")'
    else:
        hint = f'to send it as a request: soothe -- {shown} (the app) or soothe -p "{shown}"'
    print(f"error: unknown command '{shown}'{guess}", file=sys.stderr)
    print(f"commands: {', '.join(SUBCOMMANDS)} (soothe COMMAND --help)", file=sys.stderr)
    print(hint, file=sys.stderr)
    return 2


def unknown_verb(verb: str) -> int:
    """``error: unknown goals verb 'frob'`` and the verbs (exit 2), not argparse's usage."""
    import difflib

    close = difflib.get_close_matches(verb, GOAL_VERBS, n=1)
    guess = f" (did you mean '{close[0]}'?)" if close else ""
    print(f"error: unknown goals verb '{one_line(verb, 40)}'{guess}", file=sys.stderr)
    print(f"verbs: {', '.join(GOAL_VERBS)} (soothe goals --help)", file=sys.stderr)
    return 2


def _read_request() -> str:
    """``-p -``: the whole of stdin, as UTF-8 (bytes that are not UTF-8 replaced)."""
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data


def _not_a_directory(value: Any) -> str | None:
    """Why ``value`` cannot be the workspace (the tools' root), or None."""
    from pathlib import Path

    path = Path(value).expanduser()
    if not path.exists():
        return "no such directory"
    if not path.is_dir():
        return "not a directory"
    return None


class _LastResort(logging.Handler):
    """Python's last-resort handler (``logging.lastResort``: records of warning and up
    on ``sys.stderr`` as it is then, the message alone, used only when no handler is
    configured), without the records of exceptions the engine caught and logged (a
    transcript write that failed on a full disk, a listener that raised) unless
    ``--debug``: the command's own ``error:`` line reports what matters. A log message
    can quote a server, a tool or an MCP server's stderr: it is printed plain."""

    def __init__(self, debug: bool = False) -> None:
        super().__init__(logging.WARNING)
        self.debug = debug

    def filter(self, record: logging.LogRecord) -> bool:
        return (self.debug or record.exc_info is None) and super().filter(record)

    def emit(self, record: logging.LogRecord) -> None:
        from soothe.engine.sanitize import plain

        try:
            sys.stderr.write(plain(self.format(record)) + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


def _setup_logging(debug: bool) -> None:
    """The log's last resort on stderr: plain text, tracebacks only with ``--debug``."""
    logging.lastResort = _LastResort(debug)


class ThreadNotFound(LookupError):
    """``--thread ID`` names no thread, or more than one: one line, already worded."""

    user_facing = True


def match_thread(prefix: str, thread_ids: list[str]) -> str:
    """The one thread id ``prefix`` starts (as ``soothe threads`` takes them, like git);
    ThreadNotFound saying which problem and where to find the ids otherwise."""
    if prefix in thread_ids:
        return prefix
    found = [t for t in thread_ids if t.startswith(prefix)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise ThreadNotFound(f"no thread '{prefix}' (list the threads with `soothe threads`)")
    shown = ", ".join(sorted(found)[:5]) + (" ..." if len(found) > 5 else "")
    raise ThreadNotFound(
        f"'{prefix}' is the start of {len(found)} threads ({shown}); "
        "give more of the id (see `soothe threads`)"
    )


def resolve_thread(settings: Any, prefix: str) -> str:
    """Open only the store (as ``soothe threads`` does) and match ``prefix``."""
    import asyncio

    from soothe.engine.session import Session

    async def ids() -> list[str]:
        session = Session(settings)
        await session.open_storage()
        try:
            return [t.id for t in await session.list_threads()]
        finally:
            await session.close()

    return match_thread(prefix.strip(), asyncio.run(ids()))


def _storage_problem(exc: Exception, settings: Any) -> str | None:
    """A database that cannot be used (e.g. `soothe threads` on a corrupt or foreign file)
    gets the message a run would give: which file, left untouched, what to do."""
    import sqlite3

    from soothe.engine.context.errors import StoreError
    from soothe.engine.storage_errors import storage_problem

    if isinstance(exc, StoreError | sqlite3.DatabaseError) and hasattr(settings, "storage"):
        return storage_problem(exc, settings.storage.db_path)
    return None


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _dispatch(command: str | None, args: argparse.Namespace, settings: Any) -> int:
    if command == "config":
        import json

        print(json.dumps(settings.masked(), indent=2, default=str))
        if settings.config_file:
            print(f"# from {settings.config_file}", file=sys.stderr)
        return 0
    if command == "acp":
        from soothe.frontends.acp import run_acp

        return run_acp(settings, args)
    if command == "mcp":
        from soothe.frontends.mcp_cli import run_mcp

        return run_mcp(settings)
    if command == "doctor":
        import io

        from soothe.engine.llm.doctor import run_doctor
        from soothe.engine.sanitize import plain

        # the report quotes the server: its model names, versions and errors
        report = io.StringIO()
        code = run_doctor(settings, out=report)
        sys.stdout.write(plain(report.getvalue()))
        return code
    if command == "goals":
        if args.action not in GOAL_VERBS:
            return unknown_verb(args.action)
        from soothe.frontends.goals_cli import run_goals

        return run_goals(settings, args)
    if command == "worker":
        from soothe.frontends.worker import run_worker

        return run_worker(settings, args.idle_exit, args.max_goals, args.lease, as_json=args.json)
    if command == "threads":
        from soothe.frontends.threads_cli import run_threads

        return run_threads(settings, args.action, args.thread_id, args.output, as_json=args.json)
    if command == "undo":
        from soothe.frontends.undo_cli import run_undo

        return run_undo(
            settings,
            thread=args.thread,
            all_runs=args.all,
            step=args.step,
            list_only=args.list,
            force=args.force,
            workspace=args.workspace,
        )
    if command == "skills":
        from soothe.engine.skills import list_skills

        skills = list_skills(settings)
        if args.json:
            import json

            for skill in skills:  # json.dumps escapes control characters (\u001b)
                row = {"name": skill.name, "summary": skill.summary, "path": str(skill.path)}
                print(json.dumps(row))
            return 0
        if not skills:
            print("no skills found (add .soothe/skills/NAME/SKILL.md)")
        for skill in skills:  # names and summaries are the workspace's files' words
            name, summary, path = (
                one_line(str(x)) for x in (skill.name, skill.summary, skill.path)
            )
            print(f"{name:20} {summary}  ({path})")
        return 0
    if args.thread and args.prompt is None:
        args.thread = resolve_thread(settings, args.thread)
    elif args.thread:  # headless reports a missing thread itself (as a run.failed event)
        with contextlib.suppress(ThreadNotFound):
            args.thread = resolve_thread(settings, args.thread)
    if args.prompt is not None:
        from soothe.frontends.headless import run_headless

        return run_headless(settings, args)
    from soothe.app.tui import run_tui

    return run_tui(settings, thread_id=args.thread or None, request=args.request)
