"""One sanitiser for every terminal edge (Textual-free; only ``re`` and ``unicodedata``).

Text from a model, a tool, a file, an MCP server or the store can carry terminal control
sequences: OSC 0 sets the window title, OSC 52 writes the clipboard (through tmux too),
OSC 8 plants a link, CSI 2J clears the screen, and a CR or an erase-line makes a line
show something other than what it holds. Everything such text passes through before it
is printed or drawn comes here, in one of three forms:

- ``plain(text)``: for display (answers, progress, listings, exports, the app's text).
  Escape sequences (CSI, OSC, DCS, SOS, PM, APC, in their 7-bit and 8-bit forms, and the
  short ESC ones) are removed whole; CR and CR LF become a newline; every other C0 control
  but newline and tab, DEL, the C1 controls (U+0080-U+009F) and the bidi overrides and
  isolates (U+202A-U+202E, U+2066-U+2069, which reorder what is shown) are removed. What
  is left cannot make a terminal do anything but print.
- ``visible(text)``: for what the user approves (a command, a path, a question). Nothing
  is removed: each control character is shown as its Unicode Control Picture (ESC ``␛``,
  CR ``␍``, LF ``␊``, tab ``␉``, BS ``␈``, NUL ``␀`` ... DEL ``␡``), and the other
  invisible or reordering characters (C1, bidi, zero-width and other format characters,
  line/paragraph separators, lone surrogates) as ``⟪U+XXXX⟫``. A control picture or ``⟪``
  that was in the text itself is shown as ``⟪U+XXXX⟫`` too, so two different texts never
  look the same: what is approved is exactly what runs.
- ``json_safe(line)``: a JSON document as ``json``/pydantic wrote it (they escape C0 as
  ``\\u001b``), with DEL, C1, bidi and line separators escaped as well (same value).

Helpers: ``one_line`` (plain, white space folded, clipped: list rows, error lines),
``plain_fields`` (an event or a view with every string plain: the app's view model),
``drop_controls`` (every control out, newline included: text already laid out, the
app's last guard in ``app/terminal_guard.py``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, TypeVar

__all__ = ["drop_controls", "json_safe", "one_line", "plain", "plain_fields", "visible"]

_BIDI = "\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
"""What ``plain`` removes (after the sequences and CR): C0 but tab and newline, DEL, C1,
bidi overrides and isolates."""

_SEQUENCE = re.compile(
    r"""
    (?:\x1b\[|\x9b) [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]?              # CSI
  | (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]) [^\x07\x1b\x9c]* (?:\x07|\x1b\\|\x9c)
                                                   # OSC, DCS, SOS, PM, APC to BEL or ST
  | \x1b [\x20-\x2f]* [\x30-\x7e]?     # the rest: ESC 7, ESC c, ESC ( B, a bare ESC ]
    """,
    re.VERBOSE,
)
"""Escape sequences, removed whole by ``plain``. A string sequence (OSC...) without its
terminator loses only its introducer: its text stays visible, harmless."""


def plain(text: str) -> str:
    """``text`` for display: no escape sequence, no control but newline and tab."""
    if _UNSAFE.search(text) is None:
        return text
    text = _SEQUENCE.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _UNSAFE.sub("", text)


_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")


def drop_controls(text: str) -> str:
    """``text`` without any control character, newline and tab included (each takes no
    cell: a screen segment keeps its measured width). For text already laid out."""
    return text if _CONTROL.search(text) is None else _CONTROL.sub("", text)


def one_line(text: str, limit: int | None = None) -> str:
    """``plain(text)`` on one line (all white space folded), clipped to ``limit``."""
    from soothe.engine.text import clip

    flat = " ".join(plain(text).split())
    return flat if limit is None else clip(flat, limit)


_MARK = "\u27ea"  # ⟪, the start of a shown code point; itself always shown as one
_PICTURES = {n: chr(0x2400 + n) for n in range(0x20)} | {0x7F: "\u2421"}
_SHOWN_LITERALLY = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\u2028\u2029\u2400-\u243f{_MARK}]")


def _special(char: str) -> bool:
    """Characters that ``visible`` never shows as themselves."""
    if _SHOWN_LITERALLY.match(char):
        return True
    category = unicodedata.category(char)
    # Cf: zero-width and other format characters (incl. invisible tag characters);
    # Cs: a lone surrogate (a file name that is not UTF-8)
    return category in ("Cf", "Cs", "Zl", "Zp")


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control and invisible character shown (see the module).

    ``keep_newlines`` keeps LF as a line break (a multi-line script in a dialog);
    otherwise it is ``␊`` and the result is one line."""
    out: list[str] = []
    for char in text:
        code = ord(char)
        if char == "\n" and keep_newlines:
            out.append(char)
        elif code in _PICTURES:
            out.append(_PICTURES[code])
        elif (code < 0x80 and char.isprintable()) or not _special(char):
            out.append(char)
        else:
            out.append(f"{_MARK}U+{code:04X}\u27eb")
    return "".join(out)


_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{_BIDI}\u2028\u2029]")


def json_safe(line: str) -> str:
    """A serialised JSON document with DEL, C1, bidi and line separators escaped.

    Outside strings JSON is ASCII, so each such character is inside a string, where
    ``\\uXXXX`` is the same value."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


M = TypeVar("M")


def plain_fields(model: M) -> M:
    """A pydantic model (an event, a view) with every string in it made ``plain``: its
    fields, and the keys and values of its lists and dicts, nested models too. The model
    itself when nothing changed (no copy): a streamed token costs a few microseconds."""
    if not hasattr(model, "model_copy"):
        return model
    changes: dict[str, Any] = {}
    for name, value in vars(model).items():
        kind = type(value)
        if kind is str:
            if _UNSAFE.search(value) is not None:
                changes[name] = plain(value)
        elif value is not None and kind not in _SCALARS:
            clean = _plain_value(value)
            if clean is not value:
                changes[name] = clean
    if not changes:
        return model
    return model.model_copy(update=changes)


_SCALARS = (int, float, bool)


def _plain_value(value: Any) -> Any:
    """``value`` with its strings made plain; the same object when none changed."""
    if isinstance(value, str):
        clean = plain(value)
        return value if clean == value else clean
    if isinstance(value, list | tuple):
        items = [_plain_value(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    if isinstance(value, dict):
        pairs = [(_plain_value(k), _plain_value(v)) for k, v in value.items()]
        if all(k is a and v is b for (k, v), (a, b) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if hasattr(value, "model_copy"):
        return plain_fields(value)
    return value
