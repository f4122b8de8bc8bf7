"""The small profile's read-only rule: a request that asks for no change gets only the
tools that cannot change anything.

A small model offered write_file and run_shell for "Summarize README.md" sometimes calls
them anyway (it copies the tool list); not offering them is cheaper than refusing them.
The rule is deliberately lexical and conservative: any word that could mean a change
(write, edit, create, run, delete, fix, change, install, ...) keeps the full tool set.
"""

from __future__ import annotations

import re

__all__ = ["READ_ONLY_TOOLS", "change_tools_asked", "is_read_only_request", "offered_tools"]

READ_ONLY_TOOLS = ("read_file", "list_dir", "glob", "grep")
"""The tools a read-only request is offered under the small profile."""

_CHANGE_WORDS = (
    "write|writes|writing|wrote|rewrite|overwrite|edit|edits|editing|modify|update|"
    "create|creates|make|makes|generate|add|append|insert|save|store|put|"
    "run|runs|running|execute|exec|launch|start|stop|kill|test|tests|build|compile|"
    "install|uninstall|upgrade|pip|npm|git|commit|push|deploy|"
    "delete|deletes|remove|removes|rm|erase|clean|purge|drop|"
    "fix|fixes|repair|patch|change|changes|replace|rename|move|mv|copy|cp|refactor|"
    "format|reformat|lint|touch|mkdir|chmod|download|fetch|send|shell|command|bash"
)
_CHANGE = re.compile(rf"\b(?:{_CHANGE_WORDS})\b", re.IGNORECASE)


def is_read_only_request(text: str) -> bool:
    """True when ``text`` asks for nothing that writes, edits, creates, runs or deletes.

    ``"Summarize README.md"`` and ``"List the files"`` are read-only; ``"fix the typo in
    notes.txt"``, ``"run the tests"`` and ``"create hello.py"`` are not. Empty text is
    not read-only (nothing says so)."""
    return bool(text.strip()) and _CHANGE.search(text) is None


def offered_tools(request: str, *, small: bool) -> frozenset[str] | None:
    """The built-in tools a step may use, or None for all of them (and the MCP servers').

    Only the small profile narrows the set, and only for a read-only request."""
    if small and is_read_only_request(request):
        return frozenset(READ_ONLY_TOOLS)
    return None


_RUN = re.compile(
    r"\b(?:run|runs|running|execute|exec|launch|start|stop|kill|test|tests|build|compile|"
    r"install|uninstall|upgrade|pip|npm|git|commit|push|deploy|lint|shell|command|bash)\b",
    re.IGNORECASE,
)


def change_tools_asked(text: str) -> frozenset[str]:
    """The tools that change something ``text`` may need, by the same words as
    ``is_read_only_request``: a command word asks for run_shell, any other change word
    for write_file and edit_file (a step offered fewer tools when its window is tight
    keeps these)."""
    if is_read_only_request(text):
        return frozenset()
    run = _RUN.search(text) is not None
    writes = _CHANGE.search(_RUN.sub(" ", text)) is not None
    return frozenset(
        [*(("run_shell",) if run else ()), *(("write_file", "edit_file") if writes else ())]
    )
