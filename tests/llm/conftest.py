"""Fixtures for the model layer: hubs wired to the fake servers, a bus, schemas."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from soothe.engine.bus import EventBus
from soothe.engine.config import ModelSettings
from soothe.engine.llm.hub import ModelHub
from tests.fakes import FakeOllamaServer, FakeOpenAIServer


class Answer(BaseModel):
    """A small bounded schema used across the structured-output tests."""

    answer: str = Field(max_length=80)
    kind: Literal["fact", "opinion"]
    tags: list[Annotated[str, Field(max_length=20)]] = Field(default_factory=list, max_length=3)


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


def fast_hub(settings: ModelSettings, bus: EventBus | None) -> ModelHub:
    hub = ModelHub(settings, bus)
    hub.backoff_s = 0.01  # keep transport retries quick in tests
    return hub


@pytest.fixture
def ollama_settings(fake_ollama: FakeOllamaServer) -> ModelSettings:
    return ModelSettings(provider="ollama", name="llama3.2", base_url=fake_ollama.url, timeout=3)


@pytest.fixture
def ollama_hub(ollama_settings: ModelSettings, bus: EventBus) -> Iterator[ModelHub]:
    yield fast_hub(ollama_settings, bus)


@pytest.fixture
def openai_settings(fake_openai: FakeOpenAIServer) -> ModelSettings:
    return ModelSettings(
        provider="openai", name="llama3.2", base_url=f"{fake_openai.url}/v1", timeout=3
    )


@pytest.fixture
def openai_hub(openai_settings: ModelSettings, bus: EventBus) -> Iterator[ModelHub]:
    yield fast_hub(openai_settings, bus)


@pytest.fixture
def dead_url() -> str:
    """A loopback URL where nothing listens (the port was just released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
