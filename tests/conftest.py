"""Shared fixtures. Add new fixtures in their own section below."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from soothe.engine.llm.scripted import ScriptedChatModel
from tests.fakes import FakeOllamaServer, FakeOpenAIServer

# -- fake model servers and the scripted model --------------------------------------------


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllamaServer]:
    """A started FakeOllamaServer (model `llama3.2`); script it with `.extend([...])`."""
    server = FakeOllamaServer(hang_limit=5.0)
    with server:
        yield server
    assert not server.errors, "fake Ollama server crashed:\n" + "\n".join(server.errors)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A started FakeOpenAIServer (model `llama3.2`, any API key accepted)."""
    server = FakeOpenAIServer(hang_limit=5.0)
    with server:
        yield server
    assert not server.errors, "fake OpenAI server crashed:\n" + "\n".join(server.errors)


@pytest.fixture
def scripted_model() -> Callable[..., ScriptedChatModel]:
    """Factory: `scripted_model("hi", {"a": 1}, responder=None, model_name="scripted")`."""

    def make(*script: Any, **kwargs: Any) -> ScriptedChatModel:
        return ScriptedChatModel(script=list(script), **kwargs)

    return make
