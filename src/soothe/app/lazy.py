"""Engine modules the first frame must not import, bound by name and loaded on first use.

The engine's event and view models (``soothe.engine.events``, ``soothe.engine.views``)
are pydantic models: importing them costs ~80 ms here, nearly all of it pydantic's own
import, and nothing drawn on the first frame uses them (they arrive with the engine, which
imports them anyway). A module that uses them only when events come binds them like this,
so the type checker still sees the real module::

    if TYPE_CHECKING:
        from soothe.engine import events as ev
    else:
        ev = lazy("soothe.engine.events")

Annotations need no binding at all (``from __future__ import annotations`` and a
``TYPE_CHECKING`` import). A test in ``tests/app/test_startup.py`` keeps the first frame
free of pydantic.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands for a module until an attribute is read: the import then happens (through
    the import system, so its lock keeps two threads from running the module twice), and
    each attribute read is kept on this object, so later reads are plain lookups."""

    def __init__(self, name: str) -> None:
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # copy, pickle and friends probe for dunders
            raise AttributeError(attr)
        value = getattr(importlib.import_module(self._lazy_name), attr)
        self.__dict__[attr] = value
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self._lazy_name!r}>"


def lazy(name: str) -> Any:
    """The module ``name``, imported when one of its attributes is first read."""
    return LazyModule(name)
