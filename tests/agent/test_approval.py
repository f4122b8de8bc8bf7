"""The approval gate: ask and granted, denied, approve_always, policies auto and deny."""

from __future__ import annotations

from pathlib import Path

from soothe.engine.agent.tools import ToolContextFactory, run_tool_call
from soothe.engine.bus import EventBus
from soothe.engine.config import Settings
from soothe.engine.events import ApprovalAnswered, ApprovalRequested, ToolCalled, ToolResult
from soothe.engine.interact import InteractBroker
from tests.agent.helpers import IDS, Recorder, approver, call, make_ctx

WRITE = {"path": "out.txt", "content": "hello"}


async def test_ask_and_approve_once(ws: Path, bus: EventBus, broker: InteractBroker) -> None:
    rec = Recorder(bus)
    ctx = make_ctx(ws, approval="ask", broker=broker, bus=bus)
    async with approver(bus, broker, "approve_once") as seen:
        out = await run_tool_call(ctx, call("write_file", WRITE))
        assert out.ok and (ws / "out.txt").read_text() == "hello"
        out = await run_tool_call(ctx, call("write_file", {**WRITE, "content": "again"}))
        assert out.ok
    assert len(seen) == 2  # approve_once asks each time
    first = seen[0]
    assert first.tool == "write_file" and first.path == "out.txt"
    assert first.args == {"path": "out.txt", "content": "hello"}
    assert {k: getattr(first, k) for k in IDS} == IDS
    assert rec.types()[:4] == [
        "step.tool_call",
        "approval.requested",
        "approval.answered",
        "step.tool_result",
    ]
    assert ctx.always_approved == set()


async def test_ask_and_deny(ws: Path, bus: EventBus, broker: InteractBroker) -> None:
    ctx = make_ctx(ws, approval="ask", broker=broker, bus=bus)
    async with approver(bus, broker, "deny") as seen:
        out = await run_tool_call(ctx, call("write_file", WRITE))
        shell = await run_tool_call(ctx, call("run_shell", {"command": "touch ran.txt"}))
        edit = await run_tool_call(
            ctx, call("edit_file", {"path": "README.md", "old": "Demo", "new": "X"})
        )
    assert [s.tool for s in seen] == ["write_file", "run_shell", "edit_file"]
    for outcome in (out, shell, edit):
        assert not outcome.ok
        assert "the user denied" in outcome.output and "was not run" in outcome.output
    assert not (ws / "out.txt").exists()
    assert not (ws / "ran.txt").exists()
    assert "# Demo" in (ws / "README.md").read_text()


async def test_approve_always_is_remembered_per_tool(
    ws: Path, bus: EventBus, broker: InteractBroker
) -> None:
    ctx = make_ctx(ws, approval="ask", broker=broker, bus=bus)
    async with approver(bus, broker, "approve_always") as seen:
        for i in range(3):
            out = await run_tool_call(ctx, call("write_file", {"path": f"f{i}", "content": "x"}))
            assert out.ok
        assert len(seen) == 1
        assert ctx.always_approved == {"write_file"}
        out = await run_tool_call(ctx, call("run_shell", {"command": "echo hi"}))
        assert out.ok
        assert [s.tool for s in seen] == ["write_file", "run_shell"]


async def test_approve_always_lasts_for_the_session(
    ws: Path, bus: EventBus, broker: InteractBroker
) -> None:
    settings = Settings()
    settings.tools.workspace = ws
    factory = ToolContextFactory(settings, broker=broker, bus=bus)
    async with approver(bus, broker, "approve_always") as seen:
        out = await run_tool_call(factory({"step_id": "a"}), call("write_file", WRITE))
        assert out.ok
        out = await run_tool_call(factory({"step_id": "b"}), call("write_file", WRITE))
        assert out.ok
    assert len(seen) == 1
    assert factory({}).approval == "ask"


async def test_policy_auto_never_asks(ws: Path, bus: EventBus, broker: InteractBroker) -> None:
    rec = Recorder(bus)
    ctx = make_ctx(ws, approval="auto", broker=broker, bus=bus)
    out = await run_tool_call(ctx, call("run_shell", {"command": "echo ok"}))
    assert out.ok
    assert not rec.of(ApprovalRequested)
    assert [type(e) for e in rec.events] == [ToolCalled, ToolResult]


async def test_policy_deny_refuses_without_asking(
    ws: Path, bus: EventBus, broker: InteractBroker
) -> None:
    rec = Recorder(bus)
    ctx = make_ctx(ws, approval="deny", broker=broker, bus=bus)
    out = await run_tool_call(ctx, call("write_file", WRITE))
    assert not out.ok and "policy is 'deny'" in out.output
    assert not (ws / "out.txt").exists()
    assert not rec.of(ApprovalRequested)
    read = await run_tool_call(ctx, call("read_file", {"path": "README.md"}))
    assert read.ok  # read-only tools need no approval


async def test_ask_times_out(ws: Path, bus: EventBus, broker: InteractBroker) -> None:
    rec = Recorder(bus)
    ctx = make_ctx(ws, approval="ask", broker=broker, bus=bus, approval_timeout=0.05)
    out = await run_tool_call(ctx, call("run_shell", {"command": "touch ran.txt"}))
    assert not out.ok and "nobody answered" in out.output
    assert not (ws / "ran.txt").exists()
    assert [e.outcome for e in rec.of(ApprovalAnswered)] == ["timeout"]


async def test_ask_without_broker_refuses(ws: Path) -> None:
    out = await run_tool_call(make_ctx(ws, approval="ask"), call("write_file", WRITE))
    assert not out.ok and "nobody can be asked" in out.output


async def test_refused_path_is_not_offered_for_approval(
    ws: Path, bus: EventBus, broker: InteractBroker
) -> None:
    rec = Recorder(bus)
    ctx = make_ctx(ws, approval="ask", broker=broker, bus=bus)
    out = await run_tool_call(ctx, call("write_file", {"path": "../x", "content": "x"}))
    assert not out.ok and "outside the workspace" in out.output
    out = await run_tool_call(
        ctx, call("edit_file", {"path": "README.md", "old": "zz", "new": "y"})
    )
    assert not out.ok and "not found" in out.output
    assert not rec.of(ApprovalRequested)


async def test_long_content_is_shortened_in_the_request(
    ws: Path, bus: EventBus, broker: InteractBroker
) -> None:
    ctx = make_ctx(ws, approval="ask", broker=broker, bus=bus)
    async with approver(bus, broker, "approve_once") as seen:
        out = await run_tool_call(ctx, call("write_file", {"path": "big", "content": "z" * 50_000}))
    assert out.ok and (ws / "big").stat().st_size == 50_000
    assert len(seen[0].args["content"]) <= 2000
    assert "truncated" in seen[0].args["content"]


async def test_always_for_run_shell_covers_that_program_only(
    ws: Path, bus: EventBus, broker: InteractBroker
) -> None:
    ctx = make_ctx(ws, approval="ask", broker=broker, bus=bus)
    async with approver(bus, broker, "approve_always") as seen:
        for command in ("echo one", "/bin/echo two", "FOO=1 echo three"):
            out = await run_tool_call(ctx, call("run_shell", {"command": command}))
            assert out.ok, out.output
        assert [s.args["command"] for s in seen] == ["echo one"]  # echo: asked once
        out = await run_tool_call(ctx, call("run_shell", {"command": "printf x"}))
        assert out.ok
        assert [s.args["command"] for s in seen] == ["echo one", "printf x"]  # another program
        out = await run_tool_call(ctx, call("run_shell", {"command": "echo a && touch b"}))
        assert len(seen) == 3  # a compound command is no one program: asked
    assert ctx.always_approved == {
        "run_shell:echo",
        "run_shell:printf",
        "run_shell:=echo a && touch b",
    }


async def test_the_request_keeps_whole_arguments_the_event_a_preview(
    ws: Path, bus: EventBus, broker: InteractBroker
) -> None:
    ctx = make_ctx(ws, approval="ask", broker=broker, bus=bus)
    content = "x" * 5000
    requests: list[object] = []

    def grab(event: object) -> None:
        if isinstance(event, ApprovalRequested):
            requests.append(broker.get(event.request_id))

    bus.add_listener(grab)
    async with approver(bus, broker, "approve_once") as seen:
        out = await run_tool_call(ctx, call("write_file", {"path": "big.txt", "content": content}))
    assert out.ok and (ws / "big.txt").read_text() == content
    assert len(seen[0].args["content"]) < 2100  # the event: shortened
    assert getattr(requests[0], "args", {})["content"] == content  # the request: whole


async def test_always_also_answers_the_covered_requests_already_waiting(
    broker: InteractBroker,
) -> None:
    """Two steps ask at once (parallel): "always" on one answers the other's request for
    the same rule; a request it does not cover stays open; the rule holds at once. (The
    step driver calls apply_always with the broker's answer; tests/app/test_requests.py
    runs it whole.)"""
    import asyncio

    from soothe.engine.agent.approval import apply_always
    from soothe.engine.interact import ApprovalRequest, ApprovalResponse
    from soothe.engine.scope import Scope

    def ask(tool: str, **args: str) -> tuple[ApprovalRequest, asyncio.Task[object]]:
        request = ApprovalRequest.within(Scope("t"), tool=tool, args=args, path="")
        return request, asyncio.create_task(broker.ask(request))

    first, first_answer = ask("write_file", path="one.txt", content="1")
    _, second_answer = ask("write_file", path="two.txt", content="2")
    _, shell_answer = ask("run_shell", command="pytest -q")
    _, other_shell = ask("run_shell", command="rm -rf build")
    await asyncio.sleep(0)
    always = ApprovalResponse(outcome="approve_always")
    broker.answer(first.request_id, always)
    assert await first_answer == always
    rules: set[str] = set()
    assert apply_always(broker, rules, first, always) == 1
    assert rules == {"write_file"}  # a step that asks from now on is not asked
    assert await asyncio.wait_for(second_answer, 1) == always
    assert {r.args["command"] for r in broker.pending()} == {"pytest -q", "rm -rf build"}
    shell = next(r for r in broker.pending() if r.args["command"] == "pytest -q")
    broker.answer(shell.request_id, always)
    assert apply_always(broker, rules, shell, always) == 0  # "always pytest" does not cover rm
    assert await shell_answer == always
    assert [r.args["command"] for r in broker.pending()] == ["rm -rf build"]
    assert apply_always(broker, rules, first, ApprovalResponse(outcome="approve_once")) == 0
    assert rules == {"write_file", "run_shell:pytest"}
    other_shell.cancel()
