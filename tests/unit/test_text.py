"""The one clip helper, and the callers that keep their lines or fold them."""

from __future__ import annotations

from soothe.engine.context.projection import clip as projection_clip
from soothe.engine.llm.errors import _one_line
from soothe.engine.text import clip


def test_clip_folds_white_space_and_ends_in_an_ellipsis() -> None:
    assert clip("  a\n b\t c  ", 10) == "a b c"
    assert clip("hello wide world", 8) == "hello w…"
    assert clip("hello wide world", 7) == "hello…"  # no space before the ellipsis
    assert len(clip("x" * 50, 10)) == 10
    assert clip("abc", 3) == "abc"


def test_clip_keeps_lines_when_asked_and_tiny_limits() -> None:
    assert clip("  one\ntwo  ", 20, flatten=False) == "one\ntwo"
    assert clip("one\ntwo three", 9, flatten=False) == "one\ntwo…"
    assert clip("abc", 1) == "…"
    assert clip("abc", 0) == ""


def test_callers_keep_their_behaviour() -> None:
    # The projection keeps a description's lines; an error message is one line.
    assert projection_clip("line one\nline two", 100) == "line one\nline two"
    assert _one_line(ValueError("bad\n  reply"), 160) == "bad reply"
    assert len(_one_line("y" * 500)) == 160
