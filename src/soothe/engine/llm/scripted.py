"""A scripted LangChain chat model: replays canned replies and records every prompt.

`ScriptedChatModel` is a real `BaseChatModel`, so it goes everywhere a `ChatOllama`
goes (LangGraph nodes, `bind_tools`, `.bind(format=...)`, `astream`). Unlike
LangChain's `GenericFakeChatModel` it binds tools and streams tool calls as
`tool_call_chunks`, so the aggregated chunk has proper `.tool_calls`.

Script items (a list, consumed in call order) or the return value of a `responder`:

* `str` - a plain text reply;
* `dict` / `list` / pydantic model - serialised to JSON text (scripted structured output);
* `ScriptedReply` - text, tool calls, usage, delays, explicit stream chunks, a
  `done_reason`, or an `error` raised after the text has streamed;
* an `Exception` instance - raised when that call is reached.

The same vocabulary is reused by the fake HTTP servers in `tests/fakes`.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import invalid_tool_call, tool_call, tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, PrivateAttr

__all__ = [
    "Responder",
    "ScriptExhausted",
    "ScriptedCall",
    "ScriptedChatModel",
    "ScriptedReply",
    "estimate_tokens",
    "message_chars",
    "split_text",
    "to_reply",
]


class ScriptExhausted(RuntimeError):
    """A scripted model (or fake server) was called more often than it was scripted for."""


@dataclass
class ScriptedReply:
    """One scripted model reply.

    `tool_calls` items are `{"name": str, "args": dict | str, "id": str (optional)}`;
    a `str` args value is sent verbatim (use it to script malformed JSON arguments).
    `usage` is `(input_tokens, output_tokens)`; estimated as chars/4 when omitted.
    `delay` is waited before the reply starts, `chunk_delay` between streamed chunks.
    `stream_chunks` fixes how the text is split when streamed (their join is the text).
    `error` (an exception, or a message wrapped in RuntimeError) is raised after the
    text has been streamed - a mid-stream failure; on invoke it is raised after `delay`.
    """

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: tuple[int, int] | None = None
    delay: float = 0.0
    stream_chunks: list[str] | None = None
    chunk_delay: float = 0.0
    done_reason: str = "stop"
    error: BaseException | str | None = None

    def __post_init__(self) -> None:
        if self.stream_chunks is not None:
            joined = "".join(self.stream_chunks)
            if self.text and self.text != joined:
                msg = "ScriptedReply: text and stream_chunks disagree"
                raise ValueError(msg)
            self.text = joined
        for tc in self.tool_calls:
            if "name" not in tc:
                msg = f"ScriptedReply tool call without a name: {tc!r}"
                raise ValueError(msg)

    def chunks(self) -> list[str]:
        """The text pieces a stream delivers (words, unless `stream_chunks` is set)."""
        if self.stream_chunks is not None:
            return [c for c in self.stream_chunks if c]
        return split_text(self.text)

    def exception(self) -> BaseException | None:
        """The mid-stream error as an exception instance (or None)."""
        if self.error is None or isinstance(self.error, BaseException):
            return self.error
        return RuntimeError(self.error)

    def output_chars(self) -> int:
        """Characters produced: the text plus the tool calls' names and arguments."""
        n = len(self.text)
        for tc in self.tool_calls:
            n += len(tc["name"]) + len(args_json(tc.get("args", {})))
        return n


# A responder decides the reply from the prompt: (messages, call info) -> script item.
Responder = Callable[[list[BaseMessage], dict[str, Any]], Any]


@dataclass
class ScriptedCall:
    """The record of one model call."""

    index: int
    messages: list[BaseMessage]
    tools: list[dict[str, Any]]
    kwargs: dict[str, Any]
    stop: list[str] | None
    streamed: bool
    reply: ScriptedReply | BaseException | None = None

    @property
    def tool_names(self) -> list[str]:
        return [t.get("function", {}).get("name", "") for t in self.tools]

    @property
    def prompt_chars(self) -> int:
        return sum(message_chars(m) for m in self.messages)

    def as_dict(self) -> dict[str, Any]:
        """The call info handed to a responder."""
        return {
            "index": self.index,
            "tools": self.tools,
            "tool_names": self.tool_names,
            "kwargs": self.kwargs,
            "stop": self.stop,
            "streamed": self.streamed,
        }


def split_text(text: str) -> list[str]:
    """Split text into word-sized stream pieces whose join is exactly `text`."""
    return re.findall(r"\S+\s*|\s+", text)


def estimate_tokens(chars: int) -> int:
    """A rough token count: one token per four characters, rounded up."""
    return (chars + 3) // 4


def args_json(args: Any) -> str:
    """Tool-call arguments as a JSON string (a `str` is taken as already encoded)."""
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def message_chars(message: BaseMessage) -> int:
    """Characters of a message's text content plus any tool calls it carries."""
    content = message.content
    if isinstance(content, str):
        n = len(content)
    else:
        n = 0
        for block in content:
            if isinstance(block, str):
                n += len(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                n += len(block["text"])
    for tc in getattr(message, "tool_calls", None) or []:
        n += len(tc["name"]) + len(json.dumps(tc["args"], ensure_ascii=False))
    return n


def to_reply(item: Any) -> ScriptedReply | BaseException:
    """Normalise a script item into a `ScriptedReply` (or the exception to raise)."""
    if isinstance(item, ScriptedReply | BaseException):
        return item
    if isinstance(item, str):
        return ScriptedReply(text=item)
    if isinstance(item, BaseModel):
        return ScriptedReply(text=item.model_dump_json())
    if isinstance(item, dict | list):
        return ScriptedReply(text=json.dumps(item, ensure_ascii=False))
    msg = f"unsupported script item of type {type(item).__name__}: {item!r}"
    raise TypeError(msg)


class ScriptedChatModel(BaseChatModel):
    """A chat model that replays `script` (then asks `responder`) and records each call.

    Script items are consumed in the order calls reach the model; every call is
    appended to `calls` first, even one that then fails or finds the script empty.
    `keep_calls` bounds what `calls` holds (the newest that many; None: every call, as
    tests read them): the demo model is a user's model, and a record of every call holds
    every prompt of the session (~0.2 MB a request in a 100-request session).
    """

    script: list[Any] = []
    responder: Responder | None = None
    model_name: str = "scripted"
    keep_calls: int | None = None

    _queue: deque[Any] = PrivateAttr(default_factory=deque)
    _calls: list[ScriptedCall] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _scripted: int = PrivateAttr(default=0)
    _made: int = PrivateAttr(default=0)

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._queue.extend(self.script)
        self._scripted = len(self.script)

    # -- public helpers -------------------------------------------------------------

    @property
    def calls(self) -> list[ScriptedCall]:
        """The calls made so far, in order (shared by all bound runnables): every one,
        or the newest ``keep_calls``."""
        return self._calls

    @property
    def remaining(self) -> int:
        """Script items not consumed yet."""
        with self._lock:
            return len(self._queue)

    def extend(self, items: Sequence[Any]) -> None:
        """Append more items to the script."""
        with self._lock:
            self._queue.extend(items)
            self._scripted += len(items)

    def prompt_chars(self, i: int = -1) -> int:
        """Characters in the prompt of call `i` (default: the last call)."""
        return self._calls[i].prompt_chars

    # -- LangChain plumbing -------------------------------------------------------

    @property
    def _llm_type(self) -> str:
        return "scripted-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | Any],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(t) for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call, reply = self._next(messages, stop, kwargs, streamed=False)
        if reply.delay:
            time.sleep(reply.delay)
        return self._result(call, reply)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call, reply = self._next(messages, stop, kwargs, streamed=False)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        return self._result(call, reply)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        call, reply = self._next(messages, stop, kwargs, streamed=True)
        if reply.delay:
            time.sleep(reply.delay)
        for i, chunk in enumerate(self._chunk_messages(call, reply)):
            if i and reply.chunk_delay:
                time.sleep(reply.chunk_delay)
            gen = ChatGenerationChunk(message=chunk)
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=gen)
            yield gen

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        call, reply = self._next(messages, stop, kwargs, streamed=True)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        for i, chunk in enumerate(self._chunk_messages(call, reply)):
            if i and reply.chunk_delay:
                await asyncio.sleep(reply.chunk_delay)
            gen = ChatGenerationChunk(message=chunk)
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=gen)
            yield gen

    # -- internals ------------------------------------------------------------------

    def _next(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        kwargs: dict[str, Any],
        *,
        streamed: bool,
    ) -> tuple[ScriptedCall, ScriptedReply]:
        """Record the call and take its reply; raises scripted exceptions.

        Runs without awaiting, so concurrent asyncio tasks consume the script in the
        order their calls reach the model; the lock covers threads.
        """
        extra = dict(kwargs)
        tools = list(extra.pop("tools", None) or [])
        with self._lock:
            call = ScriptedCall(
                index=self._made,
                messages=list(messages),
                tools=tools,
                kwargs=extra,
                stop=stop,
                streamed=streamed,
            )
            self._made += 1
            self._calls.append(call)
            if self.keep_calls is not None and len(self._calls) > self.keep_calls:
                del self._calls[: len(self._calls) - self.keep_calls]
            has_item = bool(self._queue)
            item = self._queue.popleft() if has_item else None
        if not has_item:
            if self.responder is None:
                msg = (
                    f"ScriptedChatModel {self.model_name!r}: script exhausted - "
                    f"{self._made} calls made, only {self._scripted} replies scripted"
                )
                raise ScriptExhausted(msg)
            item = self.responder(call.messages, call.as_dict())
        reply = to_reply(item)
        call.reply = reply
        if isinstance(reply, BaseException):
            raise reply
        return call, reply

    def _usage(self, call: ScriptedCall, reply: ScriptedReply) -> UsageMetadata:
        if reply.usage is not None:
            tin, tout = reply.usage
        else:
            tin = estimate_tokens(call.prompt_chars)
            tout = estimate_tokens(reply.output_chars())
        return UsageMetadata(input_tokens=tin, output_tokens=tout, total_tokens=tin + tout)

    def _response_metadata(self, reply: ScriptedReply) -> dict[str, Any]:
        return {"done_reason": reply.done_reason, "model_name": self.model_name}

    def _tool_call_id(self, call: ScriptedCall, i: int, tc: dict[str, Any]) -> str:
        return str(tc.get("id") or f"call_{call.index}_{i}")

    def _result(self, call: ScriptedCall, reply: ScriptedReply) -> ChatResult:
        if (err := reply.exception()) is not None:
            raise err
        tool_calls = []
        invalid = []
        for i, tc in enumerate(reply.tool_calls):
            tc_id = self._tool_call_id(call, i, tc)
            args = tc.get("args", {})
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except json.JSONDecodeError as e:
                    invalid.append(
                        invalid_tool_call(name=tc["name"], args=args, id=tc_id, error=str(e))
                    )
                    continue
            if not isinstance(args, dict):
                invalid.append(
                    invalid_tool_call(
                        name=tc["name"], args=args_json(args), id=tc_id, error="not an object"
                    )
                )
                continue
            tool_calls.append(tool_call(name=tc["name"], args=args, id=tc_id))
        message = AIMessage(
            content=reply.text,
            tool_calls=tool_calls,
            invalid_tool_calls=invalid,
            usage_metadata=self._usage(call, reply),
            response_metadata=self._response_metadata(reply),
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _chunk_messages(self, call: ScriptedCall, reply: ScriptedReply) -> Iterator[AIMessageChunk]:
        """The streamed chunks; a scripted `error` is raised after the text."""
        for piece in reply.chunks():
            yield AIMessageChunk(content=piece)
        if (err := reply.exception()) is not None:
            raise err
        for i, tc in enumerate(reply.tool_calls):
            encoded = args_json(tc.get("args", {}))
            half = len(encoded) // 2
            # Name and id first, then the arguments in two pieces, like real providers.
            yield AIMessageChunk(
                content="",
                tool_call_chunks=[
                    tool_call_chunk(
                        name=tc["name"],
                        args=encoded[:half],
                        id=self._tool_call_id(call, i, tc),
                        index=i,
                    )
                ],
            )
            yield AIMessageChunk(
                content="",
                tool_call_chunks=[
                    tool_call_chunk(name=None, args=encoded[half:], id=None, index=i)
                ],
            )
        yield AIMessageChunk(
            content="",
            usage_metadata=self._usage(call, reply),
            response_metadata=self._response_metadata(reply),
            chunk_position="last",
        )
