"""The chat-model factory and the hub's roles; the package stays import-light."""

from __future__ import annotations

import subprocess
import sys

import pytest
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI

from soothe.engine.config import ModelSettings
from soothe.engine.llm.factory import build_chat_model
from soothe.engine.llm.hub import ModelHub


def test_ollama_from_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "http://elsewhere:1")
    settings = ModelSettings(
        name="qwen2.5:7b", base_url="gpu-box:11500", timeout=42, temperature=0.5, num_ctx=4096
    )
    model = build_chat_model(settings)
    assert isinstance(model, ChatOllama)
    assert model.model == "qwen2.5:7b"
    assert model.base_url == "http://gpu-box:11500"
    assert (model.temperature, model.num_ctx) == (0.5, 4096)
    timeout = model._async_client._client.timeout  # the HTTP timeout is always set
    assert (timeout.read, timeout.connect) == (42, 10)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (None, "http://127.0.0.1:11434"),
        ("10.0.0.5:11434", "http://10.0.0.5:11434"),
        ("http://10.0.0.6:9999", "http://10.0.0.6:9999"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
    ],
)
def test_ollama_base_url_falls_back_to_ollama_host(
    monkeypatch: pytest.MonkeyPatch, env: str | None, expected: str
) -> None:
    if env is None:
        monkeypatch.delenv("OLLAMA_HOST", raising=False)
    else:
        monkeypatch.setenv("OLLAMA_HOST", env)
    model = build_chat_model(ModelSettings(timeout=5))
    assert isinstance(model, ChatOllama)
    assert model.base_url == expected
    assert model._async_client._client.timeout.read == 5


def test_openai_compatible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = ModelSettings(provider="openai", name="m", base_url="http://h:8000/v1", timeout=9)
    model = build_chat_model(settings)
    assert isinstance(model, ChatOpenAI)
    assert model.stream_usage is True
    assert model.max_retries == 0  # the hub retries, only where it helps
    assert model.openai_api_base == "http://h:8000/v1"
    assert model.request_timeout == 9.0  # a number: openai 3.x refuses an httpx.Timeout
    # The SDK client the requests go through accepted it (openai 3.x raised TypeError here).
    assert model.async_client is not None
    assert model.openai_api_key is not None  # a placeholder for keyless local servers


def test_roles_default_and_fast() -> None:
    hub = ModelHub(ModelSettings(name="big:14b", fast_name="small:1b"))
    default, fast = hub.chat_model(), hub.chat_model("fast")
    assert isinstance(default, ChatOllama) and isinstance(fast, ChatOllama)
    assert (default.model, fast.model) == ("big:14b", "small:1b")
    assert hub.chat_model() is default  # cached
    assert hub.model_name("fast") == "small:1b"
    same = ModelHub(ModelSettings(name="big:14b"))
    assert same.chat_model("fast") is same.chat_model("default")


def test_injected_models_are_used_for_every_role(scripted_model) -> None:  # type: ignore[no-untyped-def]
    model = scripted_model("hi")
    hub = ModelHub(ModelSettings(name="x", fast_name="y"), models={"default": model})
    assert hub.chat_model("fast") is model


def test_display_name() -> None:
    assert ModelHub(ModelSettings(provider="demo")).display_name == "demo model"
    assert ModelHub(ModelSettings(provider="demo")).model_name("fast") == "demo model"
    assert ModelHub(ModelSettings(name="qwen2.5:7b")).display_name == "qwen2.5:7b"


def test_package_import_is_light() -> None:
    code = (
        "import sys, soothe.engine.llm as L\n"
        "from soothe.engine.llm import doctor, errors, repair, schema, server, structured, usage\n"
        "L.LLMError, L.ModelErrorKind, L.UsageTotals, L.repair_json, L.run_doctor\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'langchain_ollama', 'langchain_openai', 'ollama', 'openai', 'httpx')]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
