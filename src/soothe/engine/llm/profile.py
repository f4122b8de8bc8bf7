"""The model profile: a tight configuration for small local models, resolved once.

``model.profile = "auto"`` reads the model's ``parameter_size`` (and context length)
from Ollama's ``/api/show`` and picks ``small`` below ~3B parameters; ``"small"`` and
``"default"`` force one. ``Settings.effective(profile)`` gives the settings the engine
runs under it; prompt builders and the read-only-tools rule read ``profile.small``.
Pure stdlib + httpx (imported on use): no LangChain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from soothe.engine.config import SMALL_MODEL_BILLIONS, ModelSettings

__all__ = [
    "ModelInfo",
    "ModelProfile",
    "choose_profile",
    "fetch_model_info",
    "model_info_from_show",
    "parameter_billions",
    "resolve_profile",
]

SHOW_TIMEOUT = 3.0
"""``/api/show`` answers from metadata; a server slower than this counts as unknown."""


@dataclass(frozen=True)
class ModelInfo:
    """What the server says about the model (each field None when it does not say)."""

    parameter_size: str | None = None
    context_length: int | None = None

    @property
    def billions(self) -> float | None:
        return parameter_billions(self.parameter_size)


@dataclass(frozen=True)
class ModelProfile:
    """The resolved profile: ``small`` drives the tight configuration."""

    name: Literal["small", "default"]
    requested: Literal["auto", "small", "default"]
    info: ModelInfo = ModelInfo()
    reason: str = ""

    @property
    def small(self) -> bool:
        return self.name == "small"

    def describe(self) -> str:
        """One line for the log / status: ``profile small (auto: 135M parameters)``."""
        return f"profile {self.name} ({self.reason})" if self.reason else f"profile {self.name}"


DEFAULT_PROFILE = ModelProfile(name="default", requested="default")

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMBT])?\s*$", re.IGNORECASE)
_SCALE = {"K": 1e-6, "M": 1e-3, "B": 1.0, "T": 1e3}


def parameter_billions(size: str | None) -> float | None:
    """``"3.2B"`` -> 3.2, ``"135M"`` -> 0.135, ``"7b"`` -> 7.0; None when unreadable."""
    if not size:
        return None
    match = _SIZE.match(size)
    if match is None:
        return None
    return float(match.group(1)) * _SCALE[(match.group(2) or "B").upper()]


def model_info_from_show(show: Any) -> ModelInfo:
    """Size and context length from an ``/api/show`` body (``details.parameter_size``,
    ``model_info["<arch>.context_length"]``)."""
    if not isinstance(show, dict):
        return ModelInfo()
    details = show.get("details")
    size = details.get("parameter_size") if isinstance(details, dict) else None
    context: int | None = None
    info = show.get("model_info")
    if isinstance(info, dict):
        arch = info.get("general.architecture")
        value = info.get(f"{arch}.context_length") if isinstance(arch, str) else None
        if value is None:
            value = next((v for k, v in info.items() if k.endswith(".context_length")), None)
        if isinstance(value, int | float) and value > 0:
            context = int(value)
    return ModelInfo(parameter_size=str(size) if size else None, context_length=context)


async def fetch_model_info(settings: ModelSettings) -> ModelInfo:
    """``/api/show`` for the configured model; an empty ModelInfo on any failure or for
    a provider that has no such endpoint (OpenAI-compatible servers, the demo model)."""
    if settings.provider != "ollama":
        return ModelInfo()
    import httpx

    url = settings.resolved_base_url().rstrip("/") + "/api/show"
    try:
        async with httpx.AsyncClient(timeout=min(settings.timeout, SHOW_TIMEOUT)) as client:
            response = await client.post(url, json={"model": settings.name})
            response.raise_for_status()
            return model_info_from_show(response.json())
    except (httpx.HTTPError, ValueError, OSError):
        return ModelInfo()


def choose_profile(settings: ModelSettings, info: ModelInfo) -> ModelProfile:
    """The profile for ``settings.profile`` given what the server said."""
    requested = settings.profile
    if settings.provider == "demo" or requested == "default":
        return ModelProfile(name="default", requested=requested, info=info)
    if requested == "small":
        return ModelProfile(name="small", requested=requested, info=info, reason="configured")
    billions = info.billions
    if billions is None:
        return ModelProfile(
            name="default", requested=requested, info=info, reason="auto: size unknown"
        )
    size = info.parameter_size or f"{billions:g}B"
    name: Literal["small", "default"] = "small" if billions < SMALL_MODEL_BILLIONS else "default"
    return ModelProfile(
        name=name, requested=requested, info=info, reason=f"auto: {size} parameters"
    )


async def resolve_profile(settings: ModelSettings) -> ModelProfile:
    """Resolve ``settings.profile`` (one ``/api/show`` call when it is ``auto``)."""
    if settings.provider == "demo" or settings.profile == "default":
        return choose_profile(settings, ModelInfo())
    info = await fetch_model_info(settings)
    return choose_profile(settings, info)
