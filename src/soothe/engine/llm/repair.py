"""Local repair of near-miss JSON from small models.

Handles: code fences, prose around the object, trailing commas, single-quoted strings,
Python literals (True/False/None), raw newlines inside strings, a JSON object encoded
as a JSON string, and a truncated object that can be closed. Returns the repaired JSON
text of one object, or None when nothing usable is there. Pure stdlib: cheap to import.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

__all__ = ["Repaired", "close_truncated", "extract_candidates", "repair", "repair_json"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_MAX_CANDIDATES = 8
_LITERALS = {
    "True": "true",
    "False": "false",
    "None": "null",
    "null": "null",
    "true": "true",
    "false": "false",
}
_TOKEN = re.compile(r"-?(?:\d+\.?\d*(?:[eE][+-]?\d*)?|\.\d+)|[A-Za-z_][A-Za-z0-9_]*")
_JSON_ESCAPES = set('"\\/bfnrtu')


def _loads_object(text: str) -> dict | None:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    if isinstance(value, str):  # an object encoded as a JSON string
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class Repaired:
    text: str
    """Valid JSON text of one object."""
    closed: bool
    """True when the object was cut off and had to be closed (it may be partial)."""


def repair_json(text: str) -> str | None:
    """Return valid JSON text for the one object in ``text``, or None."""
    result = repair(text)
    return result.text if result else None


def repair(text: str) -> Repaired | None:
    """Like ``repair_json`` but also says whether the object had to be closed."""
    if not text or not text.strip():
        return None
    stripped = text.strip()
    direct = _loads_object(stripped)
    if direct is not None:
        return Repaired(json.dumps(direct, ensure_ascii=False), closed=False)
    closed: tuple[str, Repaired] | None = None
    for candidate in extract_candidates(stripped):
        if closed is not None and not candidate.startswith(closed[0]):
            break  # only the same object, read further, may beat the closed one
        fixed = _normalise(candidate)
        if fixed is None:
            continue
        obj = _loads_object(fixed.text)
        if obj is None:
            continue
        found = Repaired(json.dumps(obj, ensure_ascii=False), closed=fixed.closed)
        if not found.closed:
            return found
        if closed is None:
            # a fence's body ends at the first ``` even inside a string
            # ('```json {"```": 1} ```'): the same object from the whole text may be whole
            closed = (candidate, found)
    return closed[1] if closed is not None else None


def extract_candidates(text: str) -> list[str]:
    """Substrings that may hold the object: fenced blocks first, then from each ``{``.

    A ``` inside an object that reads whole from an earlier ``{`` is part of one of its
    strings (``{"```": {}}``), not a fence: its "body" would be a piece of the object.
    """
    out: list[str] = []
    starts: list[int] = []
    start = text.find("{")
    while start != -1 and len(starts) < _MAX_CANDIDATES:
        starts.append(start)
        start = text.find("{", start + 1)
    whole: list[tuple[int, int]] = []  # where objects that read whole lie in ``text``
    for start in starts:
        if any(begin < start < end for begin, end in whole):
            continue
        found, length = _scan(text[start:])
        if found is not None and not found.closed:
            whole.append((start, start + length))
    for match in _FENCE.finditer(text):
        if any(begin < match.start() < end for begin, end in whole):
            continue
        body = match.group(1).strip()
        if "{" in body:
            out.append(body[body.index("{") :])
    out.extend(text[start:] for start in starts)
    # A JSON string holding an object: "{\"a\": 1}"
    if text.startswith('"') and "{" in text:
        out.append(text)
    return out


def _next_significant(text: str, i: int) -> str:
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return text[i] if i < n else ""


def _normalise(text: str) -> Repaired | None:
    """Rewrite ``text`` (starting at an object) into strict JSON; close it if truncated.

    Scans once, tracking the bracket stack and string state. Stops at the end of the
    first top-level value, so prose after the object is dropped.
    """
    return _scan(text)[0]


def _scan(text: str) -> tuple[Repaired | None, int]:
    """``_normalise``, and where in ``text`` the scan stopped (past a whole object's end)."""
    out: list[str] = []
    stack: list[str] = []
    # Points where the output is a valid prefix once closed: (length, stack copy).
    safe: list[tuple[int, list[str]]] = []
    i, n = 0, len(text)
    if not text.startswith(("{", '"')):
        return None, i
    if text.startswith('"'):
        return Repaired(text, closed=False), n  # a JSON string: _loads_object unwraps it
    while i < n:
        ch = text[i]
        if ch in "\"'":
            quote = ch
            i += 1
            buf = ['"']
            closed = False
            while i < n:
                c = text[i]
                if c == "\\" and i + 1 < n:
                    nxt = text[i + 1]
                    if nxt == "'":
                        buf.append("'")
                    elif nxt in _JSON_ESCAPES:
                        buf.append(c + nxt)
                    else:  # an escape JSON does not know: keep the backslash literally
                        buf.append("\\\\" + nxt)
                    i += 2
                    continue
                if c == "\\":  # a lone backslash at the very end
                    i += 1
                    continue
                if c == quote:
                    # In a single-quoted string an apostrophe ends it only before , : } ]
                    if quote == "'" and _next_significant(text, i + 1) not in ",:}]":
                        buf.append("'")
                        i += 1
                        continue
                    closed = True
                    i += 1
                    break
                if c == '"':  # only reachable inside a single-quoted string
                    buf.append('\\"')
                elif c == "\n":
                    buf.append("\\n")
                elif c == "\r":
                    buf.append("\\r")
                elif c == "\t":
                    buf.append("\\t")
                elif ord(c) < 0x20:
                    buf.append(f"\\u{ord(c):04x}")
                else:
                    buf.append(c)
                i += 1
            buf.append('"')
            out.append("".join(buf))
            if not closed:
                return close_truncated(out, stack, safe), i
            if _next_significant(text, i) != ":" and stack:
                safe.append((len(out), list(stack)))
            continue
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
            out.append(ch)
            safe.append((len(out), list(stack)))
            i += 1
            continue
        if ch in "}]":
            if not stack:
                break
            while out and out[-1].strip() in {",", ""}:
                out.pop()
            # close whatever is open up to the matching bracket (tolerates a missing one)
            want = "}" if ch == "}" else "]"
            while stack and stack[-1] != want:
                out.append(stack.pop())
            if stack:
                out.append(stack.pop())
            i += 1
            if not stack:
                return Repaired("".join(out), closed=False), i
            safe.append((len(out), list(stack)))
            continue
        if ch in ",:":
            out.append(ch)
            i += 1
            continue
        if ch in " \t\r\n":
            out.append(" ")
            i += 1
            continue
        if ch == "/" and text.startswith("//", i):  # a line comment
            end = text.find("\n", i)
            i = n if end == -1 else end
            continue
        match = _TOKEN.match(text, i)
        if match is None:
            return None, i
        token = match.group(0)
        i = match.end()
        if token[0].isalpha() or token[0] == "_":
            if _next_significant(text, i) == ":":  # an unquoted key
                out.append(json.dumps(token))
                continue
            lit = _LITERALS.get(token)
            if lit is None:
                if i == n:  # a literal cut short, e.g. "tru": drop it when closing
                    break
                return None, i
            out.append(lit)
        else:
            if token.startswith((".", "-.")):
                token = token.replace(".", "0.", 1)
            if token.endswith("."):
                token += "0"
            out.append(token)
        if stack:
            safe.append((len(out), list(stack)))
    if not stack:
        return (Repaired("".join(out), closed=False) if out else None), i
    return close_truncated(out, stack, safe), i


def close_truncated(
    out: list[str],
    stack: list[str],
    safe: list[tuple[int, list[str]]],
) -> Repaired | None:
    """Close a cut-off object: try the whole prefix, then back off to safe points."""
    attempts: list[tuple[list[str], list[str]]] = [(out, stack)]
    attempts += [(out[:length], st) for length, st in reversed(safe)]
    for parts, st in attempts:
        body = "".join(parts).rstrip()
        while body.endswith(","):
            body = body[:-1].rstrip()
        candidate = body + "".join(reversed(st))
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return Repaired(candidate, closed=True)
    return None
