"""The window under ``soothe -p``: a prompt the server cut to fit its window (the fake
Ollama loads less than the num_ctx we send, as a server configured below it does) is one
stderr line per ``model.context`` event, whatever stderr is; ``--json`` carries the event
itself."""

from __future__ import annotations

import json

import pytest

from tests.fakes.brain import Brain
from tests.fakes.cli_harness import Env
from tests.fakes.ollama_server import FakeOllamaModel, FakeOllamaServer

REQUEST = "What is the capital of France? " + " ".join(
    f"Context line {i}: the travel notes say Paris has many museums and cafes." for i in range(80)
)
"""About 6,000 characters (~1,900 tokens): fits the 2048 we send, not the 1024 loaded."""

LINE = (
    "soothe: the server cut a prompt to {kept} tokens (window 2048, sent ~{sent}): "
    "re-packed and retried; raise model.num_ctx or shorten the request"
)


@pytest.fixture
def pinned(fake: FakeOllamaServer, monkeypatch: pytest.MonkeyPatch) -> FakeOllamaModel:
    monkeypatch.setenv("SOOTHE_MODEL__NUM_CTX", "2048")
    return fake.add_model(FakeOllamaModel("llama3.2", max_num_ctx=1024))


def test_a_cut_prompt_is_one_stderr_line(
    soothe, brain: Brain, env: Env, fake: FakeOllamaServer, pinned: FakeOllamaModel
) -> None:
    brain.always["Classification"] = {"label": "quiz", "answer": "Paris."}
    result = soothe("-p", REQUEST)
    assert (result.code, result.out) == (0, "Paris.\n"), result.err
    cut = [r for r in fake.chat_log if r.truncated]
    assert len(cut) == 1, [(r.sent_tokens, r.kept_tokens) for r in fake.chat_log]
    notices = [line for line in result.err.splitlines() if line.startswith("soothe: ")]
    assert len(notices) == 1, result.err
    kept = cut[0].kept_tokens
    assert notices[0].startswith(LINE.split("{kept}")[0] + f"{kept} tokens (window 2048, sent ~")
    assert notices[0].endswith("re-packed and retried; raise model.num_ctx or shorten the request")


def test_json_carries_the_event_and_stderr_the_line(
    soothe, brain: Brain, env: Env, fake: FakeOllamaServer, pinned: FakeOllamaModel
) -> None:
    brain.always["Classification"] = {"label": "quiz", "answer": "Paris."}
    result = soothe("-p", REQUEST, "--json")
    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    context = [e for e in events if e["type"] == "model.context"]
    assert len(context) == 1
    event = context[0]
    assert (event["window"], event["action"]) == (2048, "repacked")
    assert event["evaluated_tokens"] == next(r for r in fake.chat_log if r.truncated).kept_tokens
    line = LINE.format(kept=event["evaluated_tokens"], sent=event["sent_tokens"])
    assert [x for x in result.err.splitlines() if x.startswith("soothe: ")] == [line]
    usage = [e for e in events if e["type"] == "usage"]
    assert all(u["window"] for u in usage)


def test_the_line_for_a_second_cut_and_for_an_openai_server() -> None:
    from soothe.engine.events import ModelContext
    from soothe.frontends.headless import context_line

    event = ModelContext(window=8192, sent_tokens=7000, evaluated_tokens=4096, action="failed")
    assert context_line(event, "model.context_window") == (
        "soothe: the server cut a prompt to 4096 tokens (window 8192, sent ~7000): cut again, "
        "the call failed; raise model.context_window or shorten the request"
    )
