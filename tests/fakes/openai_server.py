"""`FakeOpenAIServer`: an OpenAI-compatible chat server (`/v1`) on 127.0.0.1.

Non-streaming and SSE streaming `/v1/chat/completions` (tool calls streamed as
deltas with index/id/name and argument string pieces, a usage chunk when
`stream_options.include_usage` is set, `data: [DONE]`), `/v1/models`, and the
OpenAI error shape `{"error": {"message", "type", "param", "code"}}` for 401
(wrong key), 404 (unknown model) and scripted statuses such as 429.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

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

__all__ = ["FakeOpenAIServer"]

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
    ) -> None:
        super().__init__(script, responder=responder, host=host, port=port, hang_limit=hang_limit)
        self.models = list(models)
        self.api_key = api_key

    # -- routes ------------------------------------------------------------------------

    def _route(self, h: _Handler, req: RecordedRequest) -> None:
        if req.path.startswith("/v1/") and not self._authorized(req):
            self._send_error(h, 401, "Incorrect API key provided.")
            return
        body = req.body if isinstance(req.body, dict) else {}
        match (req.method, req.path):
            case ("GET", "/v1/models"):
                h.send_json(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                            for m in self.models
                        ],
                    },
                )
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
