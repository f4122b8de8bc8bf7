"""Thinking models through the real ChatOllama client against the fake Ollama: ``think``
only where the model has the capability, reasoning split from the answer (its own field
or inline ``<think>`` tags, live across chunk boundaries), the thinking allowance, and
the run's token cap."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.messages import HumanMessage

from soothe.engine.bus import EventBus
from soothe.engine.config import ModelSettings, RunSettings
from soothe.engine.llm.budget import run_budget
from soothe.engine.llm.errors import LLMError, ModelErrorKind
from soothe.engine.llm.hub import ModelHub
from soothe.engine.llm.profile import ModelInfo, fetch_model_info
from soothe.engine.llm.thinking import ThinkSplitter, Thoughts, split_think, strip_think
from tests.fakes import FakeOllamaModel, FakeOllamaServer, FakeOpenAIServer, FakeReply
from tests.llm.conftest import Answer, fast_hub

Q = [HumanMessage(content="question")]
TRACE = [f"step {i} of my reasoning. " for i in range(30)]


@pytest.fixture
def thinker() -> Iterator[FakeOllamaServer]:
    """A fake Ollama whose only model is a thinking one (a 300-token default trace)."""
    model = FakeOllamaModel("qwen3", thinking=True, default_thinking_tokens=300)
    with FakeOllamaServer(models=[model]) as server:
        yield server


def settings_for(server: FakeOllamaServer, **changes: object) -> ModelSettings:
    return ModelSettings(provider="ollama", name="qwen3", base_url=server.url, timeout=3, **changes)


async def hub_for(settings: ModelSettings, *, show: bool = True) -> ModelHub:
    """A hub as the Session makes it: told what /api/show said (``show``) or not."""
    hub = fast_hub(settings, EventBus())
    if show:
        hub.set_model_info(await fetch_model_info(settings))
    return hub


def sent(server: FakeOllamaServer) -> list[tuple[object, int]]:
    """(think, num_predict) of each chat request; think "-" when it was not sent."""
    return [(b.get("think", "-"), b["options"]["num_predict"]) for b in server.chat_requests()]


# --- the splitter --------------------------------------------------------------------------


def test_the_splitter_takes_tags_that_straddle_chunks() -> None:
    splitter = ThinkSplitter()
    pieces = ["<th", "ink>I add ", "2 and 2</thi", "nk>\n\nIt is", " 4 <b", ">."]
    got = [splitter.feed(p) for p in pieces] + [splitter.flush()]
    assert "".join(a for a, _ in got) == "It is 4 <b>."
    assert "".join(t for _, t in got) == "I add 2 and 2"
    assert all("<" not in t and "think" not in a for a, t in got)


def test_split_think_on_whole_replies() -> None:
    assert split_think("<think>a</think>\n\nb") == ("b", "a")
    assert split_think("<think>cut at the limit") == ("", "cut at the limit")
    # the template put <think> in the prompt: only the closing tag is in the reply
    assert split_think("weighing it up</think>\nFour.") == ("Four.", "weighing it up")
    assert strip_think("no tags at all") == "no tags at all"


def test_thoughts_coalesce_into_lines_or_200_chars() -> None:
    thoughts = Thoughts()
    out = [t for p in ["x" * 50] * 9 if (t := thoughts.add(p)) is not None]
    assert [len(t) for t in out] == [200, 200] and thoughts.take() == "x" * 50
    assert thoughts.add("one line\n") == "one line\n"


# --- think: only to a model that can ------------------------------------------------------


async def test_think_false_for_structured_and_configured_for_steps(
    thinker: FakeOllamaServer,
) -> None:
    hub = await hub_for(settings_for(thinker, think=True))
    assert hub.model_info.capabilities is not None and "thinking" in hub.model_info.capabilities
    thinker.extend([FakeReply(text='{"answer": "4", "kind": "fact"}')])
    result = await hub.structured(Q, Answer)
    assert result.value is not None and result.value.answer == "4"
    thinker.extend([FakeReply(text="Four.", thinking=TRACE)])
    pieces: list[str] = []
    thoughts: list[str] = []
    reply = await hub.stream_text(Q, on_token=pieces.append, on_thinking=thoughts.append)
    assert reply.text == "Four." and "".join(pieces) == "Four."
    assert "".join(thoughts) == "".join(TRACE)
    assert len(thoughts) < len(TRACE)  # coalesced, not one event per token
    assert reply.additional_kwargs["reasoning_content"] == "".join(TRACE)
    # structured: false at its own limit; the step: true, its limit + the allowance
    assert sent(thinker) == [(False, 512), (True, 1024 + 1024)]


async def test_nothing_is_sent_to_a_model_without_the_capability(
    fake_ollama: FakeOllamaServer,
) -> None:
    settings = ModelSettings(
        provider="ollama", name="llama3.2", base_url=fake_ollama.url, timeout=3, think=True
    )
    hub = await hub_for(settings)
    assert hub.model_info.capabilities is not None
    assert "thinking" not in hub.model_info.capabilities
    fake_ollama.extend([FakeReply(text="ok"), FakeReply(text='{"answer": "a", "kind": "fact"}')])
    assert (await hub.stream_text(Q)).text == "ok"  # think: true would be HTTP 400
    assert (await hub.structured(Q, Answer)).value is not None
    assert all("think" not in b for b in fake_ollama.chat_requests())


async def test_think_true_on_a_model_without_it_is_refused_by_the_server(
    fake_ollama: FakeOllamaServer,
) -> None:
    """The double refuses as Ollama does: the hub must never send it."""
    settings = ModelSettings(
        provider="ollama", name="llama3.2", base_url=fake_ollama.url, timeout=3, think=True
    )
    hub = await hub_for(settings)
    hub.set_model_info(ModelInfo(capabilities=("completion", "thinking")))  # a wrong claim
    fake_ollama.extend([FakeReply(text="ok")])
    with pytest.raises(LLMError, match="does not support thinking"):
        await hub.stream_text(Q)


# --- a model that thinks anyway: the allowance, one retry ----------------------------------


async def test_a_reply_cut_while_thinking_is_retried_once_with_the_allowance(
    thinker: FakeOllamaServer,
) -> None:
    """Capabilities unknown (an older server): no think is sent, the model thinks by
    default and its 300-token trace eats a 64-token limit. The call is asked again once
    with the allowance (not unchanged), and later calls get it at once."""
    settings = settings_for(thinker)
    settings.num_predict.step = 64
    hub = await hub_for(settings, show=False)
    thinker.extend([FakeReply(text="Four."), FakeReply(text="Four."), FakeReply(text="Five.")])
    pieces: list[str] = []
    reply = await hub.stream_text(Q, on_token=pieces.append)
    assert reply.text == "Four." and pieces == ["Four."]
    assert (await hub.stream_text(Q)).text == "Five."
    assert sent(thinker) == [("-", 64), ("-", 64 + 1024), ("-", 64 + 1024)]


async def test_a_model_that_thinks_past_the_allowance_is_not_asked_a_third_time(
    thinker: FakeOllamaServer,
) -> None:
    settings = settings_for(thinker, thinking_allowance=100)
    settings.num_predict.step = 64
    hub = await hub_for(settings, show=False)
    thinker.extend([FakeReply(text="Four."), FakeReply(text="Four.")])
    reply = await hub.stream_text(Q)
    assert reply.text == "" and reply.response_metadata["done_reason"] == "length"
    assert len(thinker.chat_requests()) == 2


async def test_a_model_that_ignores_think_false_gets_the_allowance_for_structured_calls(
    thinker: FakeOllamaServer,
) -> None:
    settings = settings_for(thinker)
    settings.num_predict.structured = 64
    hub = await hub_for(settings)
    good = '{"answer": "4", "kind": "fact"}'
    thinker.extend([FakeReply(text=good, think_anyway=True)] * 2)
    result = await hub.structured(Q, Answer)
    assert result.value is not None and result.value.answer == "4"
    assert sent(thinker) == [(False, 64), (False, 64 + 1024)]


# --- inline <think> in the content ---------------------------------------------------------


async def test_inline_think_never_reaches_the_answer(thinker: FakeOllamaServer) -> None:
    hub = await hub_for(settings_for(thinker))
    thinker.extend(
        [
            FakeReply(
                stream_chunks=["The ", "answer ", "is ", "4."],
                thinking=TRACE[:5],
                inline_think=True,
                think_anyway=True,
            )
        ]
    )
    pieces: list[str] = []
    thoughts: list[str] = []
    reply = await hub.stream_text(Q, on_token=pieces.append, on_thinking=thoughts.append)
    assert reply.text == "The answer is 4."
    assert "".join(pieces) == "The answer is 4."
    assert "".join(thoughts) == "".join(TRACE[:5])


async def test_inline_think_is_stripped_from_structured_replies(
    thinker: FakeOllamaServer,
) -> None:
    hub = await hub_for(settings_for(thinker))
    good = '{"answer": "4", "kind": "fact"}'
    thinker.extend([FakeReply(text=good, inline_think="I must answer 4.", think_anyway=True)])
    result = await hub.structured(Q, Answer)
    assert result.value is not None and result.attempts == 1
    assert "<think>" not in result.raw


# --- the run's token cap -------------------------------------------------------------------


async def test_the_token_cap_ends_the_run_at_the_next_request(
    fake_ollama: FakeOllamaServer, ollama_hub: ModelHub
) -> None:
    fake_ollama.extend([FakeReply(text="a", usage=(600, 100)), FakeReply(text="b", usage=(1, 1))])
    with run_budget(RunSettings(max_tokens=1000)) as budget:
        await ollama_hub.stream_text(Q)
        assert budget.tokens == 700
        await ollama_hub.stream_text(Q)  # 700 < 1000: sent
        budget.charge(300, 0)
        with pytest.raises(LLMError) as caught:
            await ollama_hub.stream_text(Q)
    assert caught.value.kind == ModelErrorKind.run_limit
    assert "cap of 1,000 tokens" in str(caught.value) and "run.max_tokens" in str(caught.value)
    assert len(fake_ollama.chat_requests()) == 2


async def test_inline_think_on_an_openai_compatible_server(
    fake_openai: FakeOpenAIServer, openai_hub: ModelHub
) -> None:
    """llama.cpp's server or LM Studio without a reasoning parser: the trace is inline."""
    fake_openai.extend(
        [FakeReply(stream_chunks=["<think>", "count ", "them", "</think>", "\n\nThree."])]
    )
    pieces: list[str] = []
    thoughts: list[str] = []
    reply = await openai_hub.stream_text(Q, on_token=pieces.append, on_thinking=thoughts.append)
    assert (reply.text, "".join(pieces), "".join(thoughts)) == ("Three.", "Three.", "count them")
    assert "think" not in fake_openai.last_chat()


async def test_the_allowance_leaves_the_prompt_half_the_window(
    thinker: FakeOllamaServer,
) -> None:
    """At num_ctx 2048 a step's 1024 + 1024 would leave no room for the prompt: with the
    allowance a limit takes at most half the window. A cut reply whose limit cannot grow
    is not asked again (it would be the same call)."""
    settings = settings_for(thinker, num_ctx=2048, think=True)
    hub = await hub_for(settings)
    assert hub.window.tokens == 2048
    assert (hub.num_predict("step"), hub.num_predict("final"), hub.num_predict("plan")) == (
        1024,
        1536,
        1024,
    )
    settings.num_predict.step = 256
    assert hub.num_predict("step") == 1024  # 256 + 1024, capped at 2048 / 2


async def test_a_cut_while_thinking_whose_limit_cannot_grow_is_not_asked_again(
    thinker: FakeOllamaServer,
) -> None:
    settings = settings_for(thinker, num_ctx=512)
    settings.num_predict.step = 256  # already half the window: the allowance adds nothing
    hub = await hub_for(settings, show=False)
    thinker.extend([FakeReply(text="Four.")] * 2)
    reply = await hub.stream_text(Q)  # the 300-token trace eats the 256
    assert reply.text == "" and reply.response_metadata["done_reason"] == "length"
    assert sent(thinker) == [("-", 256)]
