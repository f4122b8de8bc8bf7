"""Config and flags that are wrong: one ``error:`` line naming where the value came from
(the file, the ``SOOTHE_*`` variable, the flag), exit 2, before any model call. And
``soothe -p -``: the request from stdin, however long.

Before: a config file that is not UTF-8 gave a traceback and exit 1; a bad
``SOOTHE_MODEL__*`` variable was blamed on a config file that does not exist (and a
``SOOTHE_MODEL`` that is not JSON gave a traceback); ``--workspace`` naming a missing
directory or a file was accepted (write_file then created the missing path);
``SOOTHE_SANDBOX=bogus`` was ignored; ``model = 5`` passed under ``--provider demo``; a
request longer than the argument limit could not be given."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env, Result
from tests.fakes.ollama_server import FakeOllamaServer

QUIZ = {"label": "quiz", "answer": "4", "reason": "math"}
RUN = ("-p", "what is 2+2?")


def run(
    env: Env,
    *args: str,
    environ: dict[str, str] | None = None,
    stdin: bytes | None = None,
    base: bool = True,
) -> Result:
    """``soothe ARGS`` as a process in the isolated env; a run gets the model, storage and
    workspace options not in ARGS, a command the data dir."""
    argv = list(args)
    if base and argv and argv[0] in ("threads", "config", "doctor", "goals"):
        argv += ["--data-dir", str(env.data_dir)]
    elif base:
        argv += env.base_args(argv)
    proc = subprocess.run(
        [sys.executable, "-m", "soothe", *argv],
        cwd=env.workspace,
        env=env.environ(**(environ or {})),
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def refused(r: Result) -> str:
    """The one line of a run refused for its configuration (exit 2, nothing on stdout)."""
    assert (r.code, r.out) == (2, ""), r
    return r.one_error()


@pytest.mark.parametrize(
    "args",
    [RUN, ("threads",), ("config", "show"), ()],
    ids=["run", "threads", "config-show", "app"],
)
def test_a_config_file_that_is_not_utf8_is_one_line_and_exit_2(
    brain: Brain, fake: FakeOllamaServer, env: Env, args: tuple[str, ...]
) -> None:
    config = env.home / "latin1.toml"
    config.write_bytes('[model]\nname = "café"\n'.encode("latin-1"))

    r = run(env, *args, "--config", str(config), base=bool(args))

    line = refused(r)
    assert line == (
        f"error: config: {config}: not UTF-8 text (byte 0xe9 at offset 19); save it as UTF-8"
    )
    assert brain.calls == []


@pytest.mark.parametrize(
    ("variable", "value", "key", "problem"),
    [
        ("SOOTHE_MODEL__COLOUR", "blue", "model.colour", "unknown key"),
        ("SOOTHE_MODEL__TIMEOUT", "soon", "model.timeout", "valid number"),
        ("SOOTHE_MODEL", '{"colour": "blue"}', "model.colour", "unknown key"),
        ("SOOTHE_MODEL", "{not json", "model", "not valid JSON"),
        ("SOOTHE_MODEL__PROVIDER", "bogus", "model.provider", "'ollama', 'openai' or 'demo'"),
    ],
    ids=["unknown-key", "wrong-type", "json-unknown-key", "bad-json", "bad-provider"],
)
def test_a_bad_environment_variable_is_named_not_a_config_file(
    brain: Brain,
    fake: FakeOllamaServer,
    env: Env,
    variable: str,
    value: str,
    key: str,
    problem: str,
) -> None:
    for args in (RUN, ("config", "show")):
        r = run(env, *args, environ={variable: value})

        line = refused(r)
        assert line.startswith(f"error: config: {variable}: {key}: "), line
        assert problem in line and "config.toml" not in line, line
    assert brain.calls == []


def test_a_variable_wins_over_the_file_and_is_blamed_when_it_is_wrong(
    fake: FakeOllamaServer, env: Env
) -> None:
    config = env.home / "ok.toml"
    config.write_text("[loop]\nmax_iterations = 5\n", encoding="utf-8")

    r = run(env, *RUN, "--config", str(config), environ={"SOOTHE_LOOP__MAX_ITERATIONS": "many"})

    assert refused(r).startswith(
        "error: config: SOOTHE_LOOP__MAX_ITERATIONS: loop.max_iterations: "
    )


@pytest.mark.parametrize("kind", ["missing", "a-file"])
def test_workspace_must_be_an_existing_directory(
    brain: Brain, fake: FakeOllamaServer, env: Env, kind: str
) -> None:
    target = env.home / "nowhere" / "ws"
    if kind == "a-file":
        target = env.home / "a-file"
        target.write_text("not a directory", encoding="utf-8")
    brain.add("Classification", {"label": "simple", "answer": "", "reason": "a file"})

    for args in (["-p", "write hello to notes.txt", "--yes"], []):  # a run, the app
        r = run(env, *args, "--workspace", str(target), base=bool(args))

        why = "no such directory" if kind == "missing" else "not a directory"
        assert refused(r) == f"error: --workspace {target}: {why}"
    assert brain.calls == []  # before any model call
    assert not (env.home / "nowhere").exists()


def test_a_workspace_from_the_config_file_must_exist_too(
    brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    config = env.home / "ws.toml"
    missing = env.home / "gone"
    config.write_text(f'[tools]\nworkspace = "{missing}"\n', encoding="utf-8")
    argv = ["-p", "hi", "--config", str(config)]
    argv += [a for a in env.base_args() if a not in ("--workspace", str(env.workspace))]

    r = run(env, *argv, base=False)

    assert refused(r) == f"error: config: {config}: tools.workspace: {missing}: no such directory"
    assert brain.calls == [] and not missing.exists()


@pytest.mark.parametrize("args", [RUN, ("config", "show")], ids=["run", "config-show"])
def test_an_unknown_sandbox_is_refused(
    brain: Brain, fake: FakeOllamaServer, env: Env, args: tuple[str, ...]
) -> None:
    r = run(env, *args, environ={"SOOTHE_SANDBOX": "bogus"})

    assert refused(r) == (
        "error: config: SOOTHE_SANDBOX: 'bogus' is not one of auto, landlock, none"
    )
    assert brain.calls == []


@pytest.mark.parametrize(
    "content",
    ['sandbox = "bogus"\n', '[tools]\nsandbox = "bogus"\n', '[model]\nprovider = "bogus"\n'],
    ids=["sandbox", "tools.sandbox", "provider"],
)
def test_unknown_sandbox_and_provider_in_the_file_are_refused(
    fake: FakeOllamaServer, env: Env, content: str
) -> None:
    config = env.home / "c.toml"
    config.write_text(content, encoding="utf-8")
    r = run(env, "config", "show", "--config", str(config))
    assert refused(r).startswith(f"error: config: {config}: ")


def test_an_unknown_provider_flag_is_refused(fake: FakeOllamaServer, env: Env) -> None:
    r = run(env, *RUN, "--provider", "bogus")
    assert r.code == 2 and "invalid choice: 'bogus'" in r.err


@pytest.mark.parametrize(
    ("content", "flags", "key", "problem"),
    [
        ("model = 5\n", ["--provider", "demo"], "model", "valid dictionary"),
        ("[model]\nname = 5\n", ["--model", "llama3.2"], "model.name", "valid string"),
        ("loop = 'fast'\n", ["--max-iterations", "3"], "loop", "valid dictionary"),
    ],
    ids=["model-5-demo", "name-5-model-flag", "loop-string-flag"],
)
def test_wrong_types_are_refused_whatever_the_flags(
    brain: Brain,
    fake: FakeOllamaServer,
    env: Env,
    content: str,
    flags: list[str],
    key: str,
    problem: str,
) -> None:
    config = env.home / "typed.toml"
    config.write_text(content, encoding="utf-8")

    r = run(env, "-p", "hi", "--config", str(config), *flags)

    line = refused(r)
    assert line.startswith(f"error: config: {config}: {key}: "), line
    assert problem in line, line
    assert brain.calls == []


def test_the_request_can_come_from_stdin_however_long(
    brain: Brain, fake: FakeOllamaServer, env: Env
) -> None:
    request = "what is 2+2? " + "x" * 3_000_000 + " END-OF-REQUEST"
    with pytest.raises(OSError):  # the argument limit: it cannot be given as -p TEXT
        subprocess.run([sys.executable, "-c", "pass", request], check=False)
    seen: list[str] = []

    def classify(body: dict[str, object]) -> dict[str, str]:
        seen.append(str(body))
        return QUIZ

    brain.add("Classification", classify)

    r = run(env, "-p", "-", stdin=request.encode())

    assert (r.code, r.out, r.err) == (0, "4\n", "")
    # The whole request was sent (the model saw only what fits its window: the fake
    # cuts a prompt from the front as Ollama does).
    assert seen and "what is 2+2?" in str(fake.chat_requests()[0])


def test_an_empty_stdin_is_one_line(brain: Brain, fake: FakeOllamaServer, env: Env) -> None:
    r = run(env, "-p", "-", stdin=b"  \n")

    assert refused(r) == (
        "error: -p -: stdin held no request; pipe the request in, or give -p TEXT"
    )
    assert brain.calls == []
