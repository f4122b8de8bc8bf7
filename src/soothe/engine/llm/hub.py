"""ModelHub: the one door to the model for the loop, the agent and the classifier.

Built once per session from ModelSettings. It builds chat models lazily per role,
streams with usage accounting (a ``Usage`` event per call), maps every client error to
``LLMError``, retries with backoff only where a retry can help (busy server, dropped
stream before any token was shown), and runs structured calls through native schema
mode -> strict parse -> local repair -> re-ask with the validation errors -> a typed
failure. Imported lazily: it pulls in LangChain.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import random
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.messages.utils import message_chunk_to_message
from pydantic import BaseModel

from soothe.engine.config import CallRole, ModelSettings
from soothe.engine.events import ModelContext, Usage
from soothe.engine.llm.budget import RunBudget, current_budget
from soothe.engine.llm.errors import LLMError, ModelErrorKind, call_expired, map_error
from soothe.engine.llm.factory import Role, build_chat_model, model_name_for
from soothe.engine.llm.packer import (
    Budget,
    Fitted,
    Overflow,
    Prompt,
    RecentPrompts,
    TokenEstimator,
    fit_messages,
    looks_truncated,
    message_chars,
    overflow_error,
)
from soothe.engine.llm.profile import ModelInfo
from soothe.engine.llm.schema import bounded_json_schema, sendable_tool
from soothe.engine.llm.structured import (
    StructuredResult,
    echo_text,
    feedback_text,
    parse_structured,
    schema_hint,
)
from soothe.engine.llm.thinking import (
    ThinkSplitter,
    ThinkValue,
    Thoughts,
    allowance_for,
    cut_while_thinking,
    split_think,
    think_value,
)
from soothe.engine.llm.toolcalls import normalize_tool_calls
from soothe.engine.llm.usage import UsageCounts, UsageTotals
from soothe.engine.llm.window import ContextWindow, resolve_window
from soothe.engine.scope import Scope, ScopeFields

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.runnables import Runnable

    from soothe.engine.bus import EventBus

__all__ = ["CUT_NOTE", "IdsLike", "ModelHub", "call_role_for", "coerce_ids", "prompt_chars"]


class GoalMeter(Protocol):
    """What the hub needs of per-goal budgets (``ContextEngine`` is one)."""

    def charge_goal(self, goal_id: str, calls: int, tokens: int) -> None: ...

    async def admit_goal(self, goal_id: str) -> str:
        """Empty to go on, or the cap the goal reached (``budget: tokens 200k``)."""
        ...


CUT_NOTE = "(cut at the token limit)"
"""Appended to a text reply that ended with done_reason "length": the user sees it was cut."""

_ROLE_BY_SCHEMA: dict[str, CallRole] = {
    "Classification": "classify",
    "StatusAssessment": "assess",
    "Reflection": "assess",
    "PlanGeneration": "plan",
    "GoalDecomposition": "plan",
}

_OLLAMA_OPTIONS = (
    "mirostat",
    "mirostat_eta",
    "mirostat_tau",
    "num_ctx",
    "num_gpu",
    "num_thread",
    "repeat_last_n",
    "repeat_penalty",
    "temperature",
    "seed",
    "stop",
    "tfs_z",
    "top_k",
    "top_p",
)
"""ChatOllama's own option fields: an ``options`` binding replaces them all, so they are
copied into it beside ``num_predict``."""


def call_role_for(schema: type[BaseModel]) -> CallRole:
    """The reply-limit role of a structured call, by its schema."""
    return _ROLE_BY_SCHEMA.get(schema.__name__, "structured")


T = TypeVar("T", bound=BaseModel)
IdsLike = Scope | Mapping[str, Any] | None
"""Where a call belongs: a Scope (a plain ids mapping is still accepted from callers
not converted yet)."""


YIELD_EVERY = 4
"""Chunks read between turns given to the event loop while a reply streams."""

_THINKING: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "soothe_on_thinking", default=None
)
"""Where the reasoning of the reply being read goes (set by ``stream_text`` around its
call; the reading task inherits it)."""


def _merged(parts: list[AIMessageChunk]) -> AIMessageChunk | None:
    """The chunks of one reply as one message, merged once: adding them one by one copies
    the growing text and metadata each time (a 2,000-token reply: ~160 ms against ~15)."""
    if not parts:
        return None
    from langchain_core.messages.ai import add_ai_message_chunks

    return parts[0] if len(parts) == 1 else add_ai_message_chunks(parts[0], *parts[1:])


def _raise_if_cancelled(task: asyncio.Task[Any] | None) -> None:
    """Raise CancelledError if this task was asked to stop and the stream went on.

    The HTTP stack can lose a cancellation: under load, anyio's cancel scopes in
    httpcore (read timeouts, the connect's task group) swallowed one that reached the task
    inside them, and the reply then streamed to its end (an interrupt that did nothing;
    3 of 12 runs of the cancel test with the CPU busy). The request stays on the task
    (``cancelling()``) until someone ``uncancel``s it, so it can be honoured here."""
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class _CallbackFailed(Exception):
    def __init__(self, original: Exception) -> None:
        super().__init__(str(original))
        self.original = original


async def _settle_abandoned_streams(timeout: float = 1.0) -> None:
    """Wait, bounded, for the finalizers that close a stream we stopped reading.

    Leaving ``async for`` early does not close LangChain's inner async generators;
    Python schedules their ``aclose()`` as tasks when they are collected. Waiting for
    those here means the HTTP stream is closed when the call returns, with no task
    left behind. (A cancellation needs none of this: it unwinds every frame.)
    """
    current = asyncio.current_task()
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    # Closing one generator lets go of the one inside it, whose close is scheduled
    # then: wait until none is left (bounded).
    while (left := end - loop.time()) > 0:
        pending = {
            t
            for t in asyncio.all_tasks()
            if t is not current and type(t.get_coro()).__name__ == "async_generator_athrow"
        }
        if not pending:
            break
        await asyncio.wait(pending, timeout=left)


def coerce_ids(ids: IdsLike) -> Scope | None:
    """The Scope of a call: a Scope as it is, or one from a thread/loop/goal/step mapping."""
    if ids is None or isinstance(ids, Scope):
        return ids
    get = ids.get
    return Scope(
        thread_id=get("thread_id", "") or "",
        loop_id=get("loop_id", None),
        goal_id=get("goal_id", None),
        step_id=get("step_id", None),
    )


def prompt_chars(messages: Sequence[BaseMessage]) -> int:
    """Characters of the text content and tool-call arguments of ``messages``."""
    n = 0
    for message in messages:
        n += len(message.text)
        for tc in getattr(message, "tool_calls", None) or []:
            n += len(tc["name"]) + len(str(tc["args"]))
    return n


def finish_reason(message: BaseMessage) -> str | None:
    meta = message.response_metadata or {}
    reason = meta.get("done_reason") or meta.get("finish_reason")
    return str(reason) if reason else None


class ModelHub:
    """Chat models per role, with streaming, structured output and usage accounting."""

    transport_retries: int = 2
    """Extra tries after a retryable transport error (busy server, dropped stream)."""
    backoff_s: float = 0.5
    """First backoff; doubled on each retry, with up to 25% jitter."""

    def __init__(
        self,
        settings: ModelSettings,
        bus: EventBus | None = None,
        *,
        models: Mapping[str, BaseChatModel] | None = None,
    ) -> None:
        self.settings = settings
        self.bus = bus
        self.usage = UsageTotals()
        self.structured_retries = settings.structured_retries
        self._injected = models is not None
        self._given: dict[str, BaseChatModel] = dict(models or {})
        self._models: dict[str, BaseChatModel] = dict(self._given)
        self.model_info: ModelInfo = ModelInfo()
        """What the server said about the model (the Session sets it: set_model_info)."""
        self.window: ContextWindow = resolve_window(settings, self.model_info)
        """The model's context window (window.py's one rule)."""
        self.goal_meter: GoalMeter | None = None
        """Per-goal caps (the Session sets the ContextEngine): charged after each request
        of a goal, asked before the next one."""

    def set_model_info(self, info: ModelInfo) -> None:
        """Take what the server said about the model; the window follows from it. What
        the packer learnt from the previous model's counts (a server's ceiling, the
        token estimate's calibration) is dropped: another model, another tokenizer."""
        self.model_info = info
        self.window = resolve_window(self.settings, info)
        self.__dict__.pop("_ceiling", None)
        self.__dict__.pop("_estimator", None)

    # --- models ----------------------------------------------------------------------------

    @property
    def provider(self) -> str:
        return self.settings.provider

    @property
    def base_url(self) -> str:
        return "" if self.provider == "demo" else self.settings.resolved_base_url()

    @property
    def display_name(self) -> str:
        return self.settings.display_name

    def model_name(self, role: Role = "default") -> str:
        if self.provider == "demo":
            return self.display_name
        return model_name_for(self.settings, role)

    def _key(self, role: Role) -> str:
        if role == "fast":
            if self._injected:
                return "fast" if "fast" in self._models else "default"
            if self.settings.fast_name and self.settings.fast_name != self.settings.name:
                return "fast"
        return "default"

    def chat_model(self, role: Literal["default", "fast"] = "default") -> BaseChatModel:
        """The chat model for ``role`` (built on first use, then cached)."""
        key = self._key(role)
        model = self._models.get(key)
        if model is None:
            model = build_chat_model(self.settings, "fast" if key == "fast" else "default")
            self._models[key] = model
        return model

    def warm(self) -> None:
        """Build the chat models now (the session does it in a thread at start): the
        first build costs ~0.2 s (pydantic models, an SSL context per HTTP client) that
        the first request would otherwise wait for on the event loop. A model that
        cannot be built is left for the first call to report."""
        for role in ("default", "fast"):
            with contextlib.suppress(Exception):
                self.chat_model(role)

    def reset_models(self) -> None:
        """Forget the models built so far; the next call builds them from the (possibly
        changed) settings. Models passed in as ``models=`` are kept."""
        self._models = dict(self._given)

    async def aclose(self) -> None:
        """Close the HTTP clients of the models built here (Ollama's, and the one the
        factory gives an OpenAI-compatible model)."""
        for model in self._models.values():
            ollama_client = getattr(model, "_async_client", None)
            for inner in (
                getattr(ollama_client, "_client", None),
                getattr(model, "http_async_client", None),
            ):
                if inner is not None and hasattr(inner, "aclose"):
                    with contextlib.suppress(Exception):
                        await inner.aclose()

    # --- calls -----------------------------------------------------------------------------

    async def stream_text(
        self,
        messages: list[BaseMessage] | Prompt,
        *,
        role: Literal["default", "fast"] = "default",
        tools: list[Any] | None = None,
        on_token: Callable[[str], None] | None = None,
        ids: IdsLike = None,
        coerce: bool = True,
        purpose: CallRole = "step",
        on_thinking: Callable[[str], None] | None = None,
    ) -> AIMessage:
        """Stream a reply, calling ``on_token`` per text piece; return the whole message.

        Tool calls on the result are parsed dicts checked against ``tools``; calls that
        cannot run are in ``invalid_tool_calls``. Their argument values are put back to
        the declared types (``toolcalls.coerce_args``) unless ``coerce`` is False: the
        agent does that itself, after its alias renaming. Raises ``LLMError`` on failure.

        ``purpose`` picks the reply limit (``model.num_predict``); a text reply cut at
        that limit ends with ``CUT_NOTE`` (also streamed), so nobody reads it as whole.

        Reasoning (a thinking model's trace, in its own field or as ``<think>`` in the
        content, split live even when a tag straddles chunks) never reaches ``on_token``
        nor the returned content: it goes to ``on_thinking`` in pieces of ~200 characters
        or a line (``thinking.Thoughts``) and stays in the message's
        ``additional_kwargs["reasoning_content"]``. A reply cut at its limit while still
        thinking is asked again once with the thinking allowance, not sent unchanged.
        """
        model = self.chat_model(role)
        bound: Runnable[Any, Any] = model.bind_tools(_sendable(tools)) if tools else model
        thoughts = Thoughts()

        def thinking(piece: str) -> None:
            if on_thinking is not None and (text := thoughts.add(piece)) is not None:
                on_thinking(text)

        for _ in range(2):
            runnable = self._limited(bound, model, purpose)
            token = _THINKING.set(thinking if on_thinking is not None else None)
            try:
                reply = await self._call(
                    runnable,
                    messages,
                    role=role,
                    ids=ids,
                    on_token=on_token,
                    limit=self.num_predict(purpose, role),
                )
            finally:
                _THINKING.reset(token)
            if on_thinking is not None and (rest := thoughts.take()) is not None:
                on_thinking(rest)
            before = self.num_predict(purpose, role)
            if not self.note_thinking(reply, role) or self.num_predict(purpose, role) <= before:
                break  # whole, or cut and the limit cannot grow: never asked again unchanged
        reply = normalize_tool_calls(reply, tools, coerce=coerce)
        if finish_reason(reply) == "length" and reply.text.strip() and not reply.tool_calls:
            note = f"\n\n{CUT_NOTE}"
            if on_token is not None:
                on_token(note)
            reply = reply.model_copy(update={"content": reply.text.rstrip() + note})
        return reply

    _thought: frozenset[str] = frozenset()
    """Models (by name) seen thinking without being asked: their calls get the allowance."""

    def think_for(self, purpose: CallRole, role: Role = "default") -> ThinkValue | None:
        """The ``think`` field of a call (None: not sent): only to an Ollama model whose
        capabilities (``/api/show``, the hub's ``model_info``) include thinking; false for
        every call but step and final answers (``model.think``)."""
        if self.provider != "ollama" or self.model_name(role) != self.settings.name:
            return None  # the fast model's capabilities are not known: send nothing
        info = getattr(self, "model_info", None)
        return think_value(self.settings.think, getattr(info, "capabilities", None), purpose)

    def note_thinking(self, reply: AIMessage, role: Role = "default") -> bool:
        """True when ``reply`` was cut at its limit while still thinking and its model did
        not have the thinking allowance yet: the model is remembered as one that thinks
        (its calls get the allowance from now on) and the call deserves one more try."""
        meta = reply.response_metadata or {}
        hidden = int(meta.get("thinking_tokens") or 0)
        if not cut_while_thinking(reply.text, finish_reason(reply), hidden):
            return False
        name = self.model_name(role)
        if name in self._thought or self.settings.thinking_allowance <= 0:
            return False
        self._thought = self._thought | {name}
        return True

    def num_predict(self, purpose: CallRole, role: Role = "default") -> int:
        """The reply limit (tokens) for ``purpose``; 0 means none. It holds the thinking
        allowance when the call asks the model to think, or its model was seen thinking
        anyway (``note_thinking``): a trace counts toward the limit. With the allowance the
        limit takes at most half the context window (the prompt needs the rest), never
        less than ``model.num_predict`` itself."""
        base = int(getattr(self.settings.num_predict, purpose))
        if base <= 0:
            return base
        thought = self.model_name(role) in self._thought
        extra = allowance_for(
            self.think_for(purpose, role), self.settings.thinking_allowance, thought=thought
        )
        window = int(getattr(getattr(self, "window", None), "tokens", 0) or 0)
        if extra and window > 0:
            return min(base + extra, max(base, window // 2))
        return base + extra

    def _limited(
        self, runnable: Runnable[Any, Any], model: BaseChatModel, purpose: CallRole
    ) -> Runnable[Any, Any]:
        """``runnable`` with the reply limit of ``purpose`` on the provider's wire:
        ``options.num_predict`` (Ollama), ``max_tokens`` (OpenAI-compatible; a binding's
        ``extra_body``, e.g. the structured ``response_format``, is kept); and Ollama's
        ``think`` where the model can think (``think_for``)."""
        role: Role = (
            "fast"
            if self._key("fast") == "fast" and model is self._models.get("fast")
            else "default"
        )
        limit = self.num_predict(purpose, role)
        kind = model._llm_type
        if kind == "chat-ollama":
            think = self.think_for(purpose, role)
            if think is not None:
                runnable = runnable.bind(reasoning=think)
        if limit <= 0:
            return runnable
        if kind.startswith("openai"):
            # ChatOpenAI renames max_tokens to max_completion_tokens, which Ollama's /v1
            # (0.32) and LM Studio silently ignore: send max_tokens in the body as well.
            bound = getattr(runnable, "kwargs", None) or {}
            body = {**(bound.get("extra_body") or {}), "max_tokens": limit}
            return runnable.bind(max_tokens=limit, extra_body=body)
        if kind == "chat-ollama":
            options = {
                name: value
                for name in _OLLAMA_OPTIONS
                if (value := getattr(model, name, None)) is not None
            }
            options["num_predict"] = limit
            return runnable.bind(options=options)
        return runnable

    async def structured(
        self,
        messages: list[BaseMessage] | Prompt,
        schema: type[T],
        *,
        role: Literal["default", "fast"] = "default",
        ids: IdsLike = None,
        retries: int | None = None,
        hint: bool = True,
        validate: Callable[[T], list[str]] | None = None,
        purpose: CallRole | None = None,
    ) -> StructuredResult[T]:
        """Ask for one ``schema`` object. Bad model output never raises: the result then
        has ``value=None`` and a one-line ``error``. Transport failures raise LLMError.

        ``messages`` is a message list or a ``packer.Prompt`` (packed by its parts).
        ``hint`` adds the compact schema to the system prompt (small models fill the
        fields better when they can read them); ``retries`` overrides the re-ask count.
        ``validate`` is the caller's semantic check (e.g. a plan's step cycle): the
        problems it returns for a schema-valid object go back to the model in the re-ask,
        like schema errors, instead of the object being accepted. ``purpose`` picks the
        reply limit (by default from the schema: ``call_role_for``).

        A re-ask is the first prompt with only the LAST bad reply (its echo clipped) and
        the feedback after it, packed to the same budget: it never grows. A reply cut at
        its token limit is not asked again unchanged: the feedback says to be shorter, and
        a model that was still thinking gets the thinking allowance (``note_thinking``).
        The result's ``context`` says when the prompt was clipped to the window or cut.
        """
        purpose = purpose or call_role_for(schema)
        json_schema = bounded_json_schema(schema)
        model = self.chat_model(role)
        bound = self._bind_schema(model, schema.__name__, json_schema)
        base: list[BaseMessage] | Prompt
        if isinstance(messages, Prompt):
            base = messages.with_system_note(schema_hint(json_schema)) if hint else messages
        else:
            base = with_system_note(messages, schema_hint(json_schema)) if hint else list(messages)
        retries = self.structured_retries if retries is None else retries
        attempts = 0
        raw = ""
        outcome = None
        note = PackNote()
        tail: list[BaseMessage] = []
        for _ in range(retries + 1):
            attempts += 1
            runnable = self._limited(bound, model, purpose)
            convo = base.with_tail(tail) if isinstance(base, Prompt) else [*base, *tail]
            reply = await self._call(
                runnable,
                convo,
                role=role,
                ids=ids,
                on_token=None,
                limit=self.num_predict(purpose, role),
                note=note,
            )
            raw = reply.text
            truncated = finish_reason(reply) == "length"
            outcome = parse_structured(raw, schema, truncated=truncated)
            if outcome.value is not None and validate is not None:
                problems = validate(outcome.value)
                if problems:
                    outcome.value, outcome.problems = None, problems[:6]
            if outcome.value is not None:
                return StructuredResult(
                    value=outcome.value,
                    attempts=attempts,
                    raw=raw,
                    repaired=outcome.repaired,
                    truncated=truncated,
                    context=_context_note(note),
                )
            if truncated:
                self.note_thinking(reply, role)  # still thinking: the allowance from now on
            tail = [
                AIMessage(content=echo_text(raw)),
                HumanMessage(content=feedback_text(outcome, schema.__name__, cut=truncated)),
            ]
        assert outcome is not None
        error = f"no valid {schema.__name__} from the model after {attempts} attempt(s): "
        error += "; ".join(outcome.problems)
        return StructuredResult(
            value=None,
            attempts=attempts,
            error=" ".join(error.split())[:300],
            raw=raw,
            repaired=outcome.repaired,
            truncated=outcome.truncated,
            problems=list(outcome.problems),
            context=_context_note(note),
        )

    def _bind_schema(
        self, model: BaseChatModel, name: str, json_schema: dict[str, Any]
    ) -> Runnable[Any, Any]:
        """The provider's native schema mode, leaving the raw text for a strict parse.

        OpenAI: ``response_format`` json_schema goes through ``extra_body`` so the client
        streams plain text (binding it directly routes through the SDK's lenient parse
        helper, which raises on a cut-off reply and hides the raw text). ``strict`` is
        off: strict mode rejects ``maxLength``, and most compatible servers ignore it.
        Ollama and the scripted/demo model: ``format`` with the schema.
        """
        if model._llm_type.startswith("openai"):
            safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:64]
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": safe or "result", "schema": json_schema, "strict": False},
            }
            return model.bind(extra_body={"response_format": response_format})
        return model.bind(format=json_schema)

    # --- the window (llm.packer) -------------------------------------------------------------

    @property
    def estimator(self) -> TokenEstimator:
        """This hub's token estimate, calibrated from the server's counts."""
        est = self.__dict__.get("_estimator")
        if est is None:
            est = self.__dict__["_estimator"] = TokenEstimator()
        return cast("TokenEstimator", est)

    def context_window(self) -> tuple[int, str]:
        """(the window the prompts are packed for, where it comes from): the model's window
        (``window.resolve_window``), lowered to the ceiling a server showed by cutting a
        prompt (``ModelContext``)."""
        window = getattr(self, "window", None)
        if window is not None:
            tokens, source = int(window.tokens), str(window.source)
        elif self.provider == "ollama":
            tokens, source = int(self.settings.num_ctx or 4096), "model.num_ctx"
        else:
            tokens, source = 8192, "assumed"
        ceiling = self.__dict__.get("_ceiling")
        return (min(tokens, ceiling), source) if ceiling else (tokens, source)

    def prompt_budget(
        self, purpose: CallRole, tools: Sequence[Any] | None = None, role: Role = "default"
    ) -> int:
        """Tokens (the hub's estimate) the messages of a ``purpose`` call may take, with
        ``tools`` offered: the window less the reply's reserve, a margin and the tools."""
        window, _ = self.context_window()
        specs = _sendable(tools) if tools else None
        tools_tokens = self.estimator.tools(specs)
        return Budget.of(window, self.num_predict(purpose, role), tools_tokens).tokens

    def _pack(
        self, messages: list[BaseMessage] | Prompt, budget: Budget, cap: int | None = None
    ) -> Fitted:
        """``messages`` fitted to ``budget`` (and to ``cap`` tokens, a re-pack's smaller
        size): a ``Prompt`` by its parts, then every list through the safety net
        (``packer.fit_messages``). One ``LLMError`` line when it cannot fit."""
        est = self.estimator
        tokens = budget.tokens if cap is None else min(budget.tokens, cap)
        changed = False
        if isinstance(messages, Prompt):
            msgs, packed = messages.messages(tokens, est)
            changed = packed.changed
        else:
            msgs = list(messages)
        try:
            fitted = fit_messages(msgs, tokens, est)
        except Overflow as exc:
            window, source = self.context_window()
            ceiling = self.__dict__.get("_ceiling")
            configured = getattr(getattr(self, "window", None), "tokens", None) or window
            needed = budget.needed(exc.needed)
            raise overflow_error(needed, int(configured), source, kept=ceiling) from None
        fitted.changed = fitted.changed or changed
        return fitted

    def _recent_prompts(self) -> RecentPrompts:
        """The last requests sent (what a server may hold cached: ``looks_truncated``)."""
        recent = self.__dict__.get("_recent")
        if recent is None:
            recent = self.__dict__["_recent"] = RecentPrompts()
        return cast("RecentPrompts", recent)

    def _learn_ceiling(self, evaluated: int) -> None:
        ceiling = self.__dict__.get("_ceiling")
        if evaluated > 0 and (ceiling is None or evaluated < ceiling):
            self.__dict__["_ceiling"] = evaluated

    async def _call(
        self,
        runnable: Runnable[Any, Any],
        messages: list[BaseMessage] | Prompt,
        *,
        role: Role,
        ids: IdsLike,
        on_token: Callable[[str], None] | None,
        limit: int = 0,
        note: PackNote | None = None,
    ) -> AIMessage:
        """One model call, its prompt packed to the window first (``packer``): nothing is
        sent over it. When the server's count says it cut the prompt anyway (a server
        that holds less than we were told), one ``ModelContext`` event, the ceiling
        learned, and ONE retry with a smaller prompt; a second cut fails the call with
        one line naming the window. A call evaluated whole calibrates the estimate.
        ``note`` (when given) learns whether the prompt was clipped or cut."""
        event_ids = coerce_ids(ids)
        est = self.estimator
        specs = _bound_tools(runnable)
        tool_chars = sum(len(json.dumps(s, ensure_ascii=False, default=str)) for s in specs)
        window, source = self.context_window()
        budget = Budget.of(window, limit, est.tools(specs))
        sent = self._pack(messages, budget)
        first_tokens = sent.tokens
        for attempt in range(2):
            if note is not None:
                note.clipped = note.clipped or sent.changed
                note.window, note.source = window, source
            reply = await self._request(
                runnable, sent.messages, role=role, ids=event_ids, on_token=on_token, limit=limit
            )
            chars = sum(message_chars(m) for m in sent.messages) + tool_chars
            count = len(sent.messages)
            usage = reply.usage_metadata
            evaluated = int(usage.get("input_tokens") or 0) if usage else 0
            recent = self._recent_prompts()
            cached = recent.shared(sent.messages)
            recent.add(sent.messages)
            if not looks_truncated(chars, count, evaluated, window, est, cached):
                if finish_reason(reply) != "length" or reply.text:
                    est.calibrate(chars, count, evaluated)
                return reply
            sent_tokens = sent.tokens + budget.tools
            self._learn_ceiling(evaluated)
            if note is not None:
                note.truncated = True
            failure: LLMError | None = None
            if not attempt:
                window, source = self.context_window()
                budget = Budget.of(window, limit, budget.tools)
                try:
                    sent = self._pack(messages, budget, cap=int(sent.tokens * REPACK_SHARE))
                except LLMError as exc:  # not even its minimum fits what the server holds
                    failure = exc
            if self.bus is not None:
                fields = event_ids.fields() if event_ids is not None else ScopeFields()
                self.bus.publish(
                    ModelContext(
                        model=self.model_name(role),
                        role=role,
                        window=getattr(getattr(self, "window", None), "tokens", None) or window,
                        sent_tokens=sent_tokens,
                        evaluated_tokens=evaluated,
                        action="failed" if attempt or failure else "repacked",
                        **fields,
                    )
                )
            if failure is not None:
                raise failure
            if attempt:
                break
            if on_token is not None:
                on_token(REPACK_NOTE)
        configured = getattr(getattr(self, "window", None), "tokens", None) or window
        raise overflow_error(budget.needed(first_tokens), int(configured), source, kept=evaluated)

    async def _request(
        self,
        runnable: Runnable[Any, Any],
        messages: list[BaseMessage],
        *,
        role: Role,
        ids: Scope | None,
        on_token: Callable[[str], None] | None,
        limit: int = 0,
    ) -> AIMessage:
        """One request of a call: its requests (the first and the transport retries), each read
        by ``_read`` on a task of its own under a wall-clock cap; the reply is stopped by
        the client once more than ``limit`` tokens (``num_predict``) arrived.

        The cap is ``model.call_timeout`` or what is left of the run's deadline, if
        less; the per-read HTTP timeout does not see a server that keeps trickling. A
        call that ends in a timeout makes the run's later calls fail at once
        (``RunBudget.stall``)."""
        event_ids = ids
        chars = prompt_chars(messages)
        budget = current_budget()
        retry = 0
        goal_id = ids.goal_id if ids is not None else None
        while True:
            if goal_id and self.goal_meter is not None:
                # The goal's own caps (calls, tokens, time), its spend stored first.
                reached = await self.goal_meter.admit_goal(goal_id)
                if reached:
                    raise LLMError(ModelErrorKind.goal_budget, f"{goal_id} reached its {reached}")
            if budget is not None:
                budget.admit()
            cap, by_run = self._cap(budget)
            started = time.monotonic()
            got = _Reading(limit=limit)
            reading = asyncio.ensure_future(self._read(runnable, messages, got, on_token))
            try:
                done, _ = await asyncio.wait({reading}, timeout=cap)
            except asyncio.CancelledError:
                await _stop(reading)
                self._tally(role, event_ids, got, chars, started)
                raise
            if not done:  # past the cap: the server is still sending, or silent
                await _stop(reading)
                self._tally(role, event_ids, got, chars, started)
                assert budget is not None or not by_run
                err = budget.past_deadline() if budget is not None and by_run else None
                if err is None:
                    err = call_expired(self.model_name(role), cap)
                    if budget is not None:
                        budget.stall(err)
                raise err
            broken: Exception | None = None
            try:
                reading.result()
            except _CallbackFailed as failed:  # the caller's bug, not the model's
                broken = failed.original
            except asyncio.CancelledError:  # the reading task alone was cancelled
                self._tally(role, event_ids, got, chars, started)
                raise
            except Exception as exc:
                self._tally(role, event_ids, got, chars, started)
                err = self._map(exc, role)
                limit_retries = self.transport_retries
                if err.retry_limit is not None:
                    limit_retries = min(limit_retries, err.retry_limit)
                if err.retryable and not got.emitted and retry < limit_retries:
                    delay = self.backoff_s * (2**retry) * (1 + random.random() / 4)
                    retry += 1
                    await asyncio.sleep(delay)
                    continue
                if err.kind == ModelErrorKind.timeout and budget is not None:
                    budget.stall(err)
                raise err from exc
            if broken is not None or got.cut:  # a stream left before its end: closed
                await _settle_abandoned_streams()
            self._tally(role, event_ids, got, chars, started)
            if broken is not None:
                raise broken from None
            _raise_if_cancelled(asyncio.current_task())
            return finish_message(got.total())

    def _cap(self, budget: RunBudget | None) -> tuple[float, bool]:
        """(the wall-clock cap of the next request in seconds, whether the run's deadline
        is what sets it)."""
        cap = self.settings.resolved_call_timeout()
        left = budget.remaining() if budget is not None else None
        if left is not None and left < cap:
            return max(left, 0.0), True
        return cap, False

    async def _read(
        self,
        runnable: Runnable[Any, Any],
        messages: list[BaseMessage],
        got: _Reading,
        on_token: Callable[[str], None] | None,
    ) -> None:
        """Stream one request into ``got``; stop reading once it holds more than its
        limit of tokens (``_Reading.add``). ``on_token`` gets the answer only; reasoning
        goes to the thinking listener of the call (``_THINKING``), if any."""
        task = asyncio.current_task()  # once: each chunk checks it for a lost cancel
        on_thinking = _THINKING.get()
        # astream is an async generator (typed as an iterator): closed on exit.
        chunks = cast("AsyncGenerator[Any, None]", runnable.astream(messages))
        async with contextlib.aclosing(chunks) as stream:
            async for chunk in stream:
                _raise_if_cancelled(task)
                over = got.add(chunk)
                self._forward(got, on_token, on_thinking)
                if over:
                    break
                if len(got.parts) % YIELD_EVERY == 0:
                    # A reply that arrived in one burst is read from a buffer
                    # without a wait: give the event loop (the screen) a turn.
                    await asyncio.sleep(0)
        got.end()
        self._forward(got, on_token, on_thinking)

    @staticmethod
    def _forward(
        got: _Reading,
        on_token: Callable[[str], None] | None,
        on_thinking: Callable[[str], None] | None,
    ) -> None:
        """Hand the pieces the last chunk gave to the listeners."""
        answer, thought = got.answer_piece, got.thinking_piece
        got.answer_piece = got.thinking_piece = ""
        try:
            if thought and on_thinking is not None:
                on_thinking(thought)
            if answer and on_token is not None:
                got.emitted = True
                on_token(answer)
        except Exception as exc:
            raise _CallbackFailed(exc) from exc

    def _map(self, exc: BaseException, role: Role) -> LLMError:
        return map_error(
            exc,
            provider=self.provider,
            base_url=self.base_url,
            model=self.model_name(role),
            timeout=self.settings.timeout,
        )

    def _tally(
        self, role: Role, ids: Scope | None, got: _Reading, chars: int, started: float
    ) -> None:
        self._account(role, ids, got.total(), chars, time.monotonic() - started, arrived=got.tokens)
        _charge_run(got, chars)  # run.max_tokens

    def _account(
        self,
        role: Role,
        ids: Scope | None,
        total: AIMessageChunk | None,
        chars: int,
        duration: float,
        arrived: int = 0,
    ) -> None:
        usage = total.usage_metadata if total is not None else None
        counts = UsageCounts(
            calls=1,
            input_tokens=int(usage["input_tokens"]) if usage else 0,
            # A reply the client stopped (or a call cut off) has no server counts: its
            # output is the tokens that arrived.
            output_tokens=int(usage["output_tokens"]) if usage else arrived,
            duration_s=duration,
            prompt_chars=chars,
        )
        self.usage.record(counts, ids, role)
        if ids is not None and ids.goal_id and self.goal_meter is not None:
            self.goal_meter.charge_goal(ids.goal_id, 1, counts.total_tokens)
        if self.bus is not None:
            fields = ids.fields() if ids is not None else ScopeFields()
            self.bus.publish(
                Usage(
                    model=self.model_name(role),
                    role=role,
                    input_tokens=counts.input_tokens,
                    output_tokens=counts.output_tokens,
                    duration_s=round(duration, 6),
                    prompt_chars=chars,
                    window=self.context_window()[0],
                    **fields,
                )
            )


REPACK_SHARE = 0.75
"""A prompt the server cut is sent again at most this share of its first size."""
REPACK_NOTE = "\n\n(the prompt did not fit the model's window; asking again with a shorter one)\n\n"
"""Streamed between a cut call's reply and its retry, so the screen says why it repeats."""


@dataclass
class PackNote:
    """What packing did to one call's prompt (``ModelHub._call``): clipped to fit, cut by
    the server, and the window it was packed for."""

    clipped: bool = False
    truncated: bool = False
    window: int = 0
    source: str = ""


def _context_note(note: PackNote) -> str:
    """One clause for an error when the window shaped the prompt ('' when it did not)."""
    if not (note.clipped or note.truncated):
        return ""
    what = "cut by the server" if note.truncated else "clipped"
    return (
        f"the prompt was {what} to fit the context window of {note.window:,} tokens ({note.source})"
    )


def _bound_tools(runnable: Any) -> list[Any]:
    """The tool specs a binding sends (``bind_tools`` puts them in its kwargs)."""
    kwargs = getattr(runnable, "kwargs", None)
    tools = kwargs.get("tools") if isinstance(kwargs, dict) else None
    return list(tools) if isinstance(tools, list) else []


LIMIT_SLACK = 2
"""Chunks past ``num_predict`` the client lets through before it stops a reply: a server
that keeps to the limit may still send a chunk without a token (OpenAI's role chunk)."""
STOP_TRIES = 10
STOP_WAIT_S = 0.2


@dataclass
class _Reading:
    """What one request has streamed so far, and how many tokens that is; its content
    split into answer and reasoning as it comes (``ThinkSplitter``)."""

    limit: int = 0
    parts: list[AIMessageChunk] = field(default_factory=list)
    tokens: int = 0
    emitted: bool = False
    cut: bool = False
    thinking_tokens: int = 0
    """Chunks of reasoning: in the thinking field (kept, or dropped by the client and
    seen as a chunk with nothing in it) or inside a ``<think>`` block."""
    splitter: ThinkSplitter = field(default_factory=ThinkSplitter)
    answer_piece: str = ""
    """The answer the last chunk added (for ``on_token``)."""
    thinking_piece: str = ""
    """The reasoning the last chunk added (for the thinking listener)."""

    def add(self, chunk: AIMessageChunk) -> bool:
        """Keep ``chunk``; True once the reply is past its limit (``cut``).

        A server streams about one token per chunk, content or thinking (a thinking
        chunk reaches us with empty content when the client drops the field), so every
        chunk before the final one counts; the server's own count (Ollama's
        ``eval_count``, OpenAI's usage) is used when it is higher."""
        self.parts.append(chunk)
        meta = chunk.response_metadata or {}
        final = bool(meta.get("done") or meta.get("done_reason") or meta.get("finish_reason"))
        if not final:
            self.tokens += 1
        reasoning = (chunk.additional_kwargs or {}).get("reasoning_content")
        text = chunk.text
        if isinstance(reasoning, str) and reasoning:
            self.thinking_piece += reasoning
            self.thinking_tokens += 1
        elif not final and not text and not chunk.tool_call_chunks:
            self.thinking_tokens += 1  # a thinking field the client did not keep
        if text:
            answer, thought = self.splitter.feed(text)
            self.answer_piece += answer
            self.thinking_piece += thought
            if thought or (self.splitter.inside and not answer):
                self.thinking_tokens += 1
        usage = chunk.usage_metadata
        if usage and usage.get("output_tokens"):
            self.tokens = max(self.tokens, int(usage["output_tokens"]))
        if self.limit > 0 and self.tokens > self.limit + LIMIT_SLACK:
            self.cut = True
        return self.cut

    def end(self) -> None:
        """The stream ended (or was stopped): what the splitter held back is given out."""
        answer, thought = self.splitter.flush()
        self.answer_piece += answer
        self.thinking_piece += thought

    def total(self) -> AIMessageChunk | None:
        total = _merged(self.parts)
        if total is None:
            return None
        meta = dict(total.response_metadata or {})
        if self.thinking_tokens:
            meta["thinking_tokens"] = self.thinking_tokens
        if self.cut:
            # Read as a reply the server ended at its limit ("length"): a text answer
            # gets the cut note, a structured one is not trusted (re-asked).
            meta.update(done_reason="length", stopped_by_client=True)
        if meta != (total.response_metadata or {}):
            total = total.model_copy(update={"response_metadata": meta})
        return total


def _charge_run(got: _Reading, chars: int) -> None:
    """Charge the run's token cap with what one request cost (``RunBudget.charge``)."""
    budget = current_budget()
    if budget is None:
        return
    usage = None
    for part in reversed(got.parts):  # the counts come on one chunk near the end
        if part.usage_metadata:
            usage = part.usage_metadata
            break
    prompt = int(usage["input_tokens"]) if usage else 0
    output = int(usage["output_tokens"]) if usage else got.tokens  # the server's, if it said
    budget.charge(prompt, output, chars)


async def _stop(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait for it, bounded; cancel again while it runs on (the HTTP
    stack can swallow a cancellation, see ``_raise_if_cancelled``)."""
    for _ in range(STOP_TRIES):
        if task.done():
            break
        task.cancel()
        await asyncio.wait({task}, timeout=STOP_WAIT_S)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: no "exception was never retrieved" warning


def finish_message(total: AIMessageChunk | None) -> AIMessage:
    """The aggregated reply as an AIMessage, tool-call arguments parsed strictly.

    LangChain parses streamed argument pieces leniently: ``{"path": "a.tx`` becomes
    ``{"path": "a.tx"}``. A call whose arguments are not complete JSON is moved to
    ``invalid_tool_calls`` instead of running with half its arguments.
    """
    if total is None:
        return AIMessage(content="")
    message = message_chunk_to_message(total)
    assert isinstance(message, AIMessage)
    message = _without_thinking(message)
    broken: dict[str, tuple[str, str]] = {}  # call id -> (raw arguments, parse error)
    for chunk in total.tool_call_chunks:
        raw = chunk.get("args") or ""
        if not raw.strip() or not chunk.get("id"):
            continue
        try:
            json.loads(raw)
        except json.JSONDecodeError as exc:
            broken[str(chunk["id"])] = (raw[:2000], exc.msg)
    if not broken:
        return message
    from langchain_core.messages.tool import invalid_tool_call

    keep = []
    invalid = list(message.invalid_tool_calls)
    for tc in message.tool_calls:
        entry = broken.get(str(tc.get("id")))
        if entry is None:
            keep.append(tc)
            continue
        raw, reason = entry
        invalid.append(
            invalid_tool_call(
                name=tc["name"],
                args=raw,
                id=tc.get("id"),
                error=f"the arguments are not complete JSON ({reason})",
            )
        )
    return message.model_copy(update={"tool_calls": keep, "invalid_tool_calls": invalid})


def _without_thinking(message: AIMessage) -> AIMessage:
    """``message`` with any ``<think>`` trace moved out of its content into
    ``additional_kwargs["reasoning_content"]``: reasoning is never the answer."""
    content = message.content
    if not isinstance(content, str) or ("<think>" not in content and "</think>" not in content):
        return message
    answer, thought = split_think(content)
    extra = dict(message.additional_kwargs)
    extra["reasoning_content"] = str(extra.get("reasoning_content") or "") + thought
    return message.model_copy(update={"content": answer, "additional_kwargs": extra})


def _sendable(tools: Sequence[Any]) -> list[Any]:
    """Tools as sent to the model: OpenAI-style specs without bounds a local server's
    grammar refuses (``schema.sendable_tool``); the tools' own validation keeps them."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out = []
    for tool in tools:
        spec = tool if isinstance(tool, dict) and "function" in tool else None
        out.append(sendable_tool(spec if spec is not None else convert_to_openai_tool(tool)))
    return out


def with_system_note(messages: Sequence[BaseMessage], note: str) -> list[BaseMessage]:
    """``messages`` with ``note`` appended to the leading system message (or as one)."""
    out = list(messages)
    if out and isinstance(out[0], SystemMessage) and isinstance(out[0].content, str):
        out[0] = SystemMessage(content=f"{out[0].content}\n\n{note}")
    else:
        out.insert(0, SystemMessage(content=note))
    return out
