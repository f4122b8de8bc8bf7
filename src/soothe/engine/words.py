"""Content words: what a text is about, for cheap deterministic "is this related" checks.

Used where a small model's output must be judged without another model call: a plan step
that shares nothing with its goal, a final answer that shares nothing with the facts the
workspace gave. Lower case; file names are kept whole (``notes.txt``) and also split
(``notes``); numbers are kept (a count is a fact); function words and our own vocabulary
(goal, step, plan, evidence, the loader's labels) are dropped, since echoing them proves
nothing.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-z0-9][a-z0-9_.\-/]*[a-z0-9]|[a-z0-9]")

_STOPWORD_TEXT = """
    a about above after again all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each
    few for from further had has have having he her here hers him his how i if in into
    is it its itself just me more most my no nor not now of off on once only or other
    our out over own same she should so some such than that the their them then there
    these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yes ok okay please thanks
    let get got make made use used using one two say says said tell give show see
    need needs want wants like well way something anything nothing thing things
    goal goals step steps plan plans planned evidence answer answers task tasks result
    results output tool tools assistant user request context final iteration ledger
    file files folder folders directory directories list listing listed entries entry
    chars lines line read reads reading content contents workspace path paths name
    names data text summary summarize summarise item items first last next
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Words that say nothing about a subject (English function words, request verbs, and
the words our own prompts and evidence labels are made of)."""

_WORK_TEXT = """
    write edit run shell grep glob dir search find count check report open inspect look
    compare describe explain verify review collect gather extract identify determine
    compute calculate number total many much returns return takes take print create
    update change fix save add remove delete rename move copy test build install
"""
WORK_WORDS = frozenset(_WORK_TEXT.split())
"""Verbs of work and tool-name parts: they fit any goal, so they say nothing of its topic
(a plan step made only of them is never judged off-topic)."""

_EXTENSIONS = frozenset({"md", "txt", "py", "json", "toml", "yaml", "yml", "rst", "cfg"})


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry its subject (see the module docstring)."""
    words: set[str] = set()
    for token in _TOKEN.findall(text.lower()):
        token = token.strip("./-_")
        if not token:
            continue
        parts = [p for p in re.split(r"[./_\-]", token) if p]
        for word in (token, *parts) if len(parts) > 1 else (token,):
            if word in STOPWORDS or word in _EXTENSIONS:
                continue
            if word.isdigit() or len(word) >= 3:
                words.add(word)
    return words


def shares_words(text: str, corpus: str, *, ignore: str = "") -> bool:
    """True when ``text`` has a content word of ``corpus`` that is not one of ``ignore``'s."""
    mine = content_words(text) - content_words(ignore)
    return bool(mine & content_words(corpus))
