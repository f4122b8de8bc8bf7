"""Greedy word wrapping on terminal cells, cheap enough to run per streamed token batch."""

from __future__ import annotations

import re

from rich.cells import cell_len, get_character_cell_size

_TOKENS = re.compile(r"[^ ]+ *| +")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def clean(text: str) -> str:
    """Tabs to spaces, CR dropped, other control characters made visible."""
    if "\t" in text:
        text = text.expandtabs(4)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "")
    return _CONTROL.sub("\ufffd", text)


def _width(token: str) -> int:
    return len(token) if token.isascii() else cell_len(token)


def wrap_line(line: str, width: int) -> list[str]:
    """Rows of one logical line (no newlines) for ``width`` cells.

    Rows break after spaces; a word longer than the width is split. Trailing spaces stay
    on the row they follow, so joining the rows gives the line back.
    """
    width = max(1, width)
    if _width(line) <= width:
        return [line]
    rows: list[str] = []
    row: list[str] = []
    col = 0
    for match in _TOKENS.finditer(line):
        token = match.group()
        word = token.rstrip(" ")
        word_w = _width(word)
        if col + word_w <= width:
            row.append(token)
            col += _width(token)
            continue
        if row:
            rows.append("".join(row))
            row, col = [], 0
        if word_w <= width:
            row.append(token)
            col = _width(token)
            continue
        # hard split of a word wider than the row
        piece: list[str] = []
        piece_w = 0
        for char in token:
            char_w = 1 if char.isascii() else get_character_cell_size(char)
            if piece_w + char_w > width and char != " ":
                rows.append("".join(piece))
                piece, piece_w = [], 0
            piece.append(char)
            piece_w += char_w
        row, col = piece, piece_w
    if row or not rows:
        rows.append("".join(row))
    return rows
