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

The context window, as a real Ollama (server/prompt.go `chatPrompt`, then the runner's
`NewSequence`): the window is `options.num_ctx` as sent, else the model's server default
(`FakeOllamaModel.default_num_ctx`, 4096 as Ollama below 24 GiB of VRAM), capped at the
trained `context_length` (Ollama warns "requested context size too large for model"
and loads that) and at `max_num_ctx` (a server that loads a smaller window than asked:
the OpenAI-compatible /v1 endpoint ignores num_ctx). A prompt (messages + tool specs,
by `estimate_tokens`) over the window is cut SILENTLY from the front:
1. whole messages are dropped from the front, always keeping the system messages and
   the last message, never leaving a tool reply without its assistant tool-call turn;
2. if that is still too long, tokens are discarded from the front of the rendered
   prompt. The runner keeps the first `num_keep` (4) tokens, which in a real prompt are
   the template's header (BOS, the system role header), not text, so the fake drops text
   from the very start: the system prompt first, then the tool specs (rendered after it,
   dropped whole, as the runner leaves a clipped spec the model cannot use), then the
   next messages, clipping the first one kept.
The reply's `prompt_eval_count` is what was kept, the script/responder sees the kept
body, `chat_requests()` stays what was sent and `chat_log` pairs both (`ChatRecord`).

Thinking models (`FakeOllamaModel.thinking`): "thinking" in /api/show's capabilities;
such a model thinks unless the request says `think: false` (its scripted `thinking`,
else a default trace of `default_thinking_tokens` one-token pieces), and the trace
counts toward `num_predict`. With `think: false` it does not think unless the reply says
`think_anyway`. `think` true (or a level) on a model without the capability is HTTP 400
`"<model>" does not support thinking`; `think: false` is accepted (server/routes.go).
A reply with `inline_think` writes the trace into `content` as `<think>...</think>`.
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
    message_chars,
    prompt_chars,
    tool_call_id,
    tool_spec_chars,
)

__all__ = [
    "DEFAULT_NUM_CTX",
    "GRAMMAR_ERROR",
    "RUNNER_TERMINATED",
    "ChatRecord",
    "FakeOllamaModel",
    "FakeOllamaServer",
    "fit_to_window",
    "grammar_refusal",
    "prompt_tokens",
    "thinks",
]

DEFAULT_NUM_CTX = 4096
"""Ollama's window when a request sends no num_ctx: 4k below 24 GiB of VRAM (its
docs/context-length.mdx; 32k for 24-48 GiB, 256k above)."""
THINK_LEVELS = ("high", "medium", "low")

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


def prompt_tokens(body: dict[str, Any]) -> int:
    """The fake's token count of a chat request's prompt: messages and tool specs."""
    return estimate_tokens(prompt_chars(body))


def _tool_block_start(messages: list[dict[str, Any]], i: int) -> int:
    """Where the block holding message `i` starts: a tool reply belongs with the
    assistant turn that made the call (Ollama's toolBlockStartIndex)."""
    if i <= 0 or i >= len(messages) or messages[i].get("role") != "tool":
        return i
    start = i
    while start > 0 and messages[start - 1].get("role") == "tool":
        start -= 1
    before = start - 1
    if (
        before >= 0
        and messages[before].get("role") == "assistant"
        and messages[before].get("tool_calls")
    ):
        return before
    return i


def fit_to_window(body: dict[str, Any], window: int) -> dict[str, Any]:
    """`body` as the model sees it in a `window`-token context: itself when it fits,
    else cut from the front as Ollama does (see the module docstring)."""
    if prompt_tokens(body) <= window:
        return body
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    tools = list(body.get("tools") or [])
    # 1. chatPrompt: drop whole messages from the front, keeping system messages and
    #    the last message.
    kept = messages
    for i in range(len(messages)):
        start = _tool_block_start(messages, i)
        system = [m for m in messages[:start] if m.get("role") == "system"]
        kept = system + messages[start:]
        if prompt_tokens({"messages": kept, "tools": tools}) <= window or i == len(messages) - 1:
            break
    # 2. The runner: discard text from the front of the rendered prompt. Order: the
    #    leading system messages, the tool specs, the rest.
    excess = prompt_chars({"messages": kept, "tools": tools}) - window * 4
    lead = 0
    while lead < len(kept) and kept[lead].get("role") == "system":
        lead += 1
    out: list[dict[str, Any]] = []
    out_tools = tools

    def cut(msgs: list[dict[str, Any]]) -> None:
        nonlocal excess
        for m in msgs:
            if excess <= 0:
                out.append(m)
                continue
            size = message_chars(m)
            content = m.get("content")
            if size <= excess:
                excess -= size
            elif isinstance(content, str) and excess < len(content):
                out.append({**m, "content": content[excess:]})
                excess = 0
            else:
                excess = 0  # the rest of a message cut inside its tool calls is noise

    cut(kept[:lead])
    if excess > 0 and tools:
        out_tools = []
        for t in tools:
            if excess > 0:
                excess -= tool_spec_chars(t)
            else:
                out_tools.append(t)
    cut(kept[lead:])
    fitted = {**body, "messages": out}
    if "tools" in body:
        fitted["tools"] = out_tools
    return fitted


def thinks(model: FakeOllamaModel, body: dict[str, Any], reply: FakeReply) -> bool:
    """Whether `model` thinks on this request: a thinking model thinks unless told
    `think: false` (and the reply does not think anyway)."""
    return model.thinking and (body.get("think") is not False or reply.think_anyway)


@dataclass
class ChatRecord:
    """One chat request that reached the model: as sent, and as the model saw it."""

    sent: dict[str, Any]
    kept: dict[str, Any]
    window: int
    sent_tokens: int
    kept_tokens: int

    @property
    def truncated(self) -> bool:
        return self.kept is not self.sent


@dataclass
class FakeOllamaModel:
    """A model the fake server has "pulled".

    `context_length` is the trained maximum /api/show reports; the loaded window is
    the request's num_ctx, else `default_num_ctx`, capped at both `context_length` and
    `max_num_ctx` (None: no cap). `thinking`: a thinking model (see the module
    docstring); `default_thinking_tokens` pieces of `default_thinking_piece` are its
    trace when a reply scripts none.
    """

    name: str
    tools: bool = True
    context_length: int = 8192
    family: str = "llama"
    parameter_size: str = "3.2B"
    quantization_level: str = "Q4_K_M"
    size: int = 2_019_393_189
    default_num_ctx: int = DEFAULT_NUM_CTX
    max_num_ctx: int | None = None
    thinking: bool = False
    default_thinking_tokens: int = 256
    default_thinking_piece: str = "hmm "

    def __post_init__(self) -> None:
        self.name = normalize_model_name(self.name)

    def window(self, body: dict[str, Any]) -> int:
        """The context window a request gets, in tokens."""
        options = body.get("options")
        asked = options.get("num_ctx") if isinstance(options, dict) else None
        n = asked if isinstance(asked, int) and asked > 0 else self.default_num_ctx
        n = min(n, self.context_length)
        return min(n, self.max_num_ctx) if self.max_num_ctx else n

    @property
    def capabilities(self) -> list[str]:
        caps = ["completion"]
        if self.tools:
            caps.append("tools")
        if self.thinking:
            caps.append("thinking")
        return caps

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
        self._chat_log: list[ChatRecord] = []
        self._counted: list[tuple[int, int]] = []
        for m in models:
            self.add_model(m)

    @property
    def chat_log(self) -> list[ChatRecord]:
        """Every chat request that reached a model, sent and kept (see `ChatRecord`);
        requests refused before (404, 400, 500 grammar) are not in it."""
        with self._lock:
            return list(self._chat_log)

    @property
    def counted(self) -> list[tuple[int, int]]:
        """(prompt_eval_count, eval_count) of each reply that reached its end, in order:
        the tokens the server says each call cost."""
        with self._lock:
            return list(self._counted)

    def kept_requests(self) -> list[dict[str, Any]]:
        """The chat bodies as the model saw them (cut to its window), in order."""
        return [r.kept for r in self.chat_log]

    def truncations(self) -> list[ChatRecord]:
        """The chat requests the server cut to fit its window."""
        return [r for r in self.chat_log if r.truncated]

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
        capabilities = m.capabilities
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
        think = body.get("think")
        if isinstance(think, str) and think not in THINK_LEVELS:
            h.send_json(
                400,
                {
                    "error": f"invalid think value: {json.dumps(think)} "
                    '(must be "high", "medium", "low", true, or false)'
                },
            )
            return
        if think not in (None, False) and not m.thinking:
            h.send_json(400, {"error": f"{json.dumps(requested)} does not support thinking"})
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
        window = m.window(body)
        kept = fit_to_window(body, window)
        record = ChatRecord(body, kept, window, prompt_tokens(body), prompt_tokens(kept))
        with self._lock:
            self._chat_log.append(record)
        self._serve_chat(h, kept, stream=body.get("stream", True) is not False)

    def _next_item(self, body: dict[str, Any]) -> tuple[int, FakeReply | BaseException]:
        index, reply = super()._next_item(body)
        if not isinstance(reply, FakeReply):
            return index, reply
        model = self.find_model(body.get("model") or "")
        if model is not None:
            reply = self._think(model, body, reply)
        options = body.get("options")
        limit = options.get("num_predict") if isinstance(options, dict) else None
        if isinstance(limit, int) and limit > 0:
            reply = cut_to_num_predict(reply, limit)
        return index, reply

    def _think(self, model: FakeOllamaModel, body: dict[str, Any], reply: FakeReply) -> FakeReply:
        """`reply` with the trace this model sends on this request (see the module
        docstring): none when told not to think, a default one when none is scripted,
        in `content` as `<think>...</think>` when the reply says `inline_think`."""
        trace = reply.thinking
        if trace is None and isinstance(reply.inline_think, str):
            trace = [reply.inline_think]
        if model.thinking:
            if not thinks(model, body, reply):
                trace = None
            elif trace is None:
                trace = [model.default_thinking_piece] * model.default_thinking_tokens
        if not reply.inline_think:
            return dataclasses.replace(reply, thinking=trace)
        if not trace:
            return dataclasses.replace(reply, thinking=None)
        inline = f"<think>{''.join(trace)}</think>\n\n{reply.text}"
        chunks = None
        if reply.stream_chunks is not None:
            chunks = ["<think>", *trace, "</think>\n\n", *reply.stream_chunks]
        return dataclasses.replace(
            reply, thinking=None, text="" if chunks else inline, stream_chunks=chunks
        )

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
            prompt = prompt_tokens(body)
            # eval_count counts the thinking too (a token a piece).
            output = estimate_tokens(reply.output_chars()) + len(reply.thinking or [])
        with self._lock:
            self._counted.append((prompt, output))
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
        if reply.thinking:
            message["thinking"] = "".join(reply.thinking)
        if reply.tool_calls:
            message["tool_calls"] = self._tool_calls(index, reply)
        return {
            "model": body.get("model"),
            "created_at": _now(),
            "message": message,
            **self._stats(body, reply),
        }
