"""Build a LangChain chat model from ModelSettings: ollama, openai-compatible or demo.

Imported lazily (it pulls in LangChain and a provider client on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from soothe.engine.config import ModelSettings

if TYPE_CHECKING:
    import httpx
    from langchain_core.language_models.chat_models import BaseChatModel

__all__ = ["Role", "build_chat_model", "http_timeout", "model_name_for"]

Role = Literal["default", "fast"]

CONNECT_TIMEOUT_CAP = 10.0
"""Connecting is quick or never happens: do not wait the full read timeout for it."""

NO_API_KEY = "sk-no-key"
"""Sent when no key is configured; local OpenAI-compatible servers ignore it."""


def model_name_for(settings: ModelSettings, role: Role = "default") -> str:
    if role == "fast" and settings.fast_name:
        return settings.fast_name
    return settings.name


def http_timeout(seconds: float) -> httpx.Timeout:
    """``seconds`` between bytes of a reply; a shorter cap on connecting.

    For the Ollama client only, which is built on ``httpx``; the OpenAI SDK gets a number.
    """
    import httpx

    return httpx.Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT_CAP))


def build_chat_model(settings: ModelSettings, role: Role = "default") -> BaseChatModel:
    """A fresh chat model for ``role``. No network traffic happens here."""
    name = model_name_for(settings, role)
    if settings.provider == "demo":
        from soothe.engine.llm.demo import build_demo_model

        return build_demo_model()
    if settings.provider == "ollama":
        from langchain_ollama import ChatOllama

        return ChatOllama(
            model=name,
            base_url=settings.resolved_base_url(),
            temperature=settings.temperature,
            num_ctx=settings.num_ctx,
            client_kwargs={"timeout": http_timeout(settings.timeout)},
        )
    if settings.provider == "openai":
        import openai
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model=name,
            base_url=settings.resolved_base_url(),
            api_key=settings.resolved_api_key() or NO_API_KEY,
            temperature=settings.temperature,
            # A plain number of seconds: openai 2.x takes an httpx.Timeout, 3.x only an
            # httpx2.Timeout (it moved to httpx2); both take a number.
            timeout=float(settings.timeout),
            # Our own HTTP client (the SDK's default class, httpx or httpx2 by version),
            # closed by ModelHub.aclose. With a number for a timeout, langchain-openai
            # would share one cached client across the process, and a second event loop
            # (doctor's thread, a second run in one process) then failed every call with
            # "Event loop is closed".
            http_async_client=openai.DefaultAsyncHttpxClient(timeout=float(settings.timeout)),
            max_retries=0,  # ModelHub retries itself, only where a retry can help
            stream_usage=True,
        )
    msg = f"unknown model provider {settings.provider!r}"
    raise ValueError(msg)
