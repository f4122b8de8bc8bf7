"""`FakeOllamaServer`: the Ollama HTTP API (0.6-era wire format) on 127.0.0.1.

Speaks what `ollama` / `langchain_ollama.ChatOllama` read: NDJSON streaming on
`/api/chat` (the last line has `done: true`, `done_reason`, token counts and
durations in ns), tool calls as `{"id", "function": {"index", "name", "arguments"}}`
with arguments as an object, `{"error": ...}` bodies, a 404 for unknown models and
a 400 when tools are sent to a model without tool support.

Like a real Ollama it refuses a `format` schema its grammar compiler cannot take (a
`maxLength` of 2,000 or more, a `maxItems` of ~1,997 or more: HTTP 500
"failed to parse grammar ..."), and it honours `options.num_predict`: a scripted reply
longer than that many tokens is cut there and ends with done_reason "length" (its tool
calls, which would be incomplete, are dropped).

It can also misbehave as real servers do (`FakeReply`): think in `message.thinking`,
stream for ever without `done` whatever `num_predict` said (`endless`), stall after the
headers or mid-stream (`stall`), trickle a byte at a time (`trickle`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from soothe.engine.llm.scripted import estimate_tokens
from tests.fakes._base import (
    FakeReply,
    FakeServer,
    RecordedRequest,
    ServerResponder,
    _Handler,
    request_chars,
    tool_call_id,
)

__all__ = [
    "GRAMMAR_ERROR",
    "RUNNER_TERMINATED",
    "FakeOllamaModel",
    "FakeOllamaServer",
    "grammar_refusal",
]

GRAMMAR_ERROR = (
    "failed to parse grammar: number of repetitions exceeds sane defaults, "
    "please reduce the number of repetitions"
)
"""What llama.cpp (inside Ollama) says when a schema bound is too large for its grammar."""
RUNNER_TERMINATED = "llama runner process has terminated: signal: killed"
"""Ollama's HTTP 500 when the model runner crashed; it restarts it on the next request."""

MAX_STRING_REPETITIONS = 1999
"""Highest string maxLength Ollama 0.32's vendored llama.cpp compiles."""
MAX_ITEMS_REPETITIONS = 1996
"""maxItems compiles up to 1,997-1,998 depending on the item type: refuse from 1,997."""


def grammar_refusal(schema: Any, path: str = "$") -> str | None:
    """Where a `format` schema breaks Ollama's grammar compiler, or None."""
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            if (found := grammar_refusal(item, f"{path}[{i}]")) is not None:
                return found
        return None
    if not isinstance(schema, dict):
        return None
    for key, limit in (
        ("maxLength", MAX_STRING_REPETITIONS),
        ("minLength", MAX_STRING_REPETITIONS),
        ("maxItems", MAX_ITEMS_REPETITIONS),
        ("minItems", MAX_ITEMS_REPETITIONS),
    ):
        value = schema.get(key)
        if isinstance(value, int) and value > limit:
            return f"{path}.{key}={value}"
    for key, value in schema.items():
        if key in ("enum", "const", "default"):
            continue
        if (found := grammar_refusal(value, f"{path}.{key}")) is not None:
            return found
    return None


def cut_to_num_predict(reply: FakeReply, num_predict: int) -> FakeReply:
    """`reply` as a server that stops after `num_predict` tokens would send it. Its
    thinking pieces (a token each) come first and count; an `endless` reply is a
    server that does not stop and is sent as it is."""
    if reply.endless:
        return reply
    thinking = reply.thinking or []
    if len(thinking) >= num_predict and (reply.text or reply.tool_calls):
        usage = (reply.usage[0], num_predict) if reply.usage is not None else None
        return dataclasses.replace(
            reply,
            thinking=thinking[:num_predict],
            text="",
            stream_chunks=None,
            tool_calls=[],
            usage=usage,
            done_reason="length",
        )
    num_predict -= len(thinking)
    if estimate_tokens(reply.output_chars()) <= num_predict:
        return reply
    usage = (reply.usage[0], num_predict) if reply.usage is not None else None
    return dataclasses.replace(
        reply,
        text=reply.text[: num_predict * 4],
        stream_chunks=None,
        tool_calls=[],
        usage=usage,
        done_reason="length",
    )


@dataclass
class FakeOllamaModel:
    """A model the fake server has "pulled"."""

    name: str
    tools: bool = True
    context_length: int = 8192
    family: str = "llama"
    parameter_size: str = "3.2B"
    quantization_level: str = "Q4_K_M"
    size: int = 2_019_393_189

    def __post_init__(self) -> None:
        self.name = normalize_model_name(self.name)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.name.encode()).hexdigest()

    @property
    def details(self) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": "gguf",
            "family": self.family,
            "families": [self.family],
            "parameter_size": self.parameter_size,
            "quantization_level": self.quantization_level,
        }


def normalize_model_name(name: str) -> str:
    """`llama3.2` and `llama3.2:latest` name the same model, as in Ollama."""
    return name if ":" in name else f"{name}:latest"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class FakeOllamaServer(FakeServer):
    """Fake Ollama. `models` are names or `FakeOllamaModel`s (tags default to :latest)."""

    chat_path: ClassVar[str] = "/api/chat"
    name: ClassVar[str] = "ollama"

    def __init__(
        self,
        script: Iterable[Any] = (),
        *,
        responder: ServerResponder | None = None,
        models: Sequence[str | FakeOllamaModel] = ("llama3.2",),
        version: str = "0.6.3",
        host: str = "127.0.0.1",
        port: int = 0,
        hang_limit: float = 30.0,
    ) -> None:
        super().__init__(script, responder=responder, host=host, port=port, hang_limit=hang_limit)
        self.version = version
        self.models: dict[str, FakeOllamaModel] = {}
        for m in models:
            self.add_model(m)

    def add_model(self, model: str | FakeOllamaModel) -> FakeOllamaModel:
        m = model if isinstance(model, FakeOllamaModel) else FakeOllamaModel(model)
        self.models[m.name] = m
        return m

    def find_model(self, name: str) -> FakeOllamaModel | None:
        return self.models.get(normalize_model_name(name or ""))

    # -- routes ------------------------------------------------------------------------

    def _route(self, h: _Handler, req: RecordedRequest) -> None:
        routes = {
            "/": {"GET", "HEAD"},
            "/api/version": {"GET"},
            "/api/tags": {"GET"},
            "/api/ps": {"GET"},
            "/api/show": {"POST"},
            "/api/chat": {"POST"},
        }
        if req.path not in routes:
            h.send_text(404, "404 page not found")
            return
        if req.method not in routes[req.path]:
            h.send_text(405, "405 method not allowed")
            return
        body = req.body if isinstance(req.body, dict) else {}
        match req.path:
            case "/":
                h.send_text(200, "Ollama is running")
            case "/api/version":
                h.send_json(200, {"version": self.version})
            case "/api/tags":
                h.send_json(200, {"models": [self._tag(m) for m in self.models.values()]})
            case "/api/ps":
                h.send_json(200, {"models": []})
            case "/api/show":
                self._show(h, body)
            case "/api/chat":
                self._chat(h, body)

    def _tag(self, m: FakeOllamaModel) -> dict[str, Any]:
        return {
            "name": m.name,
            "model": m.name,
            "modified_at": "2025-01-01T00:00:00Z",
            "size": m.size,
            "digest": m.digest,
            "details": m.details,
        }

    def _show(self, h: _Handler, body: dict[str, Any]) -> None:
        requested = body.get("model") or body.get("name") or ""
        m = self.find_model(requested)
        if m is None:
            h.send_json(404, {"error": f"model '{requested}' not found"})
            return
        capabilities = ["completion", *(["tools"] if m.tools else [])]
        h.send_json(
            200,
            {
                "modelfile": f"FROM {m.name}\n",
                "parameters": "stop <|eot_id|>",
                "template": "{{ .Prompt }}",
                "details": m.details,
                "model_info": {
                    "general.architecture": m.family,
                    f"{m.family}.context_length": m.context_length,
                },
                "capabilities": capabilities,
                "modified_at": "2025-01-01T00:00:00Z",
            },
        )

    def _chat(self, h: _Handler, body: dict[str, Any]) -> None:
        requested = body.get("model") or ""
        m = self.find_model(requested)
        if m is None:
            h.send_json(404, {"error": f"model '{requested}' not found"})
            return
        if body.get("tools") and not m.tools:
            h.send_json(
                400, {"error": f"registry.ollama.ai/library/{m.name} does not support tools"}
            )
            return
        fmt = body.get("format")
        if isinstance(fmt, dict) and (where := grammar_refusal(fmt)) is not None:
            h.send_json(500, {"error": f"{GRAMMAR_ERROR} ({where})"})
            return
        self._serve_chat(h, body, stream=body.get("stream", True) is not False)

    def _next_item(self, body: dict[str, Any]) -> tuple[int, FakeReply | BaseException]:
        index, reply = super()._next_item(body)
        options = body.get("options")
        limit = options.get("num_predict") if isinstance(options, dict) else None
        if isinstance(reply, FakeReply) and isinstance(limit, int) and limit > 0:
            reply = cut_to_num_predict(reply, limit)
        return index, reply

    # -- encodings ---------------------------------------------------------------------

    def _send_error(
        self, h: _Handler, status: int, message: str, headers: dict[str, str] | None = None
    ) -> None:
        h.send_json(status, {"error": message}, headers)

    def _stream_content_type(self) -> str:
        return "application/x-ndjson"

    def _line(self, obj: dict[str, Any]) -> bytes:
        return json.dumps(obj, ensure_ascii=False).encode() + b"\n"

    def _text_event(self, index: int, body: dict[str, Any], piece: str) -> bytes:
        return self._line(
            {
                "model": body.get("model"),
                "created_at": _now(),
                "message": {"role": "assistant", "content": piece},
                "done": False,
            }
        )

    def _thinking_event(self, index: int, body: dict[str, Any], piece: str) -> bytes:
        return self._line(
            {
                "model": body.get("model"),
                "created_at": _now(),
                "message": {"role": "assistant", "content": "", "thinking": piece},
                "done": False,
            }
        )

    def _error_event(self, message: str) -> bytes:
        return self._line({"error": message})

    def _tool_calls(self, index: int, reply: FakeReply) -> list[dict[str, Any]]:
        return [
            {
                "id": tool_call_id(index, i, tc),
                "function": {"index": i, "name": tc["name"], "arguments": tc.get("args", {})},
            }
            for i, tc in enumerate(reply.tool_calls)
        ]

    def _stats(self, body: dict[str, Any], reply: FakeReply) -> dict[str, Any]:
        if reply.usage is not None:
            prompt, output = reply.usage
        else:
            prompt = estimate_tokens(request_chars(body))
            output = estimate_tokens(reply.output_chars())
        prompt_ns, eval_ns, load_ns = prompt * 1_000_000, output * 20_000_000, 5_000_000
        return {
            "done_reason": reply.done_reason,
            "done": True,
            "total_duration": load_ns + prompt_ns + eval_ns,
            "load_duration": load_ns,
            "prompt_eval_count": prompt,
            "prompt_eval_duration": prompt_ns,
            "eval_count": output,
            "eval_duration": eval_ns,
        }

    def _tail_events(self, index: int, body: dict[str, Any], reply: FakeReply) -> list[bytes]:
        events = []
        if reply.tool_calls:
            events.append(
                self._line(
                    {
                        "model": body.get("model"),
                        "created_at": _now(),
                        "message": {
                            "role": "assistant",
                            "content": "",
                            "tool_calls": self._tool_calls(index, reply),
                        },
                        "done": False,
                    }
                )
            )
        events.append(
            self._line(
                {
                    "model": body.get("model"),
                    "created_at": _now(),
                    "message": {"role": "assistant", "content": ""},
                    **self._stats(body, reply),
                }
            )
        )
        return events

    def _complete_body(self, index: int, body: dict[str, Any], reply: FakeReply) -> Any:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = self._tool_calls(index, reply)
        return {
            "model": body.get("model"),
            "created_at": _now(),
            "message": message,
            **self._stats(body, reply),
        }
