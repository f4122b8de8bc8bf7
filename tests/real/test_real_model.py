"""End to end with a real small model (opt-in: `make test-real`, marker `real_model`).

SmolLM2-135M runs in llama.cpp behind `OllamaShim`; the real `ChatOllama` client and the
real `soothe -p` talk to it over loopback. The tests check structure (the wire format, a
valid plan, a parsed tool call, a loop that ends, an answer on stdout), not wisdom: a
135M model's answers are weak, only their shape is reliable.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from tests.real.shim import (
    GRAMMAR_ERROR,
    OllamaShim,
    cut_tokens,
    grammar_bound_problems,
    parse_tool_reply,
    to_model_messages,
    tool_block_start,
    tool_mode_schema,
)

pytestmark = pytest.mark.real_model

CLI_TIMEOUT = 600
"""Seconds a whole `soothe -p` run may take before the test gives up on it."""

LIST_DIR = {
    "type": "function",
    "function": {
        "name": "list_dir",
        "description": "List the entries of a directory in the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "maxLength": 200}},
            "required": ["path"],
        },
    },
}
READ_FILE = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a text file.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "maxLength": 200},
                "offset": {"type": "integer"},
            },
            "required": ["path"],
        },
    },
}


class City(BaseModel):
    name: str = Field(max_length=40)
    country: str = Field(max_length=40)
    population_millions: float


def chat_model(shim: OllamaShim, **kwargs: Any) -> Any:
    from langchain_ollama import ChatOllama

    return ChatOllama(
        model="smollm2",
        base_url=shim.base_url,
        temperature=0.2,
        client_kwargs={"timeout": 120},
        **kwargs,
    )


# --- the shim's translation (no model) ---------------------------------------------------


def test_tool_mode_schema_has_one_branch_per_tool_and_an_answer() -> None:
    schema = tool_mode_schema([LIST_DIR, READ_FILE])
    branches = schema["anyOf"]
    assert [b["properties"]["tool"]["const"] for b in branches] == [
        "list_dir",
        "read_file",
        "answer",
    ]
    assert branches[0]["properties"]["arguments"]["required"] == ["path"]
    assert branches[2]["properties"]["answer"]["maxLength"] <= 400


def test_the_shim_finds_the_bounds_llama_cpp_refuses_and_changes_nothing() -> None:
    schema = {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "maxLength": 2000},
            "ok": {"type": "string", "maxLength": 1999},
            "items": {"type": "array", "maxItems": 4000, "items": {"type": "number"}},
        },
    }
    before = json.dumps(schema, sort_keys=True)
    assert grammar_bound_problems(schema) == [
        "$.properties.answer.maxLength=2000",
        "$.properties.items.maxItems=4000",
    ]
    assert json.dumps(schema, sort_keys=True) == before


def test_tool_reply_becomes_ollama_tool_calls_or_content() -> None:
    call = parse_tool_reply('{"tool": "list_dir", "arguments": {"path": "."}}', [LIST_DIR])
    assert call.content == ""
    assert call.tool_calls[0]["function"] == {
        "index": 0,
        "name": "list_dir",
        "arguments": {"path": "."},
    }
    assert call.tool_calls[0]["id"].startswith("call_")
    answer = parse_tool_reply('{"tool": "answer", "answer": "two files"}', [LIST_DIR])
    assert (answer.content, answer.tool_calls) == ("two files", [])
    cut = parse_tool_reply('{"tool": "answer", "answer": "two fi', [LIST_DIR])
    assert cut.content == '{"tool": "answer", "answer": "two fi'
    unknown = parse_tool_reply('{"tool": "rm", "arguments": {}}', [LIST_DIR])
    assert unknown.tool_calls == []


def test_history_shows_tool_calls_and_results_in_the_reply_format() -> None:
    turns = to_model_messages(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is here?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "list_dir", "arguments": {"path": "."}}}],
            },
            {"role": "tool", "content": "a.txt\nb.txt"},
        ],
        [LIST_DIR],
    )
    assert [t["role"] for t in turns] == ["system", "user", "assistant", "user"]
    assert turns[0]["content"].startswith("Be brief.\n\nYou can call tools.")
    assert "- list_dir(path)" in turns[0]["content"]
    assert json.loads(turns[2]["content"]) == {"tool": "list_dir", "arguments": {"path": "."}}
    assert turns[3]["content"] == "Result of the tool:\na.txt\nb.txt"


# --- the shim with the real model and the real ChatOllama client ------------------------


def test_chatollama_streams_text_with_usage(shim: OllamaShim) -> None:
    chunks = list(chat_model(shim).stream("Say hello in one short sentence."))
    text = "".join(c.text for c in chunks)
    assert text.strip()
    assert sum(1 for c in chunks if c.text) > 1, "the reply should arrive in pieces"
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total.response_metadata["done_reason"] in ("stop", "length")
    usage = total.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 5
    assert usage["output_tokens"] > 0
    assert shim.calls[-1].mode == "text"


def test_chatollama_structured_output_is_valid_json_for_the_schema(shim: OllamaShim) -> None:
    prompt = "Give the name, country and population in millions of the capital of Italy."
    raw = chat_model(shim).bind(format=City.model_json_schema()).invoke(prompt)
    city = City.model_validate_json(raw.text)  # strict: no repair, no lenient parse
    assert city.name and city.country
    assert raw.response_metadata["done_reason"] == "stop"

    via_langchain = chat_model(shim).with_structured_output(City, method="json_schema")
    assert isinstance(via_langchain.invoke(prompt), City)

    any_json = chat_model(shim, format="json").invoke(
        'Reply with a JSON object with one key "city" whose value is the capital of France.'
    )
    assert any_json.response_metadata["done_reason"] == "stop", any_json.text
    assert isinstance(json.loads(any_json.text), dict | list)


TOOL_SEEDS = (1, 2, 3)
"""Seeds tried in tool mode. Whether SmolLM2-135M calls the tool or answers in prose is
its wisdom, not our structure: on this build it answered in prose on every seed tried
(1-5, and four phrasings), so the test checks the shape of each reply and counts calls."""
_tool_mode: dict[str, int] = {"calls": 0, "prose": 0}


def test_chatollama_tool_mode_gives_a_parsed_call_or_an_answer(shim: OllamaShim) -> None:
    from langchain_core.messages import HumanMessage, ToolMessage

    question = HumanMessage("Use the list_dir tool to list the files in the folder '.'.")
    for seed in TOOL_SEEDS:
        model = chat_model(shim, seed=seed).bind_tools([LIST_DIR, READ_FILE])
        first = model.invoke([question])
        assert shim.calls[-1].mode == "tools"
        assert not first.invalid_tool_calls, first.invalid_tool_calls
        if not first.tool_calls:
            assert first.text.strip(), "no tool call and no text either"
            _tool_mode["prose"] += 1
            continue
        _tool_mode["calls"] += 1
        call = first.tool_calls[0]
        assert call["name"] in ("list_dir", "read_file")
        assert isinstance(call["args"], dict)
        assert isinstance(call["args"].get("path"), str)
        result = ToolMessage("notes.txt\nplan.md", tool_call_id=call["id"])
        second = model.invoke([question, first, result])
        assert second.tool_calls or second.text.strip()
        assert shim.calls[-1].mode == "tools"


def test_a_format_bound_of_2000_fails_the_request_as_in_ollama(shim: OllamaShim) -> None:
    from ollama import ResponseError

    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "maxLength": 2000}},
        "required": ["answer"],
    }
    with pytest.raises(ResponseError) as info:
        chat_model(shim).bind(format=schema).invoke("Say hi.")
    assert info.value.status_code == 500
    assert GRAMMAR_ERROR in str(info.value)


def test_unknown_model_is_a_404_as_in_ollama(shim: OllamaShim) -> None:
    from langchain_ollama import ChatOllama
    from ollama import ResponseError

    model = ChatOllama(model="llama3.2", base_url=shim.base_url, client_kwargs={"timeout": 10})
    with pytest.raises(ResponseError) as info:
        model.invoke("hi")
    assert info.value.status_code == 404
    assert "llama3.2" in str(info.value)


def test_the_runner_cut_keeps_num_keep_then_the_newest_tokens() -> None:
    tokens = list(range(10))
    assert cut_tokens(tokens, 10, 4) == tokens
    assert cut_tokens(tokens, 6, 2) == [0, 1, 6, 7, 8, 9]
    assert cut_tokens(tokens, 3, 5) == [0, 1, 9]  # num_keep leaves room for one token


def test_a_tool_result_stays_with_its_call() -> None:
    call = {"function": {"name": "read_file", "arguments": {"path": "a"}}}
    messages = [
        {"role": "system", "content": "s"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "r1"},
        {"role": "tool", "content": "r2"},
        {"role": "user", "content": "u"},
    ]
    assert [tool_block_start(messages, i) for i in range(5)] == [0, 1, 1, 1, 4]


def test_the_window_is_the_num_ctx_sent_and_an_overlong_prompt_is_cut_silently(
    shim: OllamaShim,
) -> None:
    from langchain_core.messages import HumanMessage, SystemMessage

    rules = "Rule: always answer in French, in one word. " * 80  # ~800 tokens
    reply = chat_model(shim, num_ctx=512, num_predict=8).invoke(
        [SystemMessage(rules), HumanMessage("Say hi.")]
    )
    cut = shim.calls[-1]
    assert shim.model.loads[-1] == 512, "the model is reloaded with the num_ctx sent"
    assert (cut.num_ctx, cut.truncated) == (512, True)
    assert cut.sent_tokens > 512
    # No error: the only sign is prompt_eval_count, which is the window, not the prompt.
    assert reply.response_metadata["prompt_eval_count"] == 512
    assert reply.response_metadata["done_reason"] in ("stop", "length")
    chat_model(shim, num_predict=4).invoke("Say hi.")
    assert shim.calls[-1].num_ctx == 4096, "no num_ctx: Ollama's default window"
    chat_model(shim, num_ctx=1_000_000, num_predict=4).invoke("Say hi.")
    assert shim.calls[-1].num_ctx == shim.model.trained_ctx, "capped at the trained context"
    assert not shim.calls[-1].truncated


def test_api_show_is_ollamas_and_think_is_refused(shim: OllamaShim) -> None:
    import ollama

    shown = ollama.Client(host=shim.base_url, timeout=30).show("smollm2")
    assert shown.capabilities == ["completion", "tools"]
    assert shown.details is not None and shown.details.parameter_size == "135M"
    assert shown.modelinfo is not None
    arch = shown.modelinfo["general.architecture"]
    assert shown.modelinfo[f"{arch}.context_length"] == shim.model.trained_ctx == 8192
    with pytest.raises(ollama.ResponseError) as refused:
        chat_model(shim, reasoning=True).invoke("Say hi.")
    assert (refused.value.status_code, refused.value.error) == (
        400,
        '"smollm2" does not support thinking',
    )
    assert chat_model(shim, reasoning=False, num_predict=4).invoke("Say hi.").content


# --- soothe itself, headless, against the shim -------------------------------------------


def run_soothe(
    shim: OllamaShim, env: dict[str, str], tmp_path: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "soothe",
        *args,
        "--provider",
        "ollama",
        "--base-url",
        shim.base_url,
        "--model",
        "smollm2",
        "--data-dir",
        str(tmp_path / "soothe-data"),
    ]
    if args[0] != "doctor":  # subcommands take no --workspace
        command += ["--workspace", str(workspace)]
    return subprocess.run(
        command,
        env=env,
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def describe(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"


def is_event_line(line: str) -> bool:
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    return isinstance(obj, dict) and "type" in obj and "seq" in obj


def test_doctor_accepts_the_shim(
    shim: OllamaShim, soothe_env: dict[str, str], tmp_path: Path
) -> None:
    proc = run_soothe(shim, soothe_env, tmp_path, "doctor")
    assert proc.returncode == 0, describe(proc)
    assert "smollm2" in proc.stdout


def test_headless_quiz_prints_an_answer(
    shim: OllamaShim, soothe_env: dict[str, str], tmp_path: Path
) -> None:
    before = len(shim.calls)
    proc = run_soothe(shim, soothe_env, tmp_path, "-p", "What is the capital of France?")
    assert proc.returncode == 0, describe(proc)
    assert proc.stdout.strip(), describe(proc)
    assert not any(is_event_line(line) for line in proc.stdout.splitlines()), (
        "without --json, stdout carries the answer, not events"
    )
    assert len(shim.calls) > before, "the answer must come from the model"


def test_headless_skill_task_plans_runs_its_steps_and_answers(
    shim: OllamaShim, soothe_env: dict[str, str], tmp_path: Path
) -> None:
    """The agentic path, end to end: a skill invocation (always a task, never a quiz) goes
    plan -> steps -> answer. Whether a 135M model calls the tool the skill names is its
    wisdom, not our structure: the loader's listing may already be enough for it (in the
    runs here it mostly answered without one). So: every tool call it makes is a known
    tool and runs; the loop ends; one final answer. The parsed tool call itself is
    checked above, at the ChatOllama level."""
    skill = Path(soothe_env["XDG_CONFIG_HOME"]) / "soothe" / "skills" / "files" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("List the files of the workspace\n\nCall list_dir with path '.'.\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("buy milk\n")
    (workspace / "plan.md").write_text("# Plan\n1. rest\n")
    proc = run_soothe(
        shim,
        soothe_env,
        tmp_path,
        "-p",
        "/skill:files List the files in this folder",
        "--yes",
        "--clarify",
        "auto",
        "--json",
    )
    assert proc.returncode in (0, 1), describe(proc)
    from soothe.engine.agent.tools import tool_summaries
    from soothe.engine.events import parse_event

    events = [parse_event(json.loads(line)) for line in proc.stdout.splitlines() if line.strip()]
    types = [e.type for e in events]
    plans = [e for e in events if e.type == "plan.created"]
    assert plans, f"no plan.created in {types}"
    assert all(plan.steps for plan in plans)
    known = {name for name, _ in tool_summaries()}
    calls = [e for e in events if e.type == "step.tool_call"]
    assert {c.tool for c in calls} <= known
    results = {e.call_id for e in events if e.type == "step.tool_result"}
    assert {c.call_id for c in calls} <= results, "every parsed tool call must have run"
    ends = {e.to_status for e in events if e.type == "goal.status_changed"}
    assert {"completed", "failed"} & ends, f"the loop did not end: {types}"
    if proc.returncode == 0:
        assert "run.finished" in types and "run.failed" not in types
        answers = [e for e in events if e.type == "answer.final"]
        assert len(answers) == 1, types
        assert answers[0].text.strip()
    else:
        assert types[-1] == "run.failed", types  # an honest failure


# --- the four file tasks: grounded, or an honest failure ---------------------------------

LABELS = {"quiz", "trivial", "simple", "complex", "label", "answer", "reason"}
FILE_TASKS = [
    ("list", "List the files in this folder", ("notes.txt", "README.md")),
    ("summarize", "Summarize README.md", ("greeting", "greets", "hello")),
    ("first-item", "Read notes.txt and tell me the first item", ("tidy the docs",)),
    (
        "multi-step",
        "Read notes.txt, then list the files in this folder, then say how many files there are",
        ("tidy the docs", "notes.txt", "3", "three"),
    ),
]
_quality: list[dict[str, Any]] = []


def _schema_fragment(text: str) -> bool:
    low = text.strip().lower()
    return low in LABELS or low.startswith("{") or "enum" in low or '"type"' in low


@pytest.mark.parametrize(
    ("key", "request_text", "facts"), FILE_TASKS, ids=[t[0] for t in FILE_TASKS]
)
def test_file_tasks_are_grounded_or_fail_honestly(
    shim: OllamaShim,
    soothe_env: dict[str, str],
    tmp_path: Path,
    key: str,
    request_text: str,
    facts: tuple[str, ...],
) -> None:
    from soothe.engine.events import parse_event

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("- tidy the docs\n- fix the build\n- ship it\n")
    (workspace / "README.md").write_text("# Hello\n\nThis project prints a friendly greeting.\n")
    (workspace / "plan.md").write_text("# Plan\n1. rest\n")
    first_call = len(shim.calls)
    proc = run_soothe(
        shim, soothe_env, tmp_path, "-p", request_text, "--yes", "--clarify", "auto", "--json"
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    events = [parse_event(json.loads(line)) for line in lines if is_event_line(line)]
    types = [e.type for e in events]
    routes = [e.label for e in events if e.type == "classification"]
    calls = [e for e in events if e.type == "step.tool_call"]
    per_step: dict[tuple[str, str, str], int] = {}
    for c in calls:
        k = (str(c.step_id), c.tool, json.dumps(c.args, sort_keys=True))
        per_step[k] = per_step.get(k, 0) + 1
    distinct = len({(c.tool, json.dumps(c.args, sort_keys=True)) for c in calls})
    answers = [e.text for e in events if e.type == "answer.final"]
    answer = answers[-1] if answers else ""
    echoes = proc.stdout.count("(raw tool output; the model gave no answer)")
    repeats = proc.stdout.count("not run again: the same call")
    grounded = any(f.lower() in answer.lower() for f in facts)
    sent = shim.calls[first_call:]
    if proc.returncode == 0:
        verdict = "grounded" if grounded else "nonsense"
    else:
        verdict = "honest failure" if "run.failed" in types else f"exit {proc.returncode}"
    _quality.append(
        {
            "verdict": verdict,
            "windows": ",".join(sorted({str(c.num_ctx) for c in sent})) or "-",
            "cut": sum(1 for c in sent if c.truncated),
            "model_calls": len(sent),
            "task": key,
            "exit": proc.returncode,
            "route": ",".join(routes) or "-",
            "calls": f"{distinct}/{len(calls)}",
            "echoes": echoes,
            "repeats": repeats,
            "grounded": "yes" if grounded else "no",
            "no_num_predict": sum(1 for c in sent if not c.num_predict),
        }
    )
    assert "quiz" not in routes, f"a file task took the quiz route\n{describe(proc)}"
    assert not _schema_fragment(answer), f"the answer is a label or schema: {answer!r}"
    assert max(per_step.values(), default=0) <= 2, f"an identical call ran 3+ times: {per_step}"
    assert all(c.num_predict for c in sent), "every model call must carry num_predict"
    if proc.returncode == 0:
        assert grounded, f"exit 0 but the answer holds none of {facts}: {answer!r}"
        assert "run.failed" not in types
    else:
        assert proc.returncode == 1, describe(proc)
        assert "run.failed" in types, "a failure ends in run.failed"


def test_print_the_file_task_quality_table(capsys: pytest.CaptureFixture[str]) -> None:
    """Runs last in this module: the per-task table of the runs above (figures only)."""
    if not _quality:
        pytest.skip("no file task ran")
    with capsys.disabled():
        print(
            f"\ntool mode, SmolLM2-135M over ChatOllama: {_tool_mode['calls']} tool calls, "
            f"{_tool_mode['prose']} prose answers on seeds {TOOL_SEEDS}"
        )
        print("\nfile tasks with SmolLM2-135M (distinct/total tool calls):")
        print(
            "  task        exit route      calls  echoes repeats grounded no-num_predict "
            "model-calls window cut verdict"
        )
        for row in _quality:
            print(
                f"  {row['task']:<11} {row['exit']:<4} {row['route']:<10} {row['calls']:<6} "
                f"{row['echoes']:<6} {row['repeats']:<7} {row['grounded']:<8} "
                f"{row['no_num_predict']:<14} {row['model_calls']:<11} {row['windows']:<6} "
                f"{row['cut']:<3} {row['verdict']}"
            )
