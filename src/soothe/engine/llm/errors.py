"""Model errors mapped to a few kinds, each with a one-line message that says the fix.

``map_error`` recognises what the clients really raise: ``httpx`` errors on the Ollama
streaming path, ``ConnectionError`` elsewhere, ``ollama.ResponseError`` (status -1 for an
error line after streaming began), the ``openai`` SDK errors and LangChain's
``ModelError`` family. Provider modules are looked up in ``sys.modules`` only: if a
module was never imported, none of its exceptions can be in flight.
"""

from __future__ import annotations

import sys
from enum import StrEnum

from soothe.engine.text import clip

__all__ = ["LLMError", "ModelErrorKind", "call_expired", "map_error"]


class ModelErrorKind(StrEnum):
    unreachable = "unreachable"
    model_not_found = "model_not_found"
    no_tool_support = "no_tool_support"
    timeout = "timeout"
    mid_stream = "mid_stream"
    overloaded = "overloaded"
    bad_credentials = "bad_credentials"
    bad_request = "bad_request"
    run_limit = "run_limit"
    """The run passed its deadline or its cap on model calls (``llm.budget``)."""
    goal_budget = "goal_budget"
    """A goal reached one of its own caps (calls, tokens, time): it is suspended, to be
    resumed with a raised cap (``engine/goal_budget.py``)."""
    context_overflow = "context_overflow"
    """The prompt cannot fit the context window even at its minimum, or the server cut
    it twice (``llm.packer``); the message names the window and the setting to raise."""
    unknown = "unknown"


_RETRYABLE = {ModelErrorKind.overloaded, ModelErrorKind.mid_stream}


class LLMError(Exception):
    """A failed model call. ``str()`` is ``message``: one line, human, with the fix."""

    def __init__(
        self,
        kind: ModelErrorKind,
        message: str,
        *,
        retryable: bool | None = None,
        status: int | None = None,
        retry_limit: int | None = None,
    ) -> None:
        message = " ".join(message.split())
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = kind in _RETRYABLE if retryable is None else retryable
        self.status = status
        self.retry_limit = retry_limit
        """At most this many retries for this error (None: the caller's own limit)."""

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"LLMError({self.kind.value}, {self.message!r})"


def _one_line(text: object, limit: int = 160) -> str:
    return clip(str(text), limit)


def _mod(name: str) -> object | None:
    return sys.modules.get(name)


def _isinstance(exc: BaseException, module: str, *names: str) -> bool:
    # openai 3.x is built on httpx2, which has the same exception names as httpx.
    modules = (module, "httpx2") if module == "httpx" else (module,)
    for mod in filter(None, map(_mod, modules)):
        classes = tuple(c for n in names if isinstance(c := getattr(mod, n, None), type))
        if classes and isinstance(exc, classes):
            return True
    return False


def _server(provider: str) -> str:
    return "Ollama" if provider == "ollama" else "the model server"


OLLAMA_START = "start it with: ollama serve"
BASE_URL_FIX = "check model.base_url"


def _unreachable(provider: str, base_url: str) -> LLMError:
    fix = OLLAMA_START if provider == "ollama" else BASE_URL_FIX
    return LLMError(
        ModelErrorKind.unreachable, f"cannot reach {_server(provider)} at {base_url} ({fix})"
    )


def unreachable_cause(message: str, base_url: str) -> str:
    """What an unreachable-server message adds to "no server answered at <base_url>": its
    cause, without the URL or the start advice said again ('' when it adds nothing)."""
    problem, detail = message.strip(), ""
    if problem.endswith(")") and " (" in problem:
        cut = problem.rindex(" (")
        problem, detail = problem[:cut], problem[cut + 2 : -1]
    if detail in (OLLAMA_START, BASE_URL_FIX):
        detail = ""
    if problem.startswith("cannot reach ") or (base_url and base_url in problem):
        problem = ""
    return "; ".join(part for part in (problem, detail) if part)


def _not_found(provider: str, base_url: str, model: str) -> LLMError:
    if provider == "ollama":
        text = (
            f"model '{model}' is not installed in Ollama at {base_url} (run: ollama pull {model})"
        )
    else:
        text = (
            f"model '{model}' was not found at {base_url} "
            "(check model.name, and that base_url ends in /v1)"
        )
    return LLMError(ModelErrorKind.model_not_found, text, status=404)


def _no_tools(model: str) -> LLMError:
    return LLMError(
        ModelErrorKind.no_tool_support,
        f"model '{model}' does not support tool calls "
        "(choose a tool-capable model, e.g. qwen2.5:7b or llama3.1:8b)",
        status=400,
    )


def _timeout(model: str, timeout: float | None) -> LLMError:
    within = f" within {timeout:g}s" if timeout else " in time"
    return LLMError(
        ModelErrorKind.timeout,
        f"model '{model}' did not answer{within} (raise model.timeout or use a smaller model)",
    )


def call_expired(model: str, seconds: float) -> LLMError:
    """A call that went on past its wall-clock cap (``model.call_timeout``): the server
    kept sending (slowly, or without end), so no read timeout ever tripped."""
    return LLMError(
        ModelErrorKind.timeout,
        f"model '{model}' did not finish its reply within {seconds:g}s "
        "(raise model.call_timeout or use a smaller model)",
        retryable=False,
    )


def _by_status(status: int, detail: str, *, provider: str, base_url: str, model: str) -> LLMError:
    low = detail.lower()
    if "does not support tools" in low or "tool use is not supported" in low:
        return _no_tools(model)
    if status == 404 or ("model" in low and "not found" in low):
        return _not_found(provider, base_url, model)
    if status in (401, 403):
        return LLMError(
            ModelErrorKind.bad_credentials,
            f"{_server(provider)} at {base_url} rejected the API key "
            "(set model.api_key or OPENAI_API_KEY)",
            status=status,
        )
    if status in (429, 502, 503, 504) or "overloaded" in low or "server busy" in low:
        return LLMError(
            ModelErrorKind.overloaded,
            f"{_server(provider)} at {base_url} is busy (HTTP {status}): {_one_line(detail)}; "
            "try again shortly",
            status=status,
        )
    if status >= 500 and _runner_stopped(low):
        return LLMError(
            ModelErrorKind.unknown,
            f"{_server(provider)}'s model runner stopped (HTTP {status}): {_one_line(detail)}; "
            "it restarts on the next request: try again, or use a smaller model / num_ctx",
            status=status,
            retryable=True,
            retry_limit=1,
        )
    if "failed to parse grammar" in low or "exceeds sane defaults" in low:
        return LLMError(
            ModelErrorKind.bad_request,
            f"{_server(provider)} could not compile the reply schema into a grammar "
            f"(HTTP {status}): {_one_line(detail)}",
            status=status,
        )
    if 400 <= status < 500:
        return LLMError(
            ModelErrorKind.bad_request,
            f"{_server(provider)} rejected the request (HTTP {status}): {_one_line(detail)}",
            status=status,
        )
    return LLMError(
        ModelErrorKind.unknown,
        f"{_server(provider)} failed (HTTP {status}): {_one_line(detail)}",
        status=status,
    )


_RUNNER_STOPPED = (
    "llama runner process has terminated",
    "llama runner process no longer running",
    "runner process has terminated",
)


def _runner_stopped(low: str) -> bool:
    """Ollama's answer when the model runner crashed (it restarts it on the next request)."""
    return any(text in low for text in _RUNNER_STOPPED)


def map_error(
    exc: BaseException,
    *,
    provider: str,
    base_url: str,
    model: str,
    timeout: float | None = None,
) -> LLMError:
    """Turn whatever a model client raised into an ``LLMError``."""
    if isinstance(exc, LLMError):
        return exc
    kw = {"provider": provider, "base_url": base_url, "model": model}

    # --- Ollama client -------------------------------------------------------------
    if _isinstance(exc, "ollama", "ResponseError"):
        status = int(getattr(exc, "status_code", -1))
        detail = str(getattr(exc, "error", exc))
        if status == -1:
            low = detail.lower()
            if "does not support tools" in low:
                return _no_tools(model)
            if "not found" in low and "model" in low:
                return _not_found(provider, base_url, model)
            return LLMError(
                ModelErrorKind.mid_stream,
                f"model '{model}' failed while answering: {_one_line(detail)}",
            )
        return _by_status(status, detail, **kw)

    # --- OpenAI SDK / LangChain ModelError (timeouts before connection errors) -----
    if _isinstance(exc, "openai", "APITimeoutError") or _isinstance(
        exc, "langchain_core.exceptions", "ModelTimeoutError"
    ):
        return _timeout(model, timeout)
    if _isinstance(exc, "openai", "APIConnectionError") or _isinstance(
        exc, "langchain_core.exceptions", "ModelConnectionError"
    ):
        # langchain-openai wraps the SDK's error, which wraps the transport's: walk the chain.
        cause = exc.__cause__ or exc.__context__
        for _ in range(5):
            if cause is None:
                break
            if _is_dropped(cause):
                return _dropped(model)
            cause = cause.__cause__ or cause.__context__
        return _unreachable(provider, base_url)
    if _isinstance(exc, "openai", "LengthFinishReasonError"):
        return LLMError(
            ModelErrorKind.mid_stream,
            f"model '{model}' stopped at its token limit before finishing",
            retryable=False,
        )
    if _isinstance(exc, "openai", "APIStatusError"):
        body = getattr(exc, "body", None)
        detail = getattr(exc, "message", "") or str(exc)
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            detail = body["message"]
        return _by_status(int(getattr(exc, "status_code", 0)), detail, **kw)
    if _isinstance(exc, "openai", "APIError"):  # an error event inside the SSE stream
        return LLMError(
            ModelErrorKind.mid_stream,
            f"model '{model}' failed while answering: {_one_line(getattr(exc, 'message', exc))}",
        )
    if _isinstance(exc, "langchain_core.exceptions", "ModelAuthenticationError"):
        return _by_status(401, str(exc), **kw)
    if _isinstance(exc, "langchain_core.exceptions", "ModelNotFoundError"):
        return _not_found(provider, base_url, model)
    if _isinstance(exc, "langchain_core.exceptions", "ModelRateLimitError", "ModelAPIError"):
        return _by_status(503, str(exc), **kw)

    # --- httpx and plain sockets -----------------------------------------------------
    if _isinstance(exc, "httpx", "ConnectTimeout"):
        return _unreachable(provider, base_url)
    if _isinstance(exc, "httpx", "TimeoutException") or isinstance(exc, TimeoutError):
        return _timeout(model, timeout)
    if _isinstance(exc, "httpx", "ConnectError") or isinstance(exc, ConnectionRefusedError):
        return _unreachable(provider, base_url)
    if _is_dropped(exc):
        return _dropped(model)
    if isinstance(exc, ConnectionError):  # the ollama client's non-streaming path
        return _unreachable(provider, base_url)
    if _isinstance(exc, "httpx", "HTTPStatusError"):
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", 0)
        return _by_status(int(status), _one_line(getattr(response, "text", exc)), **kw)
    if _isinstance(exc, "json", "JSONDecodeError"):
        return LLMError(
            ModelErrorKind.mid_stream,
            f"{_server(provider)} sent a malformed reply: {_one_line(exc)}",
        )
    return LLMError(
        ModelErrorKind.unknown,
        f"model call failed: {type(exc).__name__}: {_one_line(exc)}",
        retryable=False,
    )


def _is_dropped(exc: BaseException) -> bool:
    return _isinstance(exc, "httpx", "RemoteProtocolError", "ReadError") or isinstance(
        exc, ConnectionResetError | BrokenPipeError
    )


def _dropped(model: str) -> LLMError:
    return LLMError(
        ModelErrorKind.mid_stream,
        f"the connection dropped while model '{model}' was answering",
    )
