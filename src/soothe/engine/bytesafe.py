"""The one rule for text that is not Unicode: file names that are bytes, lone surrogates.

POSIX file names are bytes. Python decodes a name that is not UTF-8 with
``surrogateescape``: ``b"caf\\xff.txt"`` becomes ``"caf\\udcff.txt"``, a string that
UTF-8, JSON writers, pydantic and SQLite refuse. A model can also send a lone surrogate
itself (``"\\ud800"`` is valid JSON). Anything that leaves the process as text (tool
results, events, the store, the screen) goes through ``escape``:

* an undecodable byte (``\\udc80``-``\\udcff``) is shown as ``\\xNN`` (``caf\\xff.txt``);
* any other lone surrogate as ``\\uXXXX`` (``\\ud800``).

``unescape_name`` maps the first form back, so a name the model read in a listing opens
the real file (``Workspace.resolve``; a file whose name really is the escaped text wins).
Text without surrogates, nearly all of it, is returned as it came (the same object).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

__all__ = ["escape", "escape_in", "has_surrogates", "unescape_name"]

T = TypeVar("T")

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_BYTE = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that surrogateescape could not decode
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def has_surrogates(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def escape(text: str) -> str:
    """``text`` with each lone surrogate written out (``\\xff`` for a raw byte)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_shown, text)


def escape_in(value: T) -> T:
    """``value`` with every string in it escaped, through dicts, lists and tuples (keys
    too); the same object when nothing needed it."""
    return _escape_in(value) if _holds_surrogates(value) else value


def _holds_surrogates(value: Any) -> bool:
    if isinstance(value, str):
        return not value.isascii() and _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        for key, item in value.items():
            if (isinstance(key, str) and not key.isascii() and _holds_surrogates(key)) or (
                item is not None and not isinstance(item, int | float) and _holds_surrogates(item)
            ):
                return True
        return False
    if isinstance(value, list | tuple):
        for item in value:
            if _holds_surrogates(item):
                return True
    return False


def _escape_in(value: Any) -> Any:
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, dict):
        return {_escape_in(k): _escape_in(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escape_in(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_escape_in(v) for v in value)
    return value


def unescape_name(text: str) -> str:
    """A name written by ``escape`` back to the string the OS gives for its bytes
    (``caf\\xff.txt`` -> ``caf\\udcff.txt``); other text is returned unchanged."""
    if "\\x" not in text:
        return text
    return _ESCAPED_BYTE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), text)
