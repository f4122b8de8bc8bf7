"""Every tool on a temporary workspace: results, refusals, caps and argument handling."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from soothe.engine.agent.fs_tools import glob_to_regex
from soothe.engine.agent.tools import TOOLS, run_tool_call, tool_specs
from soothe.engine.bus import EventBus
from soothe.engine.events import ToolCalled, ToolResult
from tests.agent.helpers import (
    IDS,
    Recorder,
    call,
    make_ctx,
    unique_sleep,
    wait_for_file,
    wait_gone,
)

# --- read_file ---------------------------------------------------------------------------


async def test_read_file_whole(ws: Path) -> None:
    out = await run_tool_call(make_ctx(ws), call("read_file", {"path": "README.md"}))
    assert out.ok
    assert out.output == "# Demo\nA small project.\nTODO: write docs\n"
    assert not out.truncated


async def test_read_file_offset_limit_and_footer(ws: Path) -> None:
    (ws / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = await run_tool_call(make_ctx(ws), call("read_file", {"path": "n.txt", "limit": 3}))
    assert out.output.startswith("line 1\nline 2\nline 3\n")
    assert "line 4" not in out.output
    assert "offset=3" in out.output
    out = await run_tool_call(
        make_ctx(ws), call("read_file", {"path": "n.txt", "offset": 8, "limit": 5})
    )
    assert out.output.startswith("line 9\nline 10\n")
    assert "lines 9-10 shown; end of file" in out.output


async def test_read_file_offset_past_end(ws: Path) -> None:
    out = await run_tool_call(make_ctx(ws), call("read_file", {"path": "README.md", "offset": 9}))
    assert not out.ok
    assert "past the end" in out.output and "3 lines" in out.output


async def test_read_file_byte_cap_gives_whole_lines_and_continuation(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"{i:05d} " + "x" * 93 + "\n" for i in range(100)))
    ctx = make_ctx(ws, max_read_bytes=1000)
    out = await run_tool_call(ctx, call("read_file", {"path": "big.txt"}))
    assert out.ok
    lines = out.output.splitlines()
    assert lines[:10] == [f"{i:05d} " + "x" * 93 for i in range(10)]
    assert "offset=10" in lines[-1] and "size limit" in lines[-1]
    nxt = await run_tool_call(ctx, call("read_file", {"path": "big.txt", "offset": 10}))
    assert nxt.output.startswith("00010 ")


async def test_read_file_prompt_cap_bounds_the_read(ws: Path) -> None:
    (ws / "big.txt").write_text("y" * 50 + "\n" * 1 + ("z" * 50 + "\n") * 1000)
    out = await run_tool_call(
        make_ctx(ws, max_output_chars=1000), call("read_file", {"path": "big.txt"})
    )
    assert len(out.output) <= 1000
    assert not out.truncated  # read_file cut at a line, not the generic cap
    assert "call read_file with offset=" in out.output


async def test_read_file_single_giant_line_is_cut(ws: Path) -> None:
    (ws / "one.txt").write_text("q" * 100_000)
    out = await run_tool_call(make_ctx(ws), call("read_file", {"path": "one.txt"}))
    assert out.ok and len(out.output) <= 4000
    assert "line cut" in out.output


async def test_read_file_refusals(ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"\x89PNG\r\n\x00\x00\x01binary")
    ctx = make_ctx(ws)
    out = await run_tool_call(ctx, call("read_file", {"path": "blob.bin"}))
    assert not out.ok and "binary" in out.output
    out = await run_tool_call(ctx, call("read_file", {"path": "src"}))
    assert not out.ok and "is a directory" in out.output and "list_dir" in out.output
    out = await run_tool_call(ctx, call("read_file", {"path": "nope.txt"}))
    assert not out.ok and "no such file" in out.output


async def test_read_file_empty(ws: Path) -> None:
    out = await run_tool_call(make_ctx(ws), call("read_file", {"path": "src/pkg/__init__.py"}))
    assert out.ok and out.output == "src/pkg/__init__.py is empty"


# --- list_dir / glob / grep ---------------------------------------------------------------


async def test_list_dir(ws: Path) -> None:
    out = await run_tool_call(make_ctx(ws), call("list_dir", {}))
    assert out.ok
    assert out.output.splitlines() == [
        ".: 3 entries",
        "README.md  (41 bytes)",
        "docs/",
        "src/",
    ]
    out = await run_tool_call(make_ctx(ws), call("list_dir", {"path": "src/pkg"}))
    assert "core.py" in out.output and out.output.startswith("src/pkg: 2 entries")
    out = await run_tool_call(make_ctx(ws), call("list_dir", {"path": "README.md"}))
    assert not out.ok and "read_file" in out.output


async def test_glob(ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / ".git" / "x.py").write_text("")
    (ws / "node_modules" / "m").mkdir(parents=True)
    (ws / "node_modules" / "m" / "y.py").write_text("")
    ctx = make_ctx(ws)
    out = await run_tool_call(ctx, call("glob", {"pattern": "**/*.py"}))
    assert out.output.splitlines() == ["src/pkg/__init__.py", "src/pkg/core.py"]
    out = await run_tool_call(ctx, call("glob", {"pattern": "*.md"}))
    assert out.output == "README.md"
    out = await run_tool_call(ctx, call("glob", {"pattern": "*.py"}))
    assert "no paths match" in out.output and "**/*.py" in out.output
    out = await run_tool_call(ctx, call("glob", {"pattern": "src/*"}))
    assert out.output == "src/pkg/"
    out = await run_tool_call(ctx, call("glob", {"pattern": "**/[cd]*.py"}))
    assert out.output == "src/pkg/core.py"


def test_glob_regex_semantics() -> None:
    rx = glob_to_regex("src/**/test_?.py")
    assert rx.match("src/test_a.py")
    assert rx.match("src/a/b/test_b.py")
    assert not rx.match("src/test_ab.py")
    assert not glob_to_regex("*.py").match("a/b.py")
    assert glob_to_regex("[!a]*.txt").match("b.txt")
    assert not glob_to_regex("[!a]*.txt").match("a.txt")


async def test_grep(ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"TODO\x00binary")
    (ws / ".venv").mkdir()
    (ws / ".venv" / "lib.py").write_text("TODO hidden\n")
    ctx = make_ctx(ws)
    out = await run_tool_call(ctx, call("grep", {"pattern": "TODO"}))
    assert out.ok
    assert out.output.splitlines() == [
        "README.md:3: TODO: write docs",
        "docs/guide.md:2: TODO later",
        "src/pkg/core.py:6: # TODO: test",
    ]
    out = await run_tool_call(ctx, call("grep", {"pattern": "TODO", "glob": "*.py"}))
    assert out.output == "src/pkg/core.py:6: # TODO: test"
    out = await run_tool_call(ctx, call("grep", {"pattern": r"def \w+", "path": "src/pkg/core.py"}))
    assert out.output.splitlines() == [
        "src/pkg/core.py:1: def add(a, b):",
        "src/pkg/core.py:5: def sub(a, b):",
    ]
    out = await run_tool_call(ctx, call("grep", {"pattern": "nothing-like-this"}))
    assert out.ok and out.output.startswith("no matches")


async def test_grep_bad_regex_and_match_cap(ws: Path) -> None:
    ctx = make_ctx(ws)
    out = await run_tool_call(ctx, call("grep", {"pattern": "([unclosed"}))
    assert not out.ok and "invalid regular expression" in out.output
    (ws / "many.txt").write_text("hit\n" * 1000)
    out = await run_tool_call(ctx, call("grep", {"pattern": "hit", "path": "many.txt"}))
    rows = out.output.splitlines()
    assert len(rows) <= 201
    assert rows[-1].startswith("… more matches not shown")


# --- write_file / edit_file ----------------------------------------------------------------


async def test_write_file_creates_and_overwrites(ws: Path) -> None:
    ctx = make_ctx(ws, approval="auto")
    out = await run_tool_call(ctx, call("write_file", {"path": "new/dir/f.txt", "content": "hé\n"}))
    assert out.ok and "new file" in out.output and "4 bytes" in out.output
    assert (ws / "new/dir/f.txt").read_text() == "hé\n"
    out = await run_tool_call(ctx, call("write_file", {"path": "README.md", "content": "x"}))
    assert out.ok and "replaced the existing file" in out.output
    assert (ws / "README.md").read_text() == "x"
    out = await run_tool_call(ctx, call("write_file", {"path": "docs", "content": "x"}))
    assert not out.ok and "is a directory" in out.output


async def test_edit_file(ws: Path) -> None:
    ctx = make_ctx(ws)
    path = "src/pkg/core.py"
    out = await run_tool_call(
        ctx, call("edit_file", {"path": path, "old": "return a + b", "new": "return b + a"})
    )
    assert out.ok and "edited src/pkg/core.py" in out.output
    assert "return b + a" in (ws / path).read_text()
    out = await run_tool_call(ctx, call("edit_file", {"path": path, "old": "missing", "new": "x"}))
    assert not out.ok and "not found" in out.output
    out = await run_tool_call(ctx, call("edit_file", {"path": path, "old": "(a, b)", "new": "x"}))
    assert not out.ok and "occurs 2 times" in out.output
    out = await run_tool_call(ctx, call("edit_file", {"path": path, "old": "", "new": "x"}))
    assert not out.ok and "non-empty" in out.output
    assert (ws / path).read_text().count("(a, b)") == 2


# --- run_shell ----------------------------------------------------------------------------


async def test_run_shell_runs_in_workspace(ws: Path) -> None:
    out = await run_tool_call(make_ctx(ws), call("run_shell", {"command": "pwd; ls"}))
    assert out.ok
    assert out.output.startswith("exit code 0\n")
    assert str(ws.resolve()) in out.output and "README.md" in out.output


async def test_run_shell_nonzero_exit_and_stderr(ws: Path) -> None:
    out = await run_tool_call(make_ctx(ws), call("run_shell", {"command": "echo oops >&2; exit 3"}))
    assert not out.ok
    assert out.output == "exit code 3\noops\n"


async def test_run_shell_timeout_kills_the_group(ws: Path) -> None:
    sleep = unique_sleep(30)
    cmd = f"{' '.join(sleep)} & echo $! > child.pid; sleep 30"
    loop = asyncio.get_running_loop()
    start = loop.time()
    out = await run_tool_call(make_ctx(ws), call("run_shell", {"command": cmd, "timeout": 0.5}))
    assert loop.time() - start < 4
    assert not out.ok and "timed out after 0.5s and was killed" in out.output
    assert (ws / "child.pid").exists() and await wait_gone(sleep)


async def test_run_shell_leftover_background_process_is_killed(ws: Path) -> None:
    sleep = unique_sleep(30)
    cmd = f"{' '.join(sleep)} > /dev/null 2>&1 & echo $! > bg.pid"
    out = await run_tool_call(make_ctx(ws), call("run_shell", {"command": cmd}))
    assert out.ok
    assert (ws / "bg.pid").exists() and await wait_gone(sleep)


async def test_run_shell_cancel_kills_the_process(ws: Path) -> None:
    sleep = unique_sleep(30)
    cmd = f"echo $$ > me.pid; exec {' '.join(sleep)}"
    task = asyncio.create_task(run_tool_call(make_ctx(ws), call("run_shell", {"command": cmd})))
    await wait_for_file(ws / "me.pid")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 3)
    assert await wait_gone(sleep)


# --- validation ---------------------------------------------------------------------------


async def test_unknown_tool(ws: Path) -> None:
    out = await run_tool_call(make_ctx(ws), call("delete_everything", {"x": 1}))
    assert not out.ok
    assert out.output.startswith("unknown tool 'delete_everything'; available: read_file")
    for name in TOOLS:
        assert name in out.output


async def test_wrong_argument_types_and_missing(ws: Path) -> None:
    ctx = make_ctx(ws)
    out = await run_tool_call(ctx, call("read_file", {"path": 123}))
    assert not out.ok and "invalid arguments for read_file" in out.output
    assert "path: Input should be a valid string" in out.output
    out = await run_tool_call(ctx, call("read_file", {"path": "README.md", "offset": "abc"}))
    assert not out.ok and "offset" in out.output
    out = await run_tool_call(ctx, call("read_file", {"where": "README.md"}))
    assert not out.ok and "path: Field required" in out.output
    assert "Unexpected argument(s): where" in out.output
    assert "Expected: read_file(path, offset?, limit?)" in out.output
    out = await run_tool_call(ctx, call("read_file", {"path": "README.md", "limit": 0}))
    assert not out.ok and "limit" in out.output
    out = await run_tool_call(ctx, call("run_shell", ["ls"]))
    assert not out.ok and "arguments must be a JSON object" in out.output


async def test_bounds_are_enforced_by_validation(ws: Path) -> None:
    ctx = make_ctx(ws)
    out = await run_tool_call(ctx, call("read_file", {"path": "a" * 2000}))
    assert not out.ok and "at most 1024 characters" in out.output
    out = await run_tool_call(ctx, call("run_shell", {"command": "true", "timeout": 9999}))
    assert not out.ok and "timeout" in out.output and "600" in out.output


async def test_object_where_a_string_is_expected_is_written_as_json(ws: Path) -> None:
    out = await run_tool_call(
        make_ctx(ws), call("write_file", {"path": "c.json", "content": {"k": [1, 2]}})
    )
    assert out.ok
    assert json.loads((ws / "c.json").read_text()) == {"k": [1, 2]}


async def test_json_strings_accepted(ws: Path) -> None:
    (ws / "n.txt").write_text("a\nb\nc\n")
    ctx = make_ctx(ws)
    out = await run_tool_call(
        ctx, call("read_file", {"path": "n.txt", "offset": "1", "limit": "1"})
    )
    assert out.ok and out.output.startswith("b\n")
    out = await run_tool_call(ctx, call("read_file", json.dumps({"path": "n.txt", "offset": 2})))
    assert out.ok and out.output.startswith("c\n")
    out = await run_tool_call(ctx, call("read_file", {"arguments": '{"path": "n.txt"}'}))
    assert out.ok and out.output == "a\nb\nc\n"
    out = await run_tool_call(ctx, call("run_shell", {"command": "echo hi", "timeout": "5"}))
    assert out.ok and out.args == {"command": "echo hi", "timeout": 5.0}
    out = await run_tool_call(ctx, call("read_file", "{not json"))
    assert not out.ok and "arguments must be a JSON object" in out.output


async def test_aliases_and_extra_args(ws: Path) -> None:
    ctx = make_ctx(ws)
    out = await run_tool_call(
        ctx, call("read_file", {"file_path": "README.md", "encoding": "utf8"})
    )
    assert out.ok and out.output.startswith("# Demo")
    out = await run_tool_call(ctx, call("run_shell", {"cmd": "echo aliased"}))
    assert out.ok and "aliased" in out.output


# --- caps and events ----------------------------------------------------------------------


async def test_output_capped_with_marker(ws: Path) -> None:
    for i in range(400):
        (ws / "docs" / f"file_{i:04d}_with_a_long_name.md").write_text("")
    out = await run_tool_call(
        make_ctx(ws, max_output_chars=500), call("list_dir", {"path": "docs"})
    )
    assert out.truncated and len(out.output) <= 500
    assert out.output.rsplit("\n", 1)[-1].startswith("… [truncated ")


async def test_events_published_with_ids(ws: Path) -> None:
    bus = EventBus()
    rec = Recorder(bus)
    out = await run_tool_call(
        make_ctx(ws, bus=bus), call("read_file", {"path": "README.md"}, call_id="c9")
    )
    called, result = rec.events
    assert isinstance(called, ToolCalled) and isinstance(result, ToolResult)
    assert called.call_id == result.call_id == "c9"
    assert called.args == {"path": "README.md"}
    assert result.output == out.output and result.ok
    for key, value in IDS.items():
        assert getattr(called, key) == value == getattr(result, key)


def test_tool_specs_are_bounded() -> None:
    specs = tool_specs()
    assert [s["function"]["name"] for s in specs] == list(TOOLS)
    for spec in specs:
        params = spec["function"]["parameters"]
        assert params["type"] == "object"
        for name, prop in params["properties"].items():
            if prop.get("type") == "string":
                assert "maxLength" in prop, (spec["function"]["name"], name)
            if prop.get("type") in ("integer", "number"):
                assert "maximum" in prop, (spec["function"]["name"], name)
