"""run_shell is confined: it writes only in the workspace (and a private temp dir), even
approved; its network is off unless tools.shell_network; with no sandbox at all a person
approves every command, --yes or not."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from soothe.engine.agent.approval import decide
from soothe.engine.agent.sandbox import Confinement, detect, landlock_abi
from soothe.engine.agent.tools import ToolContext, run_tool_call
from tests.agent.helpers import call
from tests.fakes._base import FakeReply
from tests.faults.harness import ONE_STEP, SIMPLE, Brain, Env, Result, brain, env, fake, soothe

__all__ = ["brain", "env", "fake", "soothe"]  # fixtures used here

_AVAILABLE = [
    pytest.param(
        Confinement("bwrap", "test"),
        id="bwrap",
        marks=pytest.mark.skipif(detect().kind != "bwrap", reason="bwrap is not usable here"),
    ),
    pytest.param(
        Confinement("landlock", "test"),
        id="landlock",
        marks=pytest.mark.skipif(landlock_abi() < 4, reason="no Landlock ABI >= 4 kernel"),
    ),
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory the user can write that is not under the workspace (not /tmp: bwrap
    gives the command a private /tmp, which would make the test pass for another reason)."""
    home = Path.home() / f".soothe-test-outside-{tmp_path.name}"
    home.mkdir(parents=True, exist_ok=True)
    yield home
    for p in home.iterdir():
        p.unlink()
    home.rmdir()


def ctx_for(ws: Path, conf: Confinement, network: bool = False) -> ToolContext:
    return ToolContext(
        workspace=ws,
        broker=None,
        approval="auto",
        max_output_chars=4000,
        max_read_bytes=200_000,
        confinement=conf,
        shell_network=network,
    )


@pytest.mark.parametrize("conf", _AVAILABLE)
async def test_writes_land_only_in_the_workspace(
    tmp_path: Path, outside: Path, conf: Confinement
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    target = outside / "pwned"
    ctx = ctx_for(ws, conf)
    out = await run_tool_call(ctx, call("run_shell", {"command": f"touch {target}"}))
    assert not out.ok and not target.exists(), out.output
    assert "Read-only file system" in out.output or "Permission denied" in out.output
    out = await run_tool_call(
        ctx, call("run_shell", {"command": "touch made && echo t > $TMPDIR/x && cat $TMPDIR/x"})
    )
    assert out.ok and (ws / "made").exists(), out.output
    assert out.output.endswith("t\n")


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on the host's loopback that answers "hello"."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            conn.sendall(b"hello\n")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield srv.getsockname()[1]
    stop.set()
    thread.join()
    srv.close()


@pytest.mark.parametrize("conf", _AVAILABLE)
async def test_network_is_off_unless_allowed(
    tmp_path: Path, listener: int, conf: Confinement
) -> None:
    cmd = (
        "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', "
        f'{listener}), 3); print(s.recv(10).decode().strip())"'
    )
    out = await run_tool_call(ctx_for(tmp_path, conf), call("run_shell", {"command": cmd}))
    assert not out.ok and "hello" not in out.output, out.output
    out = await run_tool_call(
        ctx_for(tmp_path, conf, network=True), call("run_shell", {"command": cmd})
    )
    assert out.ok and out.output.endswith("hello\n"), out.output


def test_without_a_sandbox_commands_always_need_a_person(tmp_path: Path) -> None:
    none = Confinement("none", "test")
    ctx = ctx_for(tmp_path, none)
    assert decide(ctx, "run_shell", {"command": "ls"}) == ("ask", "no sandbox")
    ctx.rules = {"run_shell": {"ls": "auto"}}
    assert decide(ctx, "run_shell", {"command": "ls"})[0] == "ask"
    assert decide(ctx, "write_file", {"path": "a"})[0] == "auto"  # files: workspace-checked
    confined = ctx_for(tmp_path, Confinement("bwrap", "test"))
    assert decide(confined, "run_shell", {"command": "ls"})[0] == "auto"


@pytest.mark.skipif(not detect().active, reason="no confinement possible on this machine")
def test_the_issue_repro_touch_outside_with_yes(
    soothe: object, brain: Brain, env: Env, outside: Path
) -> None:
    """``touch`` of a path outside the workspace with --yes: approved, run, and refused by
    the sandbox; the file does not appear. The same run can touch inside."""
    target = outside / "escaped.txt"
    brain.add("Classification", SIMPLE).add("PlanGeneration", ONE_STEP)
    brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "run_shell", "args": {"command": f"touch {target}"}}]),
        FakeReply(tool_calls=[{"name": "run_shell", "args": {"command": "touch inside.txt"}}]),
        "done",
    )
    r: Result = soothe("-p", "make the files", "--yes", "--json")  # type: ignore[operator]
    assert r.code == 0, r.err
    results = [e for e in r.json_lines() if e["type"] == "step.tool_result"]
    assert [e["ok"] for e in results] == [False, True], results
    assert not target.exists()
    assert (env.workspace / "inside.txt").exists()
