"""The model's context window: how many tokens one request may hold, and where we know
it from. One rule, read by the packer (budgets), the status line (``ctx 3.1k/8k``) and
``soothe doctor`` (the window line and its warning).

- Ollama: the ``model.num_ctx`` we send (the factory sends it), capped by the model's
  trained context (``/api/show`` ``model_info["<arch>.context_length"]``; Ollama itself
  lowers a larger ``num_ctx`` to it). ``num_ctx`` unset: Ollama's default, which depends on
  VRAM (4k below 24 GiB): assumed 4096.
- OpenAI-compatible: the window the server reports it loaded (vLLM ``/v1/models``
  ``max_model_len``, llama.cpp ``/props`` ``n_ctx``, LM Studio ``/api/v0/models``
  ``loaded_context_length``), else ``model.context_window`` (capped by a trained context
  the server reports: llama.cpp ``meta.n_ctx_train``, LM Studio ``max_context_length``),
  else that trained context, else an assumed 8192.
- demo: the built-in model has no limit; a large window.

Pure stdlib: no LangChain, no HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from soothe.engine.config import ModelSettings
    from soothe.engine.llm.profile import ModelInfo

__all__ = [
    "DEMO_WINDOW",
    "OLLAMA_DEFAULT_WINDOW",
    "OPENAI_DEFAULT_WINDOW",
    "TRAINED_FIELDS",
    "ContextWindow",
    "resolve_window",
]

OLLAMA_DEFAULT_WINDOW = 4096
"""Ollama's default ``num_ctx`` below 24 GiB of VRAM (docs/context-length.mdx)."""

OPENAI_DEFAULT_WINDOW = 8192
"""Assumed for an OpenAI-compatible server that does not say and is not configured."""

DEMO_WINDOW = 131_072
"""The demo model has no limit; a large window so nothing is clipped for it."""

TRAINED_FIELDS = frozenset({"meta.n_ctx_train", "max_context_length"})
"""``/v1/models`` fields that give the model's trained maximum, not the loaded window
(llama.cpp ``meta.n_ctx_train``, LM Studio ``max_context_length``)."""

_OLLAMA_ASSUMED = "assumed (Ollama's default below 24 GiB VRAM)"
_CAPPED = ", capped by the model's trained context"


@dataclass(frozen=True)
class ContextWindow:
    """The window of one model: ``tokens`` and the human ``source`` of that number."""

    tokens: int
    source: str
    trained: int | None = None
    """The model's trained context, when the server says."""
    warning: str | None = None
    """One line when the configuration asks for more than the model can hold."""

    def describe(self) -> str:
        """``2048 tokens (model.num_ctx; trained 131072)`` (doctor's window line)."""
        trained = f"; trained {self.trained}" if self.trained else ""
        return f"{self.tokens} tokens ({self.source}{trained})"


def _over_trained(setting: str, asked: int, trained: int) -> str:
    return (
        f"{setting} = {asked} exceeds the model's trained context of {trained} tokens: "
        f"the window is {trained}; set {setting} <= {trained}"
    )


def _setting(setting: str, asked: int, trained: int | None) -> ContextWindow:
    """The window a setting asks for, capped by the trained context (with the warning)."""
    if trained is not None and asked > trained:
        return ContextWindow(
            trained, setting + _CAPPED, trained, _over_trained(setting, asked, trained)
        )
    return ContextWindow(asked, setting, trained)


def resolve_window(settings: ModelSettings, info: ModelInfo) -> ContextWindow:
    """The context window for ``settings`` given what the server said (``info``)."""
    trained = info.context_length if info.context_length and info.context_length > 0 else None
    if settings.provider == "demo":
        return ContextWindow(DEMO_WINDOW, "demo")
    if settings.provider == "ollama":
        asked = settings.num_ctx
        if asked is None:
            tokens = min(OLLAMA_DEFAULT_WINDOW, trained) if trained else OLLAMA_DEFAULT_WINDOW
            return ContextWindow(tokens, _OLLAMA_ASSUMED, trained)
        return _setting("model.num_ctx", asked, trained)
    configured = settings.context_window
    reported = info.context_window if info.context_window and info.context_window > 0 else None
    where = info.window_field or "/v1/models"
    if reported is not None and where.rsplit(" ", 1)[-1] not in TRAINED_FIELDS:
        # The server's loaded window: what it will actually hold.
        return ContextWindow(reported, where, trained)
    if configured is not None:
        return _setting("model.context_window", configured, trained)
    if reported is not None:  # only the trained maximum is known
        return ContextWindow(reported, where, trained)
    return ContextWindow(
        OPENAI_DEFAULT_WINDOW,
        "assumed (the server does not report it; set model.context_window)",
        trained,
    )
