"""The model profile: a tight configuration for small local models, resolved once.

``model.profile = "auto"`` reads the model's ``parameter_size`` (and context length)
from Ollama's ``/api/show`` and picks ``small`` below ~3B parameters; ``"small"`` and
``"default"`` force one. ``Settings.effective(profile)`` gives the settings the engine
runs under it; prompt builders and the read-only-tools rule read ``profile.small``.
Pure stdlib + httpx (imported on use): no LangChain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import quote, urlsplit

from soothe.engine.config import SMALL_MODEL_BILLIONS, ModelSettings
from soothe.engine.llm.window import TRAINED_FIELDS

__all__ = [
    "ModelInfo",
    "ModelProfile",
    "choose_profile",
    "fetch_model_info",
    "model_info_from_models",
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
    """The model's trained context (Ollama ``<arch>.context_length``, llama.cpp
    ``meta.n_ctx_train``, LM Studio ``max_context_length``)."""
    capabilities: tuple[str, ...] | None = None
    """Ollama ``/api/show`` ``capabilities``, e.g. ("completion", "tools", "thinking")."""
    context_window: int | None = None
    """The window an OpenAI-compatible ``/v1/models`` reports for the model."""
    window_field: str | None = None
    """Where ``context_window`` came from: ``/v1/models max_model_len``,
    ``/api/v0/models loaded_context_length`` (LM Studio)."""

    def can(self, capability: str) -> bool | None:
        """Whether the server lists ``capability`` (None: it lists none)."""
        return None if self.capabilities is None else capability in self.capabilities

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
    """Size, context length and capabilities from an ``/api/show`` body
    (``details.parameter_size``, ``model_info["<arch>.context_length"]``,
    ``capabilities``)."""
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
    listed = show.get("capabilities")
    capabilities = (
        tuple(str(c) for c in listed if isinstance(c, str)) if isinstance(listed, list) else None
    )
    return ModelInfo(
        parameter_size=str(size) if size else None,
        context_length=context,
        capabilities=capabilities,
    )


_WINDOW_FIELDS = (
    ("max_model_len", ("max_model_len",)),  # vLLM: the served window
    ("meta.n_ctx", ("meta", "n_ctx")),  # llama.cpp, when it reports the loaded window
    ("loaded_context_length", ("loaded_context_length",)),  # LM Studio, loaded
    ("meta.n_ctx_train", ("meta", "n_ctx_train")),  # llama.cpp: trained maximum
    ("max_context_length", ("max_context_length",)),  # LM Studio: trained maximum
)
"""Where OpenAI-compatible servers put a model's window in ``/v1/models``, best first."""


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value > 0 else None


def _dig(entry: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = entry
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def model_info_from_models(listing: Any, name: str, where: str = "/v1/models") -> ModelInfo:
    """The window of model ``name`` from an OpenAI-compatible models listing
    (``{"data": [{"id": ..., ...}]}``) or one entry of it: the first field of
    ``_WINDOW_FIELDS`` it has (``window_field`` names ``where`` and the field), and the
    trained context when one of the trained fields is there."""
    if isinstance(listing, dict) and "data" not in listing and listing.get("id") == name:
        entry: Any = listing
    else:
        items = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(items, list):
            return ModelInfo()
        entry = next((m for m in items if isinstance(m, dict) and m.get("id") == name), None)
    if not isinstance(entry, dict):
        return ModelInfo()
    window: int | None = None
    window_field: str | None = None
    trained: int | None = None
    for label, path in _WINDOW_FIELDS:
        value = _positive_int(_dig(entry, path))
        if value is None:
            continue
        if window is None:
            window, window_field = value, f"{where} {label}"
        if label in TRAINED_FIELDS and trained is None:
            trained = value
    return ModelInfo(context_length=trained, context_window=window, window_field=window_field)


async def fetch_model_info(settings: ModelSettings) -> ModelInfo:
    """What the server says about the configured model: Ollama ``/api/show``, an
    OpenAI-compatible server's ``GET {base}/models`` entry (bearer key). One request,
    bounded by SHOW_TIMEOUT; an empty ModelInfo on any failure and for the demo model."""
    if settings.provider not in ("ollama", "openai"):
        return ModelInfo()
    import httpx

    base = settings.resolved_base_url().rstrip("/")
    try:
        async with httpx.AsyncClient(timeout=min(settings.timeout, SHOW_TIMEOUT)) as client:
            if settings.provider == "ollama":
                response = await client.post(base + "/api/show", json={"model": settings.name})
                response.raise_for_status()
                return model_info_from_show(response.json())
            return await _openai_info(client, base, settings)
    except (httpx.HTTPError, ValueError, OSError):
        return ModelInfo()


async def _openai_info(client: Any, base: str, settings: ModelSettings) -> ModelInfo:
    """``GET {base}/models`` (vLLM, llama.cpp report the window there), then
    ``lmstudio_info`` when that says nothing."""
    headers = bearer(settings.resolved_api_key())
    response = await client.get(base + "/models", headers=headers)
    response.raise_for_status()
    info = model_info_from_models(response.json(), settings.name, models_path(base))
    return await loaded_window(client, base, settings.name, headers, info)


async def loaded_window(
    client: Any, base: str, name: str, headers: dict[str, str], info: ModelInfo
) -> ModelInfo:
    """``info`` (from ``/models``) with the window the server LOADED where it says it
    elsewhere: llama.cpp's ``/models`` gives only the trained context (``meta.n_ctx_train``;
    ``llama-server -c 4096`` holds 4096), its ``GET /props`` the slot's
    ``default_generation_settings.n_ctx``; LM Studio's ``/v1/models`` gives nothing, its
    ``/api/v0/models/{id}`` ``loaded_context_length``. At most one more request."""
    if info.window_field and info.window_field.endswith(" meta.n_ctx_train"):
        return await llamacpp_props(client, base, headers, info) or info
    if info.context_window is None:
        return await lmstudio_info(client, base, name, headers) or info
    return info


async def llamacpp_props(
    client: Any, base: str, headers: dict[str, str], info: ModelInfo
) -> ModelInfo | None:
    """llama-server's loaded window from ``GET {root}/props`` (``root``: ``base`` without
    ``/v1``); None when it does not answer or says nothing."""
    import httpx

    root = base.rstrip("/").removesuffix("/v1")
    try:
        response = await client.get(f"{root}/props", headers=headers)
        response.raise_for_status()
        props = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    n_ctx = _positive_int(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if n_ctx is None:
        return None
    return replace(info, context_window=n_ctx, window_field="/props n_ctx")


def bearer(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def models_path(base: str) -> str:
    """How the source of a window names the listing: ``/v1/models``."""
    return urlsplit(base).path.rstrip("/") + "/models"


async def lmstudio_info(
    client: Any, base: str, name: str, headers: dict[str, str]
) -> ModelInfo | None:
    """LM Studio's window: its ``/v1/models`` lists ids only, its native
    ``GET /api/v0/models/{id}`` has ``loaded_context_length`` and ``max_context_length``.
    Asked only when ``base`` ends in ``/v1``; None when the server does not answer it
    (any other server: a 404)."""
    import httpx

    if not base.rstrip("/").endswith("/v1"):
        return None
    root = base.rstrip("/")[: -len("/v1")]
    try:
        response = await client.get(f"{root}/api/v0/models/{quote(name, safe='')}", headers=headers)
        response.raise_for_status()
        info = model_info_from_models(response.json(), name, "/api/v0/models")
    except (httpx.HTTPError, ValueError):
        return None
    return info if info.context_window is not None else None


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
    """Resolve ``settings.profile`` with what the server says about the model (one
    ``/api/show`` or ``/models`` request, whatever the profile setting: the window and
    the capabilities need it too; ``profile.info`` carries it)."""
    if settings.provider == "demo":
        return choose_profile(settings, ModelInfo())
    info = await fetch_model_info(settings)
    return choose_profile(settings, info)
