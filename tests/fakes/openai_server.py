"""`FakeOpenAIServer`: an OpenAI-compatible chat server (`/v1`) on 127.0.0.1.

Non-streaming and SSE streaming `/v1/chat/completions` (tool calls streamed as
deltas with index/id/name and argument string pieces, a usage chunk when
`stream_options.include_usage` is set, `data: [DONE]`), `/v1/models`, and the
OpenAI error shape `{"error": {"message", "type", "param", "code"}}` for 401
(wrong key), 404 (unknown model) and scripted statuses such as 429.

`flavor` makes the server look like a given one, window included where that server
reports it: "openai" (ids only), "vllm" (`/v1/models` `max_model_len`, the served
window), "llamacpp" (`/v1/models` `meta.n_ctx_train`, the trained context, as
llama-server's; the loaded window in `GET /props` `default_generation_settings.n_ctx`),
"lmstudio" (ids only in `/v1/models`, as LM Studio's; its native
`GET /api/v0/models[/{id}]` carries `max_context_length` and, for a loaded model,
`loaded_context_length`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Literal
from urllib.parse import unquote

from soothe.engine.llm.scripted import args_json, estimate_tokens
from tests.fakes._base import (
    FakeReply,
    FakeServer,
    RecordedRequest,
    ServerResponder,
    _Handler,
    request_chars,
    tool_call_id,
)

__all__ = ["FakeOpenAIServer", "Flavor"]

Flavor = Literal["openai", "vllm", "llamacpp", "lmstudio"]

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


class FakeOpenAIServer(FakeServer):
    """Fake OpenAI-compatible server. `api_key=None` accepts any (or no) key."""

    chat_path: ClassVar[str] = "/v1/chat/completions"
    name: ClassVar[str] = "openai"

    def __init__(
        self,
        script: Iterable[Any] = (),
        *,
        responder: ServerResponder | None = None,
        models: Sequence[str] = ("llama3.2",),
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        hang_limit: float = 30.0,
        flavor: Flavor = "openai",
        window: int = 4096,
        trained: int = 131072,
    ) -> None:
        super().__init__(script, responder=responder, host=host, port=port, hang_limit=hang_limit)
        self.models = list(models)
        self.api_key = api_key
        self.flavor: Flavor = flavor
        self.window = window
        """The loaded window (vLLM max_model_len, llama.cpp /props n_ctx, LM Studio
        loaded_context_length)."""
        self.trained = trained
        """The trained context (llama.cpp meta.n_ctx_train, LM Studio max_context_length)."""

    # -- routes ------------------------------------------------------------------------

    def _route(self, h: _Handler, req: RecordedRequest) -> None:
        if req.path.startswith(("/v1/", "/api/", "/props")) and not self._authorized(req):
            self._send_error(h, 401, "Incorrect API key provided.")
            return
        body = req.body if isinstance(req.body, dict) else {}
        lmstudio = self.flavor == "lmstudio"
        match (req.method, req.path):
            case ("GET", "/v1/models"):
                h.send_json(
                    200, {"object": "list", "data": [self._model_entry(m) for m in self.models]}
                )
            case ("GET", "/props") if self.flavor == "llamacpp":  # tools/server props
                h.send_json(
                    200,
                    {
                        "default_generation_settings": {
                            "id": 0,
                            "id_task": -1,
                            "n_ctx": self.window,
                            "speculative": False,
                            "is_processing": False,
                            "params": {"n_predict": -1, "temperature": 0.8},
                        },
                        "total_slots": 1,
                        "model_path": f"/models/{self.models[0]}.gguf",
                        "chat_template": "{{ messages }}",
                        "build_info": "b6000-fake",
                    },
                )
            case ("GET", "/api/v0/models") if lmstudio:
                entries = [self._native_entry(m) for m in self.models]
                h.send_json(200, {"object": "list", "data": entries})
            case ("GET", path) if lmstudio and path.startswith("/api/v0/models/"):
                wanted = unquote(path.removeprefix("/api/v0/models/"))
                if wanted not in self.models:
                    h.send_json(404, {"error": f"Model '{wanted}' not found"})
                    return
                h.send_json(200, self._native_entry(wanted))
            case ("POST", "/v1/chat/completions"):
                model = body.get("model")
                if model not in self.models:
                    self._send_error(
                        h,
                        404,
                        f"The model `{model}` does not exist or you do not have access to it.",
                    )
                    return
                self._serve_chat(h, body, stream=bool(body.get("stream")))
            case _:
                self._send_error(h, 404, f"Unknown request URL: {req.method} {req.path}")

    def _model_entry(self, model: str) -> dict[str, Any]:
        """One `/v1/models` entry as the server of `flavor` writes it."""
        entry: dict[str, Any] = {"id": model, "object": "model", "created": 0}
        if self.flavor == "vllm":  # vllm/entrypoints/openai ModelCard
            entry |= {
                "owned_by": "vllm",
                "root": model,
                "parent": None,
                "max_model_len": self.window,
                "permission": [],
            }
        elif self.flavor == "llamacpp":  # tools/server: model_meta()
            entry |= {
                "owned_by": "llamacpp",
                "meta": {
                    "vocab_type": 2,
                    "n_vocab": 128256,
                    "n_ctx_train": self.trained,
                    "n_embd": 3072,
                    "n_params": 3_212_749_824,
                    "size": 2_019_377_152,
                },
            }
        else:
            entry["owned_by"] = "organization_owner" if self.flavor == "lmstudio" else "fake"
        return entry

    def _native_entry(self, model: str) -> dict[str, Any]:
        """One LM Studio `/api/v0/models` entry (a loaded model)."""
        return {
            "id": model,
            "object": "model",
            "type": "llm",
            "publisher": "lmstudio-community",
            "arch": "llama",
            "compatibility_type": "gguf",
            "quantization": "Q4_K_M",
            "state": "loaded",
            "max_context_length": self.trained,
            "loaded_context_length": self.window,
        }

    def _authorized(self, req: RecordedRequest) -> bool:
        if self.api_key is None:
            return True
        return req.headers.get("authorization") == f"Bearer {self.api_key}"

    # -- encodings ---------------------------------------------------------------------

    def _error_body(self, status: int, message: str) -> dict[str, Any]:
        err_type, code = _ERROR_TYPES.get(status, ("server_error", None))
        return {"error": {"message": message, "type": err_type, "param": None, "code": code}}

    def _send_error(
        self, h: _Handler, status: int, message: str, headers: dict[str, str] | None = None
    ) -> None:
        h.send_json(status, self._error_body(status, message), headers)

    def _stream_content_type(self) -> str:
        return "text/event-stream; charset=utf-8"

    def _sse(self, obj: Any) -> bytes:
        return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"

    def _chunk(
        self,
        index: int,
        body: dict[str, Any],
        delta: dict[str, Any] | None,
        finish_reason: str | None = None,
    ) -> bytes:
        obj: dict[str, Any] = {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model"),
            "system_fingerprint": "fp_fake",
            "choices": []
            if delta is None
            else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if (body.get("stream_options") or {}).get("include_usage"):
            obj["usage"] = None
        return self._sse(obj)

    def _head_events(self, index: int, body: dict[str, Any]) -> list[bytes]:
        return [self._chunk(index, body, {"role": "assistant", "content": ""})]

    def _text_event(self, index: int, body: dict[str, Any], piece: str) -> bytes:
        return self._chunk(index, body, {"content": piece})

    def _error_event(self, message: str) -> bytes:
        return self._sse(self._error_body(500, message))

    def _usage(self, body: dict[str, Any], reply: FakeReply) -> dict[str, int]:
        if reply.usage is not None:
            prompt, output = reply.usage
        else:
            prompt = estimate_tokens(request_chars(body))
            output = estimate_tokens(reply.output_chars())
        return {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
        }

    def _finish_reason(self, reply: FakeReply) -> str:
        if reply.tool_calls and reply.done_reason == "stop":
            return "tool_calls"
        return reply.done_reason

    def _tail_events(self, index: int, body: dict[str, Any], reply: FakeReply) -> list[bytes]:
        events = []
        for i, tc in enumerate(reply.tool_calls):
            head = {
                "index": i,
                "id": tool_call_id(index, i, tc),
                "type": "function",
                "function": {"name": tc["name"], "arguments": ""},
            }
            events.append(self._chunk(index, body, {"tool_calls": [head]}))
            encoded = args_json(tc.get("args", {}))
            step = max(1, len(encoded) // 3 + 1)
            for start in range(0, len(encoded), step):
                piece = {"index": i, "function": {"arguments": encoded[start : start + step]}}
                events.append(self._chunk(index, body, {"tool_calls": [piece]}))
        events.append(self._chunk(index, body, {}, self._finish_reason(reply)))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage_chunk = json.loads(self._chunk(index, body, None)[len(b"data: ") :])
            usage_chunk["usage"] = self._usage(body, reply)
            events.append(self._sse(usage_chunk))
        events.append(b"data: [DONE]\n\n")
        return events

    def _complete_body(self, index: int, body: dict[str, Any], reply: FakeReply) -> Any:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.text if reply.text or not reply.tool_calls else None,
            "refusal": None,
        }
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": tool_call_id(index, i, tc),
                    "type": "function",
                    "function": {"name": tc["name"], "arguments": args_json(tc.get("args", {}))},
                }
                for i, tc in enumerate(reply.tool_calls)
            ]
        return {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self._finish_reason(reply),
                }
            ],
            "usage": self._usage(body, reply),
        }
