"""The context window: one rule (window.py) for every provider and source, and what the
servers say about it (profile.fetch_model_info against the fake Ollama and the fake
OpenAI-compatible server in each server's flavour)."""

from __future__ import annotations

from pathlib import Path

import pytest

from soothe.engine.config import ModelSettings, Settings
from soothe.engine.llm.hub import ModelHub
from soothe.engine.llm.profile import (
    ModelInfo,
    fetch_model_info,
    model_info_from_models,
    resolve_profile,
)
from soothe.engine.llm.window import (
    DEMO_WINDOW,
    ContextWindow,
    resolve_window,
)
from tests.fakes import FakeOllamaServer, FakeOpenAIServer
from tests.fakes.ollama_server import FakeOllamaModel
from tests.fakes.openai_server import Flavor


def ollama(num_ctx: int | None) -> ModelSettings:
    return ModelSettings(provider="ollama", name="m", num_ctx=num_ctx)


def openai(context_window: int | None = None) -> ModelSettings:
    return ModelSettings(provider="openai", name="m", context_window=context_window)


# --- the rule ---------------------------------------------------------------------------


def test_ollama_window_is_the_num_ctx_we_send() -> None:
    window = resolve_window(ollama(2048), ModelInfo(context_length=131072))
    assert window == ContextWindow(2048, "model.num_ctx", trained=131072)
    assert window.describe() == "2048 tokens (model.num_ctx; trained 131072)"


def test_ollama_num_ctx_above_the_trained_context_is_capped_with_a_warning() -> None:
    window = resolve_window(ollama(8192), ModelInfo(context_length=2048))
    assert window.tokens == 2048
    assert window.source == "model.num_ctx, capped by the model's trained context"
    assert window.warning == (
        "model.num_ctx = 8192 exceeds the model's trained context of 2048 tokens: "
        "the window is 2048; set model.num_ctx <= 2048"
    )


def test_ollama_num_ctx_unknown_trained_context_is_taken_as_sent() -> None:
    window = resolve_window(ollama(8192), ModelInfo())
    assert (window.tokens, window.source, window.trained, window.warning) == (
        8192,
        "model.num_ctx",
        None,
        None,
    )


def test_ollama_without_num_ctx_assumes_the_server_default() -> None:
    window = resolve_window(ollama(None), ModelInfo(context_length=32768))
    assert window.tokens == 4096
    assert window.source == "assumed (Ollama's default below 24 GiB VRAM)"
    # A model trained on less than the default holds only that.
    assert resolve_window(ollama(None), ModelInfo(context_length=2048)).tokens == 2048


def test_openai_window_reported_by_the_server_wins() -> None:
    info = ModelInfo(context_window=16384, window_field="/v1/models max_model_len")
    window = resolve_window(openai(context_window=4096), info)
    assert (window.tokens, window.source) == (16384, "/v1/models max_model_len")


def test_openai_trained_only_report_is_used_unless_configured_lower() -> None:
    info = ModelInfo(
        context_length=131072, context_window=131072, window_field="/v1/models meta.n_ctx_train"
    )
    assert resolve_window(openai(), info) == ContextWindow(
        131072, "/v1/models meta.n_ctx_train", trained=131072
    )
    # llama-server -c 4096: only the user knows; model.context_window says so.
    configured = resolve_window(openai(context_window=4096), info)
    assert (configured.tokens, configured.source, configured.warning) == (
        4096,
        "model.context_window",
        None,
    )
    over = resolve_window(openai(context_window=200_000), info)
    assert over.tokens == 131072
    assert over.warning is not None and "model.context_window = 200000" in over.warning


def test_openai_window_from_config_else_assumed() -> None:
    assert resolve_window(openai(context_window=32768), ModelInfo()) == ContextWindow(
        32768, "model.context_window"
    )
    assumed = resolve_window(openai(), ModelInfo())
    assert assumed.tokens == 8192
    assert assumed.source.startswith("assumed")
    assert "model.context_window" in assumed.source


def test_demo_window_is_large() -> None:
    window = resolve_window(ModelSettings(provider="demo"), ModelInfo())
    assert (window.tokens, window.source) == (DEMO_WINDOW, "demo")
    assert window.tokens >= 100_000


def test_context_window_setting_is_validated() -> None:
    with pytest.raises(ValueError, match="context_window"):
        ModelSettings(provider="openai", context_window=100)


# --- the hub carries it -----------------------------------------------------------------


def test_hub_window_follows_its_model_info() -> None:
    hub = ModelHub(ollama(4096))
    assert hub.model_info == ModelInfo()
    assert (hub.window.tokens, hub.window.source) == (4096, "model.num_ctx")
    info = ModelInfo(context_length=2048, capabilities=("completion", "tools"))
    hub.set_model_info(info)
    assert hub.model_info is info
    assert hub.window.tokens == 2048 and hub.window.warning is not None


# --- what the servers say ---------------------------------------------------------------


async def test_ollama_show_gives_trained_context_and_capabilities() -> None:
    with FakeOllamaServer() as server:
        server.add_model(FakeOllamaModel("small", context_length=2048, tools=False))
        settings = ModelSettings(name="small", base_url=server.url, num_ctx=8192, profile="small")
        profile = await resolve_profile(settings)  # a forced profile fetches it too
        shows = [r for r in server.requests if r.path == "/api/show"]
    assert len(shows) == 1
    assert profile.info.context_length == 2048
    assert profile.info.capabilities == ("completion",)
    assert profile.info.can("tools") is False
    assert resolve_window(settings, profile.info).tokens == 2048


@pytest.mark.parametrize(
    ("flavor", "tokens", "source", "trained"),
    [
        ("vllm", 4096, "/v1/models max_model_len", None),
        ("llamacpp", 4096, "/props n_ctx", 131072),
        ("lmstudio", 4096, "/api/v0/models loaded_context_length", 131072),
        ("openai", 8192, "assumed (the server does not report it; set model.context_window)", None),
    ],
)
async def test_openai_models_report_the_window_in_each_servers_field(
    flavor: Flavor, tokens: int, source: str, trained: int | None
) -> None:
    with FakeOpenAIServer(
        models=("org/m-1",), api_key="sk-k", flavor=flavor, window=4096, trained=131072
    ) as server:
        settings = ModelSettings(
            provider="openai", name="org/m-1", base_url=f"{server.url}/v1", api_key="sk-k"
        )
        info = await fetch_model_info(settings)
        paths = [r.path for r in server.requests]
    window = resolve_window(settings, info)
    assert (window.tokens, window.source, window.trained) == (tokens, source, trained)
    assert paths[0] == "/v1/models"
    assert len(paths) <= 2  # bounded: the LM Studio probe only when /v1/models said nothing


async def test_openai_models_with_a_wrong_key_or_no_server_say_nothing(dead_url: str) -> None:
    with FakeOpenAIServer(api_key="sk-right", flavor="vllm") as server:
        wrong = ModelSettings(
            provider="openai", name="llama3.2", base_url=f"{server.url}/v1", api_key="sk-wrong"
        )
        assert await fetch_model_info(wrong) == ModelInfo()
    gone = ModelSettings(provider="openai", name="m", base_url=f"{dead_url}/v1")
    assert await fetch_model_info(gone) == ModelInfo()


def test_models_listing_without_the_model_or_with_junk_says_nothing() -> None:
    assert model_info_from_models({"data": [{"id": "other", "max_model_len": 9}]}, "m") == (
        ModelInfo()
    )
    assert model_info_from_models("junk", "m") == ModelInfo()
    junk = {"data": [{"id": "m", "max_model_len": True, "meta": {"n_ctx_train": -1}}]}
    assert model_info_from_models(junk, "m") == ModelInfo()


async def test_session_gives_the_hub_the_window_for_every_profile(tmp_path: Path) -> None:
    """profile = "default" made no /api/show before: the hub's window then ignored the
    model's trained context (8192 asked, 2048 trained)."""
    from soothe.engine.session import Session

    model = FakeOllamaModel("m", parameter_size="7.6B", context_length=2048)
    with FakeOllamaServer(models=[model]) as server:
        settings = Settings(
            model={"name": "m", "base_url": server.url, "num_ctx": 8192, "profile": "default"},
            storage={"data_dir": tmp_path / "data"},
        )
        session = Session(settings, db_path=":memory:", checkpoint_path=":memory:")
        await session.start()
        try:
            window = session.hub.window
            assert (window.tokens, window.trained) == (2048, 2048)
            assert window.source == "model.num_ctx, capped by the model's trained context"
            assert session.hub.model_info.capabilities == ("completion", "tools")
            assert len([r for r in server.requests if r.path == "/api/show"]) == 1
            session.use_demo()
            assert session.hub.window.source == "demo"
        finally:
            await session.close()


def test_a_new_model_forgets_what_the_packer_learnt_from_the_old_one() -> None:
    hub = ModelHub(ollama(8192))
    hub._learn_ceiling(1024)  # the old server cut a prompt at 1024
    learnt = hub.estimator
    assert hub.context_window()[0] == 1024
    hub.set_model_info(ModelInfo(context_length=32768))
    assert hub.context_window() == (8192, "model.num_ctx")
    assert hub.estimator is not learnt  # a fresh, uncalibrated estimate
