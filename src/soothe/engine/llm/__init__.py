"""Chat models for Soothe: factory, hub, structured output, errors, server checks.

Import-light: names are re-exported lazily, so ``import soothe.engine.llm`` does not
pull in LangChain or any provider client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from soothe.engine.llm.demo import build_demo_model, register_demo_responder
    from soothe.engine.llm.doctor import run_doctor
    from soothe.engine.llm.errors import LLMError, ModelErrorKind, map_error
    from soothe.engine.llm.factory import build_chat_model
    from soothe.engine.llm.hub import ModelHub
    from soothe.engine.llm.repair import repair_json
    from soothe.engine.llm.schema import UnboundedSchemaError, bounded_json_schema
    from soothe.engine.llm.server import ServerStatus, check_server
    from soothe.engine.llm.structured import StructuredResult
    from soothe.engine.llm.usage import UsageCounts, UsageTotals

_EXPORTS = {
    "LLMError": "errors",
    "ModelErrorKind": "errors",
    "ModelHub": "hub",
    "ServerStatus": "server",
    "StructuredResult": "structured",
    "UnboundedSchemaError": "schema",
    "UsageCounts": "usage",
    "UsageTotals": "usage",
    "bounded_json_schema": "schema",
    "build_chat_model": "factory",
    "build_demo_model": "demo",
    "check_server": "server",
    "map_error": "errors",
    "register_demo_responder": "demo",
    "repair_json": "repair",
    "run_doctor": "doctor",
}

__all__ = [
    "LLMError",
    "ModelErrorKind",
    "ModelHub",
    "ServerStatus",
    "StructuredResult",
    "UnboundedSchemaError",
    "UsageCounts",
    "UsageTotals",
    "bounded_json_schema",
    "build_chat_model",
    "build_demo_model",
    "check_server",
    "map_error",
    "register_demo_responder",
    "repair_json",
    "run_doctor",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        msg = f"module 'soothe.engine.llm' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(f"soothe.engine.llm.{module}"), name)
    globals()[name] = value
    return value
