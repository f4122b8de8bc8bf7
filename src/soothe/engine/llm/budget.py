"""The bounds of one run, as the model hub sees them: a deadline, a cap on model calls,
a cap on tokens, and what a call that timed out left behind.

A runner opens a ``RunBudget`` around the run (``run_budget``); it lives in a context
variable, so every task the run starts (parallel steps, the loop's graph nodes) shares
it. ``ModelHub`` asks it before each request (``admit``) and bounds each call's wall
clock by what is left of the run. A call that timed out, once the hub's own retries are
spent, is remembered (``stall``): every later call of the same run fails at once with
the same error instead of waiting out the timeout again.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from soothe.engine.llm.errors import LLMError, ModelErrorKind

if TYPE_CHECKING:
    from soothe.engine.config import RunSettings

__all__ = ["RunBudget", "current_budget", "run_budget", "user_wait"]

RESUME_NOTE = "its goals are suspended; resume the thread to go on"


@dataclass
class RunBudget:
    deadline_s: float = 0.0
    """Wall-clock seconds the run may take (0: none)."""
    max_calls: int = 0
    """Model requests the run may send (0: no cap)."""
    max_tokens: int = 0
    """Tokens (input + output of every request) the run may spend (0: no cap)."""
    started: float = field(default_factory=lambda: time.monotonic())  # read at creation
    calls: int = 0
    tokens: int = 0
    """Tokens charged so far (``charge``)."""
    stalled: LLMError | None = None
    """The timeout a call of this run ended with: later calls fail fast with it."""
    waited: float = 0.0
    """Seconds the run spent waiting for the user (not counted against the deadline)."""
    _waits: int = 0
    _wait_began: float = 0.0

    def remaining(self) -> float | None:
        """Seconds left before the deadline (None: no deadline). Time spent waiting for
        the user (an approval, a clarification) does not count: a dialog left open over
        lunch must not fail the run."""
        if self.deadline_s <= 0:
            return None
        now = time.monotonic()
        waiting = now - self._wait_began if self._waits else 0.0
        return self.deadline_s - (now - self.started - self.waited - waiting)

    @contextmanager
    def user_wait(self) -> Iterator[None]:
        """Stop the deadline's clock while the user is asked (overlapping asks of parallel
        steps count once)."""
        if self._waits == 0:
            self._wait_began = time.monotonic()
        self._waits += 1
        try:
            yield
        finally:
            self._waits -= 1
            if self._waits == 0:
                self.waited += time.monotonic() - self._wait_began

    def admit(self) -> None:
        """Count one more model request, or raise the ``LLMError`` that ends the run:
        the deadline passed, a cap (calls, tokens) is reached, or an earlier call timed
        out. The token cap is checked before a request, so the request that passes it
        still ends; the next one is never sent."""
        if self.stalled is not None:
            raise LLMError(self.stalled.kind, self.stalled.message, retryable=False)
        left = self.remaining()
        if left is not None and left <= 0:
            raise self.past_deadline()
        if self.max_calls and self.calls >= self.max_calls:
            raise LLMError(
                ModelErrorKind.run_limit,
                f"the run reached its cap of {self.max_calls} model calls "
                f"(run.max_model_calls); {RESUME_NOTE}",
                retryable=False,
            )
        if self.max_tokens and self.tokens >= self.max_tokens:
            raise LLMError(
                ModelErrorKind.run_limit,
                f"the run reached its cap of {self.max_tokens:,} tokens after "
                f"{self.tokens:,} (run.max_tokens); {RESUME_NOTE}",
                retryable=False,
            )
        self.calls += 1

    def charge(self, input_tokens: int, output_tokens: int, prompt_chars: int = 0) -> None:
        """Count one request's tokens. A request the server did not count (cut off, the
        client stopped it) is charged its prompt by estimate (~4 characters a token)."""
        prompt = input_tokens if input_tokens > 0 else prompt_chars // 4
        self.tokens += max(prompt, 0) + max(output_tokens, 0)

    def past_deadline(self) -> LLMError:
        return LLMError(
            ModelErrorKind.run_limit,
            f"the run passed its deadline of {self.deadline_s:g}s (run.deadline); {RESUME_NOTE}",
            retryable=False,
        )

    def stall(self, error: LLMError) -> None:
        """Remember a call that timed out (the first one)."""
        if self.stalled is None:
            self.stalled = error


_BUDGET: contextvars.ContextVar[RunBudget | None] = contextvars.ContextVar(
    "soothe_run_budget", default=None
)


def current_budget() -> RunBudget | None:
    """The budget of the run this task belongs to (None: outside any run)."""
    return _BUDGET.get()


@contextmanager
def run_budget(settings: RunSettings) -> Iterator[RunBudget]:
    """A fresh budget from ``settings`` for the duration of one run."""
    budget = RunBudget(
        deadline_s=float(settings.deadline),
        max_calls=int(settings.max_model_calls),
        max_tokens=int(settings.max_tokens),
    )
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


@contextmanager
def user_wait() -> Iterator[None]:
    """Around a wait for the user's answer: the current run's deadline clock stops."""
    budget = _BUDGET.get()
    if budget is None:
        yield
        return
    with budget.user_wait():
        yield
