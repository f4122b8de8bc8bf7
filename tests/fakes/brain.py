"""A scripted model that answers each call by what the call is for, not by call order.

Tests queue replies per *kind*: a structured call by its schema title (``Classification``,
``PlanGeneration``, ``StatusAssessment``, ``GoalDecomposition``), an action step by
``step:S-01`` (or ``desc:<step description>``, whatever id the step got, or ``step`` for
any step), the completion by ``complete`` and any other free-text call by ``text``.
Steps that run in parallel therefore do not depend on the order their calls arrive.

One `Brain` serves both ways in: as a fake server's ``responder(body)`` (Ollama or
OpenAI-compatible wire bodies) and as a `ScriptedChatModel` responder
``(messages, info)`` (``brain.model()``). Scripted calls are recorded as wire-shaped
bodies, so ``brain.calls`` reads the same either way.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from soothe.engine.llm.scripted import ScriptedChatModel, ScriptExhausted

STEP_ID = re.compile(r"^Step (\S+):", re.MULTILINE)
_STEP_DESCRIPTION = re.compile(r"^Step \S+: (.*)$", re.MULTILINE)
_STEP_SYSTEM = "You are the step executor"
_COMPLETE_SYSTEM = "Write the final answer"
_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
HOLD_LIMIT_S = 20.0
_NOTHING = object()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return ""


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body.get("messages") or [] if isinstance(m, dict)]


def prompt_text(body: dict[str, Any]) -> str:
    """Every message's text content of a chat request, joined."""
    return "\n".join(m["content"] for m in _messages(body) if isinstance(m.get("content"), str))


def _first(body: dict[str, Any], role: str) -> str:
    for m in _messages(body):
        if m.get("role") == role:
            return _text(m.get("content"))
    return ""


def step_of(body: dict[str, Any]) -> str:
    """The plan step a call works on (from the step prompt), or ``""``."""
    for m in _messages(body):
        if m.get("role") == "user" and (match := STEP_ID.search(_text(m.get("content")))):
            return match.group(1)
    return ""


def schema_title(body: dict[str, Any]) -> str:
    """The structured-output schema's name: Ollama's ``format`` title, OpenAI's
    ``response_format`` json_schema name; ``""`` for a free-text call."""
    fmt = body.get("format")
    if isinstance(fmt, dict) and fmt.get("title"):
        return str(fmt["title"])
    response_format = body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        return str(response_format.get("json_schema", {}).get("name") or "json_schema")
    return ""


def route(body: dict[str, Any]) -> tuple[str, list[str]]:
    """(the kind a call is recorded as, the queue keys tried for its reply, in order)."""
    if title := schema_title(body):
        return title, [title]
    system = _first(body, "system")
    if system.startswith(_COMPLETE_SYSTEM) and not body.get("tools"):
        return "complete", ["complete", "text"]
    # A step's last call goes without tools once its budget is spent; it is still the
    # step executor's, and its prompt still names the step.
    step_id = step_of(body)
    if not (body.get("tools") or step_id or system.startswith(_STEP_SYSTEM)):
        return "text", ["text"]
    if not step_id:
        return "step", ["step"]
    keys = [f"step:{step_id}", "step"]
    if found := _STEP_DESCRIPTION.search(_first(body, "user")):
        keys.insert(0, f"desc:{found.group(1).strip()}")
    return keys[-2], keys


def wire_body(messages: Sequence[Any], info: dict[str, Any]) -> dict[str, Any]:
    """A ScriptedChatModel call as the chat request body a server would have received."""
    body: dict[str, Any] = {
        "messages": [
            {"role": _ROLES.get(m.type, m.type), "content": _text(m.content)} for m in messages
        ]
    }
    if info.get("tools"):
        body["tools"] = info["tools"]
    if (fmt := info.get("kwargs", {}).get("format")) is not None:
        body["format"] = fmt
    return body


class Call(NamedTuple):
    """One recorded call; unpacks as ``(kind, body)``."""

    kind: str
    body: dict[str, Any]

    @property
    def keys(self) -> list[str]:
        return route(self.body)[1]

    @property
    def system(self) -> str:
        return _first(self.body, "system")

    @property
    def user(self) -> str:
        """The first user message: the step prompt of a step, the request of a planner."""
        return _first(self.body, "user")

    def matches(self, key: str | None) -> bool:
        return key is None or key == self.kind or key in self.keys


class Brain:
    """Per-kind reply queues; see the module docstring for the kinds.

    ``add(kind, *items)`` queues replies (script items of `soothe.engine.llm.scripted`,
    `tests.fakes.FakeReply`/`FakeHTTPError`, or a callable ``body -> item`` deciding from
    the request); ``step(id, *items)`` is ``add("step:ID", ...)``; ``always[kind]`` is
    the reply whenever that kind's queue is empty. An unscripted call is recorded in
    ``unscripted`` and fails (HTTP 500 on the wire, `ScriptExhausted` when scripted).

    ``on(key, hook)`` runs ``hook()`` when such a call arrives, before replying;
    ``seen(key)`` is an Event set when one arrives; ``hold(key)`` keeps such calls
    waiting (at most 20 s) until the returned Event is set, for tests that act while a
    request is in flight. A key is a kind or any of the call's queue keys.
    """

    def __init__(self) -> None:
        self.queues: dict[str, deque[Any]] = {}
        self.always: dict[str, Any] = {}
        self.calls: list[Call] = []
        self.unscripted: list[str] = []
        self.hooks: dict[str, Callable[[], None]] = {}
        self.events: dict[str, threading.Event] = {}
        self.holds: dict[str, threading.Event] = {}
        self.lock = threading.Lock()

    # --- scripting ------------------------------------------------------------------------

    def add(self, kind: str, *items: Any) -> Brain:
        with self.lock:
            self.queues.setdefault(kind, deque()).extend(items)
        return self

    def step(self, step_id: str, *items: Any) -> Brain:
        return self.add(f"step:{step_id}", *items)

    def on(self, key: str, hook: Callable[[], None]) -> Brain:
        self.hooks[key] = hook
        return self

    def seen(self, key: str) -> threading.Event:
        with self.lock:
            return self.events.setdefault(key, threading.Event())

    def hold(self, key: str) -> threading.Event:
        with self.lock:
            return self.holds.setdefault(key, threading.Event())

    # --- the two ways in ------------------------------------------------------------------

    def __call__(self, body_or_messages: Any, info: dict[str, Any] | None = None) -> Any:
        """A fake server's ``responder(body)``, or a ScriptedChatModel's
        ``responder(messages, info)``."""
        body = body_or_messages if info is None else wire_body(body_or_messages, info)
        return self.reply(body)

    def model(self) -> ScriptedChatModel:
        return ScriptedChatModel(responder=self)

    def reply(self, body: dict[str, Any]) -> Any:
        kind, keys = route(body)
        names = [kind, *(k for k in keys if k != kind)]
        with self.lock:
            self.calls.append(Call(kind, body))
            for name in names:
                self.events.setdefault(name, threading.Event()).set()
            hooks = [self.hooks[n] for n in names if n in self.hooks]
            gates = [self.holds[n] for n in names if n in self.holds]
        for hook in hooks:
            hook()
        for gate in gates:
            gate.wait(HOLD_LIMIT_S)
        with self.lock:
            item = self._take(keys)
            if item is _NOTHING:
                self.unscripted.append(kind)
                return ScriptExhausted(f"unscripted {kind} call")
        return item(body) if callable(item) else item

    def _take(self, keys: list[str]) -> Any:
        for key in keys:
            if queue := self.queues.get(key):
                return queue.popleft()
        for key in keys:
            if key in self.always:
                return self.always[key]
        return _NOTHING

    # --- what was asked -------------------------------------------------------------------

    def kinds(self) -> list[str]:
        with self.lock:
            return [c.kind for c in self.calls]

    def count(self, key: str) -> int:
        return sum(1 for c in self.calls if c.matches(key))

    def prompts(self, key: str | None = None) -> list[str]:
        """All message text of each call matching ``key`` (every call when None)."""
        return [prompt_text(c.body) for c in self.calls if c.matches(key)]

    def user_prompts(self, key: str | None = None) -> list[str]:
        return [c.user for c in self.calls if c.matches(key)]

    def system_prompts(self, key: str | None = None) -> list[str]:
        return [c.system for c in self.calls if c.matches(key)]

    def step_prompts(self, step_id: str) -> list[str]:
        return self.user_prompts(f"step:{step_id}")

    def leftover(self) -> dict[str, int]:
        with self.lock:
            return {k: len(q) for k, q in self.queues.items() if q}
