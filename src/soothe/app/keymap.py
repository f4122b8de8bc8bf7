"""The key bindings, gathered by id for F1, the user's overrides and their validation.

Each widget and screen declares its own ``BINDINGS`` (``Binding(..., id=...)``); this module
only collects them, scope by scope. ``settings.ui.keymap`` overrides keys by id (applied
with ``App.set_keymap``), ``validate_keymap`` tells the user about ids that do not exist.
"""

from __future__ import annotations

from collections.abc import Mapping

from textual.binding import Binding
from textual.dom import DOMNode


def _ids(owner: type[DOMNode]) -> list[Binding]:
    """The bindings a class declares itself that carry an id (Textual's own have none)."""
    found = []
    for binding in owner.__dict__.get("BINDINGS", ()):
        if isinstance(binding, Binding) and binding.id:
            found.append(binding)
    return found


def scopes() -> list[tuple[str, list[Binding]]]:
    """(scope, bindings) in F1 order."""
    # imported here: the app imports this module, and these classes import the app's parts
    from soothe.app.main import SootheApp
    from soothe.app.screens.goals import GoalInputDialog
    from soothe.app.screens.requests import ApprovalModal, ClarificationModal
    from soothe.app.screens.threads import ThreadsScreen
    from soothe.widgets.criteria import CriteriaArea
    from soothe.widgets.evidence_panel import EvidencePanel
    from soothe.widgets.goal_tree import GoalTree
    from soothe.widgets.prompt_input import PromptInput
    from soothe.widgets.queued import QueuedRequests

    return [
        ("Global", _ids(SootheApp)),
        ("Prompt", _ids(PromptInput)),
        ("Queued requests (shift+tab from the prompt)", _ids(QueuedRequests)),
        ("Goal tree (focused)", _ids(GoalTree)),
        ("Evidence (focused)", _ids(EvidencePanel)),
        ("Threads screen", _ids(ThreadsScreen)),
        ("Clarification", _ids(ClarificationModal)),
        ("Approval", _ids(ApprovalModal)),
        ("Dialogs", [*_ids(GoalInputDialog), *_ids(CriteriaArea)]),
    ]


def all_ids() -> set[str]:
    return {binding.id for _, bindings in scopes() for binding in bindings if binding.id}


def validate_keymap(keymap: Mapping[str, str]) -> list[str]:
    """One-line problems for ids that no binding has, or empty keys."""
    known = all_ids()
    problems = []
    for binding_id, keys in keymap.items():
        if binding_id not in known:
            problems.append(f"ui.keymap: unknown binding id {binding_id!r} (F1 lists them)")
        elif not keys.strip():
            problems.append(f"ui.keymap: {binding_id!r} has no keys")
    return problems


def usable_keymap(keymap: Mapping[str, str]) -> dict[str, str]:
    known = all_ids()
    return {k: v for k, v in keymap.items() if k in known and v.strip()}


def display_keys(keys: str) -> str:
    names = {"plus": "+", "minus": "-", "escape": "esc"}
    return " / ".join(names.get(key.strip(), key.strip()) for key in keys.split(","))


def help_rows(overrides: Mapping[str, str]) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(scope, [(keys, description, id)]) with the user's overrides applied."""
    return [
        (
            scope,
            [
                (display_keys(overrides.get(b.id or "", b.key)), b.description, b.id or "")
                for b in bindings
            ],
        )
        for scope, bindings in scopes()
    ]
