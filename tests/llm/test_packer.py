"""The packer (issue 31, Deliver 2 and 3): every request fits the window, a cut prompt is
noticed (model.context) and sent again smaller once, re-asks do not grow, and a prompt
that cannot fit fails with one line naming the window and the setting.

Through the real ChatOllama client against the fake Ollama, which cuts an over-long
prompt silently from the front and reports what it kept as ``prompt_eval_count``."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from soothe.engine.bus import EventBus
from soothe.engine.config import ModelSettings
from soothe.engine.events import ModelContext, Usage
from soothe.engine.llm import packer
from soothe.engine.llm.errors import LLMError, ModelErrorKind
from soothe.engine.llm.hub import ModelHub
from soothe.engine.llm.packer import (
    HISTORY,
    REQUEST,
    RULES,
    WORKSPACE,
    Part,
    Prompt,
    TokenEstimator,
    fit_messages,
    looks_truncated,
    pack_parts,
)
from soothe.engine.llm.structured import CUT_FEEDBACK
from tests.fakes import FakeOllamaModel, FakeOllamaServer
from tests.fakes._base import FakeReply
from tests.llm.conftest import Answer

SYSTEM = "You are the planner. RULE-ONE: reply with JSON only. " * 4
README = "".join(f"README line {i}: the project does many things.\n" for i in range(5000))
"""About 200 KB."""


class Seen:
    """The events a hub published."""

    def __init__(self, bus: EventBus) -> None:
        self.events: list[Any] = []
        publish = bus.publish

        def spy(event: Any) -> None:
            self.events.append(event)
            publish(event)

        bus.publish = spy  # type: ignore[method-assign]

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def hub_for(server: FakeOllamaServer, num_ctx: int, **settings: Any) -> tuple[ModelHub, Seen]:
    bus = EventBus()
    seen = Seen(bus)
    hub = ModelHub(
        ModelSettings(name="llama3.2", base_url=server.url, num_ctx=num_ctx, timeout=5, **settings),
        bus,
    )
    hub.backoff_s = 0.01
    return hub, seen


def big_request() -> list[Any]:
    return [SystemMessage(SYSTEM), HumanMessage(f"{README}\nQUESTION: what does it do?")]


# --- parts and the safety net (no server) ----------------------------------------------------


def test_parts_fill_in_priority_order_and_keep_their_own_order() -> None:
    parts = [
        Part("Goal", "Summarise README.md", REQUEST, floor=100),
        Part("Conversation so far", "".join(f"turn {i}\n" for i in range(400)), HISTORY, "tail"),
        Part("Context", "x" * 5000, WORKSPACE),
        Part("", "RULES: reply with JSON.", RULES),
    ]
    packed = pack_parts(parts, 1200)
    text = packed.text
    assert len(text) <= 1200
    assert text.startswith("## Goal\nSummarise README.md")
    assert text.endswith("RULES: reply with JSON."), "rules kept whole, in their place"
    assert "turn 399" in text and "turn 0\n" not in text, "the history keeps its newest turns"
    assert packed.dropped == ["Context"], "the workspace facts go first"
    assert packed.clipped == ["Conversation so far"]


def test_the_net_keeps_system_and_request_and_drops_old_tool_history_first() -> None:
    est = TokenEstimator()
    calls = []
    for i in range(6):
        call_id = f"c{i}"
        calls += [
            AIMessage(
                "", tool_calls=[{"name": "read_file", "args": {"path": f"f{i}"}, "id": call_id}]
            ),
            ToolMessage(f"OUTPUT-{i} " + "y" * 3000, tool_call_id=call_id),
        ]
    messages = [SystemMessage(SYSTEM), HumanMessage("Step S-01: read the files"), *calls]
    fitted = fit_messages(messages, 1000, est)
    assert fitted.tokens <= 1000 and est.messages(fitted.messages) <= 1000
    assert fitted.messages[0].content == SYSTEM, "the system message is whole"
    assert fitted.messages[1].content == "Step S-01: read the files"
    last = fitted.messages[-1]
    assert last.content.startswith("OUTPUT-5"), "the newest tool result is kept"
    assert "OUTPUT-0" not in " ".join(str(m.content) for m in fitted.messages)
    ids = {m.tool_call_id for m in fitted.messages if isinstance(m, ToolMessage)}
    asked = {c["id"] for m in fitted.messages if isinstance(m, AIMessage) for c in m.tool_calls}
    assert ids <= asked, "no tool result is left without its call"
    assert len(messages) == 14 and messages[2].tool_calls, "the caller's list is unchanged"


def test_a_prompt_that_cannot_fit_at_its_minimum_overflows() -> None:
    with pytest.raises(packer.Overflow) as caught:
        fit_messages([SystemMessage("rule " * 2000), HumanMessage("hi")], 500, TokenEstimator())
    assert caught.value.needed > 500
    err = packer.overflow_error(2900, 2048, "model.num_ctx")
    assert err.kind == ModelErrorKind.context_overflow
    assert str(err) == (
        "the prompt needs ~2,900 tokens but the window is 2,048 (model.num_ctx): "
        "raise model.num_ctx"
    )


def test_a_small_count_is_not_a_cut_and_does_not_calibrate() -> None:
    est = TokenEstimator()
    chars = 16_000  # ~4,000 tokens
    # a cached prefix: only the new tokens counted (ollama #3427)
    assert not looks_truncated(chars, 2, 300, 8192, est)
    assert not est.calibrate(chars, 2, 300)
    assert est.ratio == packer.CHARS_PER_TOKEN
    # cut at a 2,048 window: near that ceiling and well below the estimate
    assert looks_truncated(chars, 2, 2048, 2048, est)
    # evaluated whole: calibrates toward 4 chars per token, never past it
    assert est.calibrate(chars, 2, 4000 + 16)
    assert packer.CHARS_PER_TOKEN < est.ratio <= packer.MAX_RATIO


# --- through ChatOllama and the fake Ollama ------------------------------------------------


@pytest.mark.parametrize("num_ctx", [2048, 8192])
async def test_no_request_leaves_the_hub_over_the_window(num_ctx: int) -> None:
    with FakeOllamaServer(["ok"] * 3) as server:
        hub, seen = hub_for(server, num_ctx)
        reply = await hub.stream_text(big_request(), purpose="step")
        result = await hub.structured(
            Prompt(SYSTEM, [Part("", README, REQUEST, floor=600)]), Answer, retries=0
        )
        log = server.chat_log
    assert reply.text == "ok" and result.value is None  # "ok" is no Answer
    assert [r.truncated for r in log] == [False, False], "the server cut nothing"
    assert all(r.sent_tokens <= num_ctx for r in log), [r.sent_tokens for r in log]
    sent = log[0].sent["messages"]
    assert sent[0]["content"] == SYSTEM, "the rules arrive whole"
    assert sent[-1]["content"].endswith("QUESTION: what does it do?"), "so does the question"
    assert [u.window for u in seen.of(Usage)] == [num_ctx, num_ctx]
    assert not seen.of(ModelContext)


async def test_a_server_that_holds_less_than_asked_is_noticed_and_repacked_once() -> None:
    """We ask for 2,048; the server loads 1,024 (e.g. OLLAMA_CONTEXT_LENGTH) and cuts."""
    model = FakeOllamaModel("llama3.2", max_num_ctx=1024)
    with FakeOllamaServer(["garbled", "ok", "fine"], models=[model]) as server:
        hub, seen = hub_for(server, 2048)
        pieces: list[str] = []
        reply = await hub.stream_text(big_request(), on_token=pieces.append)
        later = await hub.stream_text(big_request())
        log = server.chat_log
    assert [r.truncated for r in log] == [True, False, False]
    first, retry, next_call = log
    assert retry.sent_tokens < first.sent_tokens and retry.sent_tokens <= 1024
    assert next_call.sent_tokens <= 1024, "the ceiling is learned for later calls"
    assert reply.text == "ok" and later.text == "fine"
    (event,) = seen.of(ModelContext)
    assert (event.action, event.window, event.evaluated_tokens) == ("repacked", 2048, 1024)
    assert event.sent_tokens > 1024
    assert "did not fit" in "".join(pieces), "the screen says why the reply starts again"


async def test_a_cut_prompt_whose_minimum_does_not_fit_fails_in_one_line() -> None:
    """The server holds 1,024 tokens; the rules alone need more: one line, no third try."""
    model = FakeOllamaModel("llama3.2", max_num_ctx=1024)
    with FakeOllamaServer(["garbled"] * 3, models=[model]) as server:
        hub, seen = hub_for(server, 2048)
        request = [SystemMessage("rule " * 800), HumanMessage("Q " * 1000)]
        with pytest.raises(LLMError) as caught:
            await hub.stream_text(request)
        log = server.chat_log
    assert caught.value.kind == ModelErrorKind.context_overflow
    message = str(caught.value)
    assert "\n" not in message
    assert "kept only 1,024 of the window of 2,048 (model.num_ctx)" in message
    assert [r.truncated for r in log] == [True]
    (event,) = seen.of(ModelContext)
    assert (event.action, event.window, event.evaluated_tokens) == ("failed", 2048, 1024)


async def test_a_prompt_over_the_window_at_its_minimum_is_never_sent() -> None:
    with FakeOllamaServer(["never"]) as server:
        hub, _ = hub_for(server, 2048)
        with pytest.raises(LLMError) as caught:
            await hub.stream_text([SystemMessage("rule " * 3000), HumanMessage("hi")])
        assert server.chat_log == []
    assert caught.value.kind == ModelErrorKind.context_overflow
    assert str(caught.value).startswith("the prompt needs ~")
    assert str(caught.value).endswith(
        "but the window is 2,048 (model.num_ctx): raise model.num_ctx"
    )


async def test_re_asks_do_not_grow_and_a_cut_reply_is_not_asked_again_unchanged() -> None:
    prose = "I am not sure what you want. " * 40
    replies = [FakeReply(text=prose), FakeReply(text=prose), FakeReply(text=prose)]
    with FakeOllamaServer(replies) as server:
        hub, _ = hub_for(server, 2048, num_predict={"structured": 40})
        hub.estimator.ratio, hub.estimator.samples = packer.MAX_RATIO, 8  # settled
        request = [SystemMessage(SYSTEM), HumanMessage(f"{README[:20000]}\nClassify this.")]
        result = await hub.structured(request, Answer, retries=2)
        log = server.chat_log
    assert result.value is None and result.attempts == 3
    sizes = [r.sent_tokens for r in log]
    assert all(r.sent_tokens <= 2048 for r in log)
    assert sizes[2] <= sizes[1], f"a re-ask never grows: {sizes}"
    third = log[2].sent["messages"]
    assert [m["role"] for m in third] == ["system", "user", "assistant", "user"], (
        "only the last echo and its feedback"
    )
    assert CUT_FEEDBACK in third[-1]["content"], "a reply cut at its limit: asked to be shorter"
    assert result.context.startswith("the prompt was clipped to fit the context window of 2,048")


async def test_a_plan_that_fails_on_a_clipped_prompt_names_the_window() -> None:
    from soothe.engine.loop.planner import LLMPlanner, PlanningContext, PlanningFailed

    prose = ["I'm not sure what you would like me to do here."] * 3
    with FakeOllamaServer(prose) as server:
        hub, _ = hub_for(server, 2048)
        ctx = PlanningContext(goal="Summarise README.md", projection=README)
        with pytest.raises(PlanningFailed) as caught:
            await LLMPlanner(hub).generate(ctx)
        log = server.chat_log
    assert all(not r.truncated and r.sent_tokens <= 2048 for r in log)
    message = str(caught.value)
    assert message.startswith("could not get a valid PlanGeneration from the model after 3 tries")
    assert message.endswith(
        "the prompt was clipped to fit the context window of 2,048 tokens (model.num_ctx) "
        "(a larger window may help)"
    )
    from soothe.engine.loop import prompts

    system, user = (m["content"] for m in log[0].sent["messages"])
    assert system.startswith(prompts.PLANNER_SYSTEM), "the rules and schema arrive whole"
    assert user.startswith("## Goal\nSummarise README.md")
    assert user.endswith(prompts.GENERATE_RULES)
    assert "characters cut to fit the context window" in user, "the projection was clipped"


def test_a_tight_step_is_offered_only_the_tools_it_may_need() -> None:
    from soothe.engine.agent.read_only import change_tools_asked
    from soothe.engine.agent.tools import tool_specs

    est = TokenEstimator()
    specs = tool_specs()
    every = [s["function"]["name"] for s in specs]

    def offered(text: str, budget: int) -> list[str]:
        chosen = packer.select_tools(specs, text, budget, est, change_tools_asked(text))
        return [s["function"]["name"] for s in chosen]

    assert offered("Add a docstring to store.py", 6000) == every, "room enough: all of them"
    edit = offered("Add a docstring to store.py", 1400)
    assert {"edit_file", "write_file", "read_file"} <= set(edit) and "run_shell" not in edit
    read = offered("Summarise README.md", 1400)
    assert set(read) <= {"read_file", "list_dir", "glob", "grep"} and "read_file" in read
    run = offered("Run the tests", 1400)
    assert "run_shell" in run and "write_file" not in run
    assert est.tools([s for s in specs if s["function"]["name"] in read]) <= 0.4 * 1400


async def test_a_count_of_only_the_uncached_rest_is_not_a_cut() -> None:
    """Some Ollama versions count only what they evaluated anew when the prompt's prefix
    was cached (ollama #3427): a step's second call, whose new tool result alone is over
    half the window, is reported at about that result. Not a cut: nothing re-sent."""
    system, request = SystemMessage("S" * 1000), HumanMessage("H" * 600)
    call = AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a.txt"}, "id": "c1"}])
    result = ToolMessage("T" * 4150, tool_call_id="c1")
    with FakeOllamaServer(["ok", FakeReply(text="done", usage=(1060, 3))]) as server:
        hub, seen = hub_for(server, 2048)
        hub.estimator.ratio, hub.estimator.samples = packer.MAX_RATIO, 8  # settled
        await hub.stream_text([system, request])
        reply = await hub.stream_text([system, request, call, result])
        log = server.chat_log
    assert reply.text == "done"
    assert len(log) == 2, "not sent again"
    assert not seen.of(ModelContext)
    assert hub.context_window() == (2048, "model.num_ctx"), "no ceiling learned"


async def test_an_openai_compatible_server_gets_prompts_within_the_window_it_reports() -> None:
    """vLLM reports max_model_len in /v1/models (slice W reads it); the packer fits to it."""
    from soothe.engine.llm.profile import fetch_model_info
    from tests.fakes import FakeOpenAIServer
    from tests.fakes._base import prompt_chars

    with FakeOpenAIServer(["ok"], flavor="vllm", window=2048) as server:
        settings = ModelSettings(provider="openai", name="llama3.2", base_url=f"{server.url}/v1")
        hub = ModelHub(settings, None)
        hub.set_model_info(await fetch_model_info(settings))
        reply = await hub.stream_text(big_request())
        (body,) = server.chat_requests()
    assert reply.text == "ok"
    assert hub.context_window()[0] == 2048
    assert prompt_chars(body) / 4 + 512 <= 2048, "the prompt and the reply's reserve fit"
    assert body["messages"][0]["content"] == SYSTEM


async def test_a_long_request_keeps_its_question_when_clipped() -> None:
    from soothe.engine.loop.planner import LLMPlanner

    pasted = "Soothe runs goal-driven agents on local models. " * 800
    request = f"Here is a text. {pasted}\nWHICH MODELS DOES IT RUN ON?"
    reply = '{"label": "quiz", "answer": "Local ones.", "reason": "general"}'
    with FakeOllamaServer([reply]) as server:
        hub, _ = hub_for(server, 2048)
        result = await LLMPlanner(hub).classify(request)
        (record,) = server.chat_log
    assert result.answer == "Local ones."
    assert not record.truncated and record.sent_tokens <= 2048
    user = record.sent["messages"][-1]["content"]
    assert user.startswith("Here is a text.") and user.endswith("WHICH MODELS DOES IT RUN ON?")
    assert "characters cut to fit the context window" in user


async def test_a_second_cut_fails_the_call_in_one_line() -> None:
    """A server that cuts the smaller retry too (its counts scripted: it holds even less
    than the first cut showed): a 'failed' model.context and one line, no third try."""
    replies = [FakeReply(text="garbled", usage=(1024, 3)), FakeReply(text="again", usage=(600, 3))]
    with FakeOllamaServer(replies) as server:
        hub, seen = hub_for(server, 2048)
        hub.estimator.ratio, hub.estimator.samples = packer.MAX_RATIO, 8  # settled
        with pytest.raises(LLMError) as caught:
            await hub.stream_text([SystemMessage("S" * 1000), HumanMessage("Q " * 3000)])
        log = server.chat_log
    assert len(log) == 2 and log[1].sent_tokens < log[0].sent_tokens
    assert [e.action for e in seen.of(ModelContext)] == ["repacked", "failed"]
    assert caught.value.kind == ModelErrorKind.context_overflow
    assert "but the server kept only 600 of the window of 2,048 (model.num_ctx)" in str(
        caught.value
    )
