"""In-process checks of what ``soothe acp`` sends and reads: engine events as session
updates (hostile text made plain, approvals shown visibly, the answer not sent twice,
the plan from the step DAG), a prompt's blocks as the request, and the client's MCP
servers added to the configured ones."""

from __future__ import annotations

from pathlib import Path

from acp.schema import (
    EmbeddedResourceContentBlock,
    EnvVariable,
    HttpMcpServer,
    McpServerStdio,
    ResourceContentBlock,
    SseMcpServer,
    TextContentBlock,
    TextResourceContents,
)

from soothe.engine import events as ev
from soothe.engine.config import McpServerSettings, Settings
from soothe.engine.context.models import StepNode
from soothe.frontends.acp.engine_host import settings_for
from soothe.frontends.acp.prompt_text import request_text
from soothe.frontends.acp.translate import Translator, split_answers

IDS = {"thread_id": "T1", "goal_id": "G1", "step_id": "S-01"}


def _translator(tmp_path: Path, steps: list[StepNode] | None = None) -> Translator:
    return Translator(tmp_path, lambda goal: steps if goal == "G1" else None)


def test_model_text_reaches_the_client_without_control_sequences(tmp_path: Path) -> None:
    t = _translator(tmp_path)
    hostile = "ok\x1b]52;c;cHduZWQ=\x07 done\x1b[2J\r\n"
    (token,) = t.updates(ev.StepToken(text=hostile, thread_id="T1", goal_id="G1"))
    assert (token.session_update, token.content.text) == ("agent_message_chunk", "ok done\n")
    (thought,) = t.updates(ev.StepThinking(text="hm\x1b[31m", **IDS))
    assert (thought.session_update, thought.content.text) == ("agent_thought_chunk", "hm")
    (call,) = t.updates(
        ev.ToolCalled(
            call_id="c1", tool="run_shell", args={"command": "ls\r\x1b[2Krm -rf x"}, **IDS
        )
    )
    assert call.title == "run_shell: ls␍␛[2Krm -rf x"  # what runs, shown as it is
    assert (call.kind, call.status, call.tool_call_id) == ("execute", "in_progress", "G1/S-01/c1")
    (done,) = t.updates(
        ev.ToolResult(call_id="c1", tool="run_shell", output="a\x1b]0;x\x07b", ok=True, **IDS)
    )
    assert (done.status, done.content[0].content.text) == ("completed", "ab")


def test_the_final_answer_sends_only_what_was_not_streamed(tmp_path: Path) -> None:
    t = _translator(tmp_path)
    t.updates(ev.StepToken(text="The answer", thread_id="T1", goal_id="G1"))
    (rest,) = t.updates(ev.FinalAnswer(text="The answer is 4.", thread_id="T1", goal_id="G1"))
    assert rest.content.text == " is 4."
    t.updates(ev.StepToken(text="draft", thread_id="T1", goal_id="G2"))
    (whole,) = t.updates(ev.FinalAnswer(text="Checked: 5.", thread_id="T1", goal_id="G2"))
    assert whole.content.text == "\n\nChecked: 5."
    assert t.updates(ev.FinalAnswer(text="", thread_id="T1", goal_id="G3")) == []
    (quick,) = t.updates(ev.FinalAnswer(text="4", thread_id="T1"))
    assert quick.content.text == "4"


def test_an_edit_carries_its_diff_and_its_location(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    t = _translator(tmp_path)
    args = {"path": "a.txt", "old": "two", "new": "2"}
    (call,) = t.updates(ev.ToolCalled(call_id="c1", tool="edit_file", args=args, **IDS))
    assert (call.kind, call.title) == ("edit", "edit_file a.txt")
    assert [loc.path for loc in call.locations] == [str(tmp_path / "a.txt")]
    diff = call.content[0]
    assert (diff.path, diff.old_text, diff.new_text) == (
        str(tmp_path / "a.txt"),
        "one\ntwo\n",
        "one\n2\n",
    )
    outside = {"path": "../../etc/passwd", "content": "x"}
    (bad,) = t.updates(ev.ToolCalled(call_id="c2", tool="write_file", args=outside, **IDS))
    assert bad.locations == [] and bad.content is None  # the workspace refuses it


def test_the_plan_is_the_step_dag_as_it_stands(tmp_path: Path) -> None:
    steps = [
        StepNode(id="S-01", goal_id="G1", description="list", status="completed", position=0),
        StepNode(id="S-02", goal_id="G1", description="read", status="active", position=1),
        StepNode(id="S-03", goal_id="G1", description="ask", kind="ask_user", position=2),
        StepNode(id="S-04", goal_id="G1", description="try", status="failed", position=3),
    ]
    t = _translator(tmp_path, steps)
    (plan,) = t.updates(ev.StepStarted(description="read", **IDS))
    assert [(e.content, e.status) for e in plan.entries] == [
        ("S-01 list", "completed"),
        ("S-02 read", "in_progress"),
        ("S-03 ask (asks you)", "pending"),
        ("S-04 try (failed)", "completed"),
    ]
    replay = Translator(tmp_path, lambda goal: steps, replay=True)
    assert replay.updates(ev.StepStarted(description="read", **IDS)) == []  # sent at the end
    assert len(replay.plan().entries) == 4
    (user,) = replay.updates(ev.RunStarted(text="hi\x1b[2J", thread_id="T1"))
    assert (user.session_update, user.content.text) == ("user_message_chunk", "hi")


def test_a_prompt_s_blocks_become_one_request(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    blocks = [
        TextContentBlock(type="text", text="explain"),
        ResourceContentBlock(type="resource_link", name="a.py", uri=f"file://{tmp_path}/src/a.py"),
        ResourceContentBlock(type="resource_link", name="spec", uri="https://example.com/spec"),
        EmbeddedResourceContentBlock(
            type="resource",
            resource=TextResourceContents(uri=f"file://{tmp_path}/b.md", text="has ``` in it"),
        ),
    ]
    assert request_text(blocks, tmp_path) == (
        "explain @src/a.py spec (https://example.com/spec)\n\n"
        "Attached b.md:\n````\nhas ``` in it\n````"
    )


def test_answers_split_by_line_only_when_the_counts_match() -> None:
    assert split_answers("a\nb", 2) == ["a", "b"]
    assert split_answers("a b", 2) == ["a b", "a b"]
    assert split_answers(" x ", 1) == ["x"]


def test_client_mcp_servers_are_added_to_the_configured_ones(tmp_path: Path) -> None:
    base = Settings()
    base.mcp.servers = {"words": McpServerSettings(command="words-server")}
    servers = [
        McpServerStdio(
            name="words", command="/bin/w", args=["-v"], env=[EnvVariable(name="K", value="v")]
        ),
        HttpMcpServer(type="http", name="web", url="http://127.0.0.1:9/mcp", headers=[]),
        SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[]),
    ]
    settings = settings_for(base, str(tmp_path), servers)
    assert settings.tools.resolved_workspace() == tmp_path.resolve()
    got = {k: (v.command, v.args, v.env, v.url) for k, v in settings.mcp.servers.items()}
    assert got == {
        "words": ("words-server", [], {}, None),  # the configured one keeps its name
        "words-acp": ("/bin/w", ["-v"], {"K": "v"}, None),
        "web": (None, [], {}, "http://127.0.0.1:9/mcp"),
    }
    assert base.mcp.servers.keys() == {"words"} and base.tools.workspace is None


def test_parallel_steps_text_is_one_thought_each_not_interleaved(tmp_path: Path) -> None:
    t = _translator(tmp_path)
    one = {**IDS, "step_id": "S-01"}
    two = {**IDS, "step_id": "S-02"}
    for text, ids in (("a1 ", one), ("b1 ", two), ("a2", one), ("b2", two)):
        assert t.updates(ev.StepToken(text=text, **ids)) == []
    (first, call) = t.updates(ev.ToolCalled(call_id="c", tool="glob", args={"pattern": "*"}, **two))
    assert (first.session_update, first.content.text) == ("agent_thought_chunk", "[S-02] b1 b2\n\n")
    assert call.session_update == "tool_call"
    (rest, answer) = t.updates(ev.FinalAnswer(text="done", thread_id="T1", goal_id="G1"))
    assert (rest.content.text, answer.content.text) == ("[S-01] a1 a2\n\n", "done")


def test_a_stored_transcript_replays_as_messages_and_tool_calls(tmp_path: Path) -> None:
    from soothe.engine.events import parse_event

    stored = [
        ev.RunStarted(text="what is in a.txt?", thread_id="T1"),
        ev.ToolCalled(call_id="c1", tool="read_file", args={"path": "a.txt"}, **IDS),
        ev.ToolResult(call_id="c1", tool="read_file", output="hello", **IDS),
        ev.StepToken(text="a.txt says hello", **IDS),
        ev.FinalAnswer(text="It says hello.", thread_id="T1", goal_id="G1"),
        ev.ClarificationRequested(request_id="r1", questions=["Which one?"], **IDS),
        ev.ClarificationAnswered(request_id="r1", outcome="answered", answers=["b"], **IDS),
        ev.RunFailed(error="interrupted by the user", kind="interrupted", thread_id="T1"),
    ]
    replay = Translator(tmp_path, lambda goal: None, replay=True)
    sent = [
        u
        for event in stored
        for u in replay.updates(parse_event({"event": event.model_dump(mode="json")}["event"]))
    ]
    shown = [(u.session_update, getattr(getattr(u, "content", None), "text", None)) for u in sent]
    assert shown[0] == ("user_message_chunk", "what is in a.txt?")
    assert [u.session_update for u in sent[1:3]] == ["tool_call", "tool_call_update"]
    assert (sent[1].title, sent[2].status, sent[2].content[0].content.text) == (
        "read_file a.txt",
        "completed",
        "hello",
    )
    assert shown[3:] == [
        ("agent_thought_chunk", "[S-01] a.txt says hello\n\n"),
        ("agent_message_chunk", "It says hello."),
        ("agent_message_chunk", "Which one?\n\nReply to answer."),
        ("user_message_chunk", "b"),
        ("agent_thought_chunk", "(the run was interrupted)\n"),
    ]


def test_only_protocol_frames_reach_stdout() -> None:
    """A stray print, or a child process writing to fd 1, lands on stderr."""
    import subprocess
    import sys

    code = (
        "import os, subprocess, sys\n"
        "from soothe.frontends.acp.streams import protect_stdout\n"
        "fd = protect_stdout()\n"
        "print('stray print')\n"
        "subprocess.run(['echo', 'child output'])\n"
        'os.write(fd, b\'{"jsonrpc": "2.0"}\\n\')\n'
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout == '{"jsonrpc": "2.0"}\n'
    assert done.stderr.splitlines() == ["stray print", "child output"]


def test_a_step_whose_text_is_the_answer_is_sent_once(tmp_path: Path) -> None:
    t = _translator(tmp_path)
    assert t.updates(ev.StepToken(text="It is  4.\n", **IDS)) == []
    (answer,) = t.updates(ev.FinalAnswer(text="It is 4.", thread_id="T1", goal_id="G1"))
    assert (answer.session_update, answer.content.text) == ("agent_message_chunk", "It is 4.")
