"""Shared machinery of the fake model servers: HTTP plumbing, scripts, recording.

A fake server runs a stdlib `ThreadingHTTPServer` on 127.0.0.1 in a daemon thread.
Requests to its chat path consume a script (the same item vocabulary as
`soothe.engine.llm.scripted`) or ask a `responder(body) -> item`. Providers
(`FakeOllamaServer`, `FakeOpenAIServer`) only define routes and wire encodings.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self
from urllib.parse import urlsplit

from soothe.engine.llm.scripted import ScriptedReply, ScriptExhausted, args_json, to_reply

ServerResponder = Callable[[dict[str, Any]], Any]


@dataclass
class FakeReply(ScriptedReply):
    """A `ScriptedReply` with failure modes that only exist on the wire.

    The inherited fields work as for the scripted model: `delay` is waited before the
    first byte (before the status line), `chunk_delay` between streamed chunks,
    `error` becomes the provider's in-stream error event after the text chunks
    (HTTP status stays 200), `done_reason` fills Ollama's `done_reason` /
    OpenAI's `finish_reason`.

    `drop`: after the text chunks, close the socket without finishing the body.
    `hang`: never answer; the handler returns when the server stops (or after the
    server's `hang_limit`), closing the connection.

    What a real server may do and a client must bound itself (``num_predict`` is a
    request, not a promise; a read timeout only measures the gap between bytes):
    `thinking`: pieces streamed before the text as the provider's thinking field
    (Ollama's ``message.thinking``); they count toward the server's ``num_predict``.
    `endless`: after the text chunks, keep streaming `endless_piece` as one more token
    (in the thinking field when `endless_thinking`) and never send the end, whatever
    ``num_predict`` asked: until the client hangs up, the server stops, or `hang_limit`
    seconds pass (then the connection is cut).
    `stall`: after the headers and the text chunks (none: right after the headers),
    send nothing more until the server stops or `hang_limit` passes, then cut it.
    `trickle`: the streamed body goes out one byte at a time, this many seconds apart
    (each byte keeps a read timeout from tripping; no line is ever complete).

    Thinking models (the fake Ollama; see `FakeOllamaModel.thinking`):
    `inline_think`: the trace is written into the content as ``<think>...</think>``
    before the answer (older servers, some qwen3 templates), not in ``message.thinking``;
    a string is the trace itself (when `thinking` is not scripted).
    `think_anyway`: the model thinks although the request said ``think: false`` (some
    models and templates ignore it).
    """

    drop: bool = False
    hang: bool = False
    thinking: list[str] | None = None
    endless: bool = False
    endless_piece: str = "tok "
    endless_thinking: bool = False
    stall: bool = False
    trickle: float = 0.0
    inline_think: bool | str = False
    think_anyway: bool = False


class FakeHTTPError(Exception):
    """Script item: answer with this HTTP status and error message (e.g. 429, 500)."""

    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


@dataclass
class RecordedRequest:
    """One request as the fake server received it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    raw: bytes = field(repr=False)


class _Disconnected(Exception):
    """Raised inside a handler once the connection has been dropped."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], fake: FakeServer) -> None:
        self.fake = fake
        self.stop_event = threading.Event()
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up on a keep-alive connection are normal; record the rest."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | OSError):
            return
        self.fake.errors.append(traceback.format_exc())

    def close_connections(self) -> None:
        with self.connections_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    # -- lifecycle --------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        fake = self.server.fake
        try:
            raw = self._read_body()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            parts = urlsplit(self.path)
            req = RecordedRequest(
                method=self.command,
                path=parts.path,
                query=parts.query,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                raw=raw,
            )
            fake._record(req)
            fake._route(self, req)
        except (_Disconnected, BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:
            fake.errors.append(traceback.format_exc())
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.send_text(500, "fake server crashed; see server.errors")

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    # -- response helpers ----------------------------------------------------------------

    def send_bytes(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj, ensure_ascii=False).encode()
        self.send_bytes(status, data, "application/json; charset=utf-8", headers)

    def send_text(self, status: int, text: str) -> None:
        self.send_bytes(status, text.encode(), "text/plain; charset=utf-8")

    def start_stream(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")

    def trickler(self, gap: float) -> Callable[[bytes], None]:
        """A ``write_chunk`` that sends its data one byte at a time, ``gap`` s apart."""

        def write(data: bytes) -> None:
            for i in range(len(data)):
                self.wait(gap)
                self.write_chunk(data[i : i + 1])
                self.wfile.flush()

        return write

    def drop(self) -> None:
        """Close the connection abruptly (FIN, no end of the chunked body)."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        raise _Disconnected

    def wait(self, seconds: float) -> None:
        """Sleep, but drop the connection at once if the server is stopping."""
        if self.server.stop_event.wait(seconds):
            self.drop()


class FakeServer:
    """Base of the fake model servers: lifecycle, script and request log.

    `script`: items consumed in order by chat requests; `responder(body)` is asked
    once the script is empty. With neither left, the chat request gets HTTP 500
    naming how many chat calls were made. Server-side bugs land in `errors`.
    """

    chat_path: ClassVar[str] = ""
    name: ClassVar[str] = "fake"

    def __init__(
        self,
        script: Iterable[Any] = (),
        *,
        responder: ServerResponder | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        hang_limit: float = 30.0,
    ) -> None:
        self.host = host
        self.responder = responder
        self.hang_limit = hang_limit
        self.errors: list[str] = []
        self._port = port
        self._queue: deque[Any] = deque(script)
        self._scripted = len(self._queue)
        self._chat_calls = 0
        self.endless_tokens = 0
        """Tokens sent by `FakeReply.endless` streams past their scripted text."""
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> Self:
        """Start serving (again on the same port after a `stop()`)."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self.host, self._port), self)
        self._port = httpd.server_address[1]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name=f"{self.name}-server-{self._port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and cut every open connection (hanging replies end too)."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._httpd = self._thread = None
        httpd.stop_event.set()
        httpd.shutdown()
        httpd.server_close()
        httpd.close_connections()
        if thread is not None:
            thread.join(timeout=5)

    def restart(self) -> Self:
        self.stop()
        return self.start()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if not self._port:
            msg = "server was never started"
            raise RuntimeError(msg)
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- script and records --------------------------------------------------------------

    def extend(self, items: Sequence[Any]) -> None:
        """Append items to the script."""
        with self._lock:
            self._queue.extend(items)
            self._scripted += len(items)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far."""
        with self._lock:
            return list(self._requests)

    def chat_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat requests, in order."""
        return [r.body for r in self.requests if r.path == self.chat_path]

    def last_chat(self) -> dict[str, Any]:
        chats = self.chat_requests()
        if not chats:
            msg = "no chat request was received"
            raise AssertionError(msg)
        return chats[-1]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(req)

    def _next_item(self, body: dict[str, Any]) -> tuple[int, FakeReply | BaseException]:
        """Take the reply for a chat request: (chat call index, reply or exception)."""
        with self._lock:
            index = self._chat_calls
            self._chat_calls += 1
            has_item = bool(self._queue)
            item = self._queue.popleft() if has_item else None
        if not has_item:
            if self.responder is None:
                msg = (
                    f"{type(self).__name__}: script exhausted - {index + 1} chat calls "
                    f"made, only {self._scripted} replies scripted"
                )
                return index, ScriptExhausted(msg)
            item = self.responder(body)
        reply = to_reply(item)
        if isinstance(reply, BaseException):
            return index, reply
        if not isinstance(reply, FakeReply):
            reply = FakeReply(**vars(reply))
        return index, reply

    # -- request handling ----------------------------------------------------------------

    def _route(self, h: _Handler, req: RecordedRequest) -> None:
        raise NotImplementedError

    def _serve_chat(self, h: _Handler, body: dict[str, Any], stream: bool) -> None:
        """Consume the script and answer a chat request in the provider's encoding."""
        index, reply = self._next_item(body)
        if isinstance(reply, BaseException):
            status = reply.status if isinstance(reply, FakeHTTPError) else 500
            headers = reply.headers if isinstance(reply, FakeHTTPError) else None
            message = reply.message if isinstance(reply, FakeHTTPError) else str(reply)
            self._send_error(h, status, message, headers)
            return
        if reply.hang:
            h.wait(self.hang_limit)
            h.drop()
        if reply.delay:
            h.wait(reply.delay)
        if not stream:
            if reply.drop:
                h.drop()
            if (err := reply.exception()) is not None:
                self._send_error(h, 500, str(err))
                return
            h.send_json(200, self._complete_body(index, body, reply))
            return
        h.start_stream(self._stream_content_type())
        write = h.write_chunk if not reply.trickle else h.trickler(reply.trickle)
        for event in self._head_events(index, body):
            write(event)
        for i, piece in enumerate(reply.thinking or []):
            if i and reply.chunk_delay:
                h.wait(reply.chunk_delay)
            write(self._thinking_event(index, body, piece))
        for i, piece in enumerate(reply.chunks()):
            if (i or reply.thinking) and reply.chunk_delay:
                h.wait(reply.chunk_delay)
            write(self._text_event(index, body, piece))
        if reply.endless:
            self._endless(h, write, index, body, reply)
        if reply.stall:
            h.wait(self.hang_limit)
            h.drop()
        if reply.drop:
            h.drop()
        if (err := reply.exception()) is not None:
            write(self._error_event(str(err)))
        else:
            for event in self._tail_events(index, body, reply):
                write(event)
        h.end_stream()

    def _endless(
        self,
        h: _Handler,
        write: Callable[[bytes], None],
        index: int,
        body: dict[str, Any],
        reply: FakeReply,
    ) -> None:
        """Stream one token after another, never the end (see `FakeReply.endless`)."""
        until = time.monotonic() + self.hang_limit
        event = self._thinking_event if reply.endless_thinking else self._text_event
        while time.monotonic() < until:
            if reply.chunk_delay:
                h.wait(reply.chunk_delay)
            elif h.server.stop_event.is_set():
                h.drop()
            write(event(index, body, reply.endless_piece))
            with self._lock:
                self.endless_tokens += 1
        h.drop()

    # Provider hooks.
    def _send_error(
        self, h: _Handler, status: int, message: str, headers: dict[str, str] | None = None
    ) -> None:
        raise NotImplementedError

    def _stream_content_type(self) -> str:
        raise NotImplementedError

    def _head_events(self, index: int, body: dict[str, Any]) -> list[bytes]:
        """Events sent right after the stream's headers."""
        return []

    def _text_event(self, index: int, body: dict[str, Any], piece: str) -> bytes:
        raise NotImplementedError

    def _thinking_event(self, index: int, body: dict[str, Any], piece: str) -> bytes:
        """A streamed piece of thinking (a provider without a thinking field: none)."""
        raise NotImplementedError(f"{type(self).__name__} streams no thinking")

    def _error_event(self, message: str) -> bytes:
        raise NotImplementedError

    def _tail_events(self, index: int, body: dict[str, Any], reply: FakeReply) -> list[bytes]:
        """Tool calls and the closing event(s) of a successful stream."""
        raise NotImplementedError

    def _complete_body(self, index: int, body: dict[str, Any], reply: FakeReply) -> Any:
        raise NotImplementedError


def tool_call_id(index: int, i: int, tc: dict[str, Any]) -> str:
    return str(tc.get("id") or f"call_{index}_{i}")


def message_chars(m: dict[str, Any]) -> int:
    """Characters of one wire message: its text and its tool calls' names and arguments."""
    n = 0
    content = m.get("content")
    if isinstance(content, str):
        n += len(content)
    elif isinstance(content, list):
        n += sum(len(p.get("text", "")) for p in content if isinstance(p, dict))
    for tc in m.get("tool_calls") or []:
        fn = tc.get("function", {})
        n += len(fn.get("name", "")) + len(args_json(fn.get("arguments", {})))
    return n


def request_chars(body: dict[str, Any]) -> int:
    """Characters of the messages in a chat request (text and tool-call arguments)."""
    return sum(message_chars(m) for m in body.get("messages") or [] if isinstance(m, dict))


def tool_spec_chars(tool: Any) -> int:
    """Characters one offered tool's spec takes in the prompt (its JSON)."""
    return len(json.dumps(tool, ensure_ascii=False))


def prompt_chars(body: dict[str, Any]) -> int:
    """Characters of the whole prompt a chat request makes: its messages and the specs
    of the tools it offers (the chat template renders both into the prompt)."""
    return request_chars(body) + sum(tool_spec_chars(t) for t in body.get("tools") or [])
