"""map_error on the exceptions the clients really raise (built here, no network)."""

from __future__ import annotations

import httpx
import ollama
import openai
import pytest

from soothe.engine.llm.errors import LLMError, ModelErrorKind, map_error

KW = {"provider": "ollama", "base_url": "http://127.0.0.1:11434", "model": "qwen2.5:7b"}
OKW = {"provider": "openai", "base_url": "http://h:8000/v1", "model": "gpt-x"}


def _request() -> httpx.Request:
    return httpx.Request("POST", "http://h:8000/v1/chat/completions")


def _openai_status(cls: type[openai.APIStatusError], status: int, message: str) -> Exception:
    response = httpx.Response(status, request=_request(), json={"error": {"message": message}})
    return cls(message, response=response, body={"message": message})


@pytest.mark.parametrize(
    ("exc", "kind", "needle"),
    [
        (httpx.ConnectError("refused"), ModelErrorKind.unreachable, "ollama serve"),
        (ConnectionError("Failed to connect to Ollama"), ModelErrorKind.unreachable, "11434"),
        (httpx.ConnectTimeout("slow"), ModelErrorKind.unreachable, "11434"),
        (
            ollama.ResponseError('{"error":"model \'qwen2.5:7b\' not found"}', 404),
            ModelErrorKind.model_not_found,
            "ollama pull qwen2.5:7b",
        ),
        (
            ollama.ResponseError("registry.ollama.ai/library/x does not support tools", 400),
            ModelErrorKind.no_tool_support,
            "tool-capable",
        ),
        (ollama.ResponseError("runner crashed"), ModelErrorKind.mid_stream, "runner crashed"),
        (httpx.ReadTimeout("slow"), ModelErrorKind.timeout, "within 30s"),
        (httpx.RemoteProtocolError("closed"), ModelErrorKind.mid_stream, "dropped"),
        (ollama.ResponseError("busy", 503), ModelErrorKind.overloaded, "busy"),
        (ollama.ResponseError("bad option", 400), ModelErrorKind.bad_request, "bad option"),
        (ollama.ResponseError("out of memory", 500), ModelErrorKind.unknown, "out of memory"),
        (ValueError("weird"), ModelErrorKind.unknown, "ValueError: weird"),
    ],
)
def test_ollama_side_errors(exc: Exception, kind: ModelErrorKind, needle: str) -> None:
    err = map_error(exc, timeout=30, **KW)
    assert err.kind == kind
    assert needle in err.message
    assert "\n" not in err.message


@pytest.mark.parametrize(
    ("exc", "kind", "retryable"),
    [
        (
            _openai_status(openai.AuthenticationError, 401, "bad key"),
            ModelErrorKind.bad_credentials,
            False,
        ),
        (
            _openai_status(openai.NotFoundError, 404, "no such model"),
            ModelErrorKind.model_not_found,
            False,
        ),
        (_openai_status(openai.RateLimitError, 429, "slow down"), ModelErrorKind.overloaded, True),
        (
            _openai_status(openai.InternalServerError, 503, "overloaded"),
            ModelErrorKind.overloaded,
            True,
        ),
        (
            _openai_status(openai.BadRequestError, 400, "model does not support tools"),
            ModelErrorKind.no_tool_support,
            False,
        ),
        (_openai_status(openai.BadRequestError, 400, "bad"), ModelErrorKind.bad_request, False),
        (openai.APITimeoutError(_request()), ModelErrorKind.timeout, False),
        (openai.APIConnectionError(request=_request()), ModelErrorKind.unreachable, False),
        (openai.APIError("boom in stream", _request(), body=None), ModelErrorKind.mid_stream, True),
    ],
)
def test_openai_side_errors(exc: Exception, kind: ModelErrorKind, retryable: bool) -> None:
    err = map_error(exc, **OKW)
    assert err.kind == kind
    assert err.retryable is retryable
    assert "\n" not in err.message


def test_langchain_model_errors_map_too() -> None:
    from langchain_openai.chat_models.base import (
        OpenAIAuthenticationError,
        OpenAIConnectionError,
        OpenAITimeoutError,
    )

    response = httpx.Response(401, request=_request())
    auth = OpenAIAuthenticationError("nope", response=response, body=None)
    assert map_error(auth, **OKW).kind == ModelErrorKind.bad_credentials
    assert "OPENAI_API_KEY" in map_error(auth, **OKW).message
    assert map_error(OpenAITimeoutError(_request()), **OKW).kind == ModelErrorKind.timeout
    conn = OpenAIConnectionError(message="down", request=_request())
    assert map_error(conn, **OKW).kind == ModelErrorKind.unreachable
    assert "model.base_url" in map_error(conn, **OKW).message


def test_llm_error_passes_through_and_is_one_line() -> None:
    err = LLMError(ModelErrorKind.timeout, "line one\nline two")
    assert map_error(err, **KW) is err
    assert str(err) == "line one line two"
    assert not err.retryable
