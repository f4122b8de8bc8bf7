"""Every key binding, by id. Defaults live here; ``settings.ui.keymap`` overrides by id.

Widgets and screens build their ``BINDINGS`` from these tables, the F1 help screen reads
them, and ``validate_keymap`` tells the user about ids that do not exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class KeySpec:
    id: str
    keys: str
    action: str
    description: str
    key_display: str | None = None
    group: Binding.Group | None = None
    show: bool = True
    priority: bool = False

    def binding(self) -> Binding:
        return Binding(
            self.keys,
            self.action,
            self.description,
            show=self.show,
            priority=self.priority,
            key_display=self.key_display,
            id=self.id,
            group=self.group,
        )


PRIORITY = Binding.Group("Priority", compact=True)


GLOBAL: tuple[KeySpec, ...] = (
    KeySpec("app.interrupt", "escape", "interrupt", "Interrupt"),
    KeySpec("app.back_to_prompt", "escape", "back_to_prompt", "Back to prompt", show=False),
    KeySpec("app.focus_prompt", "ctrl+l", "focus_prompt", "Prompt", priority=True),
    KeySpec("app.focus_goals", "ctrl+g", "focus_goals", "Goals", priority=True),
    KeySpec("app.evidence", "ctrl+e", "evidence", "Evidence", priority=True),
    KeySpec("app.threads", "ctrl+t", "threads", "Threads", priority=True),
    KeySpec("app.run_goals", "ctrl+r", "run_goals", "Run goals", show=False, priority=True),
    KeySpec("app.help", "f1", "help", "Help", priority=True),
    KeySpec("app.quit", "ctrl+q", "quit", "Quit", priority=True),
    KeySpec(
        "app.command_palette", "ctrl+p", "command_palette", "Palette", show=False, priority=True
    ),
)

PROMPT: tuple[KeySpec, ...] = (
    KeySpec("prompt.submit", "enter", "submit", "Send", show=False),
    KeySpec("prompt.history_previous", "up", "history(-1)", "Previous", show=False),
    KeySpec("prompt.history_next", "down", "history(1)", "Next", show=False),
    KeySpec("prompt.complete", "tab", "complete", "Complete", show=False),
)

TREE: tuple[KeySpec, ...] = (
    KeySpec("tree.new_goal", "n", "command('new')", "New goal"),
    KeySpec("tree.add_dependency", "d", "command('depend')", "Depends on"),
    KeySpec("tree.cancel", "x", "command('cancel')", "Cancel"),
    KeySpec("tree.suspend", "s", "command('suspend')", "Suspend"),
    KeySpec("tree.resume", "s", "command('resume')", "Resume"),
    KeySpec("tree.retry", "r", "command('retry')", "Retry"),
    KeySpec("tree.priority_up", "plus", "command('priority_up')", "Priority up", "+", PRIORITY),
    KeySpec(
        "tree.priority_down", "minus", "command('priority_down')", "Priority down", "-", PRIORITY
    ),
    KeySpec("tree.details", "enter", "command('details')", "Details"),
    KeySpec("tree.cursor_up", "up,k", "cursor_up", "Up", show=False),
    KeySpec("tree.cursor_down", "down,j", "cursor_down", "Down", show=False),
    KeySpec("tree.toggle", "space", "toggle_node", "Fold", show=False),
    KeySpec("tree.parent", "left,shift+left", "cursor_parent", "Parent", show=False),
)

THREADS: tuple[KeySpec, ...] = (
    KeySpec("threads.open", "enter", "open", "Open"),
    KeySpec("threads.new", "n", "new", "New"),
    KeySpec("threads.delete", "d", "delete", "Delete"),
    KeySpec("threads.export", "e", "export", "Export"),
    KeySpec("threads.close", "escape", "close", "Back"),
)

CLARIFY: tuple[KeySpec, ...] = (
    KeySpec("clarify.submit", "ctrl+s", "submit", "Submit"),
    KeySpec("clarify.skip", "escape", "skip", "Skip"),
)

APPROVAL: tuple[KeySpec, ...] = (
    KeySpec("approval.once", "a", "choose('approve_once')", "Approve once"),
    KeySpec("approval.always", "A", "choose('approve_always')", "Always for this tool"),
    KeySpec("approval.deny", "d,escape", "choose('deny')", "Deny"),
)

DIALOG: tuple[KeySpec, ...] = (KeySpec("dialog.close", "escape", "close", "Close"),)

SCOPES: dict[str, tuple[KeySpec, ...]] = {
    "Global": GLOBAL,
    "Prompt": PROMPT,
    "Goal tree (focused)": TREE,
    "Threads screen": THREADS,
    "Clarification": CLARIFY,
    "Approval": APPROVAL,
    "Dialogs": DIALOG,
}


def bindings(specs: Iterable[KeySpec]) -> list[Binding]:
    return [spec.binding() for spec in specs]


def all_ids() -> set[str]:
    return {spec.id for specs in SCOPES.values() for spec in specs}


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
                (display_keys(overrides.get(spec.id, spec.keys)), spec.description, spec.id)
                for spec in specs
            ],
        )
        for scope, specs in SCOPES.items()
    ]
