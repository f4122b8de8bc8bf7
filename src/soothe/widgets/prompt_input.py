"""PromptInput: the multi-line request input, with history and completion.

A ``TextArea``: a paste keeps every line; enter sends (``PromptInput.Submitted``), shift+enter
or ctrl+j starts a new line. Up on the first line and down on the last walk the history,
which is kept in a small file under the data dir (``history_file``, the last 500
entries). Tab completes slash commands and their arguments (``commands=``, ``choices=``,
from the app) and ``@path`` words from the workspace (``files=``); tab again cycles (or goes
into the folder tab has just completed, when it was the only match).
Page up / page down scroll the conversation while typing (``PromptInput.Page``).

The widget knows no commands of its own and reads no settings: the app hands it all of it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from soothe.engine.atomic import write_atomic
from soothe.engine.bytesafe import escape, unescape_name

Choices = Callable[[str], Iterable[str]]
"""The argument completions for a command word (``/theme`` -> theme names)."""
Files = Callable[[str], Iterable[str]]
"""The workspace paths that complete a path prefix (``src/so`` -> ``src/soothe/``)."""

HISTORY_LIMIT = 500


def matches(value: str, words: Sequence[str], choices: Choices) -> list[str]:
    """Every completion of ``value``: command words, then the command's argument choices."""
    if not value.startswith("/") or "\n" in value:
        return []
    if " " not in value:
        return [
            word if word.endswith(":") else word + " "
            for word in words
            if word.startswith(value) and word != value
        ]
    command, _, arg = value.partition(" ")
    return [f"{command} {c}" for c in choices(command) if c.startswith(arg) and c != arg]


SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv", ".mypy_cache"})


def workspace_paths(root: Path, prefix: str, limit: int = 200) -> list[str]:
    """Paths under ``root`` completing ``prefix`` one level at a time, like a shell:
    ``src/so`` -> ``src/soothe/`` (directories end with ``/``). Hidden entries only when
    the prefix asks for them; nothing outside ``root``."""
    folder, _, stem = prefix.rpartition("/")
    base = (root / unescape_name(folder)).resolve() if folder else root.resolve()
    try:
        if base != root.resolve() and root.resolve() not in base.parents:
            return []
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []
    out = []
    for entry in entries:
        name = escape(entry.name)  # a name that is not UTF-8, as the tools show it
        if not name.startswith(stem) or name in SKIP_DIRS:
            continue
        if name.startswith(".") and not stem.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        out.append(f"{folder}/{name}" if folder else name)
        if is_dir:
            out[-1] += "/"
        if len(out) >= limit:
            break
    return out


def load_history(path: Path | None, limit: int = HISTORY_LIMIT) -> list[str]:
    """The saved entries, oldest first (a missing or damaged file is an empty history)."""
    if path is None:
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    out = []
    for line in lines[-limit:]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, str) and entry:
            out.append(entry)
    return out


def save_history(path: Path | None, entries: Sequence[str], limit: int = HISTORY_LIMIT) -> None:
    """Write the last ``limit`` entries, one JSON string a line (multi-line ones too)."""
    if path is None:
        return
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries[-limit:])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text.encode("utf-8"))
    except OSError:
        pass  # history is a convenience: a read-only data dir must not break sending


def _text_area_bindings_without(taken: set[str]) -> list[BindingType]:
    """TextArea's own keys minus the ones the prompt or the app use (ctrl+e is the evidence
    panel; page up/down scroll the conversation; up/down walk the history at the edges)."""
    out: list[BindingType] = []
    for binding in TextArea.BINDINGS:
        assert isinstance(binding, Binding)
        keys = [k.strip() for k in binding.key.split(",") if k.strip() not in taken]
        if keys:
            out.append(dataclasses.replace(binding, key=",".join(keys)))
    return out


class PromptInput(TextArea, inherit_bindings=False):
    BINDINGS: ClassVar[list[BindingType]] = [
        *_text_area_bindings_without({"ctrl+e", "pageup", "pagedown", "up", "down"}),
        Binding("enter", "submit", "Send", show=False, id="prompt.submit"),
        Binding("shift+enter,ctrl+j", "newline", "New line", show=False, id="prompt.newline"),
        Binding("up", "history(-1)", "Previous", show=False, id="prompt.history_previous"),
        Binding("down", "history(1)", "Next", show=False, id="prompt.history_next"),
        Binding("tab", "complete", "Complete (/command, @path)", show=False, id="prompt.complete"),
        Binding("pageup", "page(-1)", "Scroll the stream up", show=False, id="prompt.page_up"),
        Binding("pagedown", "page(1)", "Scroll the stream down", show=False, id="prompt.page_down"),
    ]

    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        min-height: 3;
        max-height: 10;
        border: tall $panel-lighten-2;
        padding: 0 1;
        background: $surface;
        &:focus { border: tall $accent; }
        & .text-area--cursor-line { background: transparent; }
    }
    """

    class Submitted(Message):
        """Enter: the prompt's text (every line of it)."""

        def __init__(self, prompt: PromptInput, value: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.value = value

        @property
        def control(self) -> PromptInput:
            return self.prompt

    class Page(Message):
        """Page up (-1) / page down (1) pressed in the prompt: scroll the conversation."""

        def __init__(self, direction: int) -> None:
            super().__init__()
            self.direction = direction

    def __init__(
        self,
        *,
        commands: Sequence[str] = (),
        choices: Choices = lambda command: (),
        files: Files | None = None,
        history_file: Path | None = None,
        history_limit: int = HISTORY_LIMIT,
        id: str | None = None,
    ) -> None:
        super().__init__(
            placeholder="Ask, or /goal TEXT · /help · @file  (enter sends, ctrl+j new line)",
            soft_wrap=True,
            show_line_numbers=False,
            highlight_cursor_line=False,
            tab_behavior="focus",  # tab is ours (completion): it never inserts a tab
            id=id,
        )
        self.words = list(commands)
        self.choices = choices
        self.files = files
        self.history_file = history_file
        self.history_limit = history_limit
        self.past: list[str] = load_history(history_file, history_limit)
        self._history_index: int | None = None
        self._draft = ""
        self._completing: tuple[str, str] | None = None
        """(what the user typed, what tab last put in) while tab cycles through matches."""

    # -- the text --------------------------------------------------------------------------

    @property
    def value(self) -> str:
        return self.text

    @value.setter
    def value(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)
        self.update_suggestion()

    def update_suggestion(self) -> None:
        """The first slash completion, shown after the cursor (right accepts it)."""
        value = self.text
        if self.cursor_location != self.document.end or not value.startswith("/"):
            self.suggestion = ""
            return
        found = matches(value, self.words, self.choices)
        self.suggestion = found[0][len(value) :] if found and found[0].startswith(value) else ""

    async def _on_key(self, event: events.Key) -> None:
        """The prompt's own bindings run here, in the prompt's turn, not when the key has
        bubbled up to the app: the app's turn comes after the prompt has already typed the
        keys that followed in the same burst (``aaa`` ctrl+j ``bbb`` sent at once gave
        ``aaabbb`` then a new line)."""
        for binding in self._own_bindings(event.key):
            if await self.app.run_action(binding.action, self):
                # handled: TextArea's handler (next in the MRO) must not type it too, and
                # the app must not run the binding again
                event.prevent_default()
                event.stop()
                return
        # enter and tab are bindings (send, complete): were one refused, TextArea's own
        # handler would insert it
        if event.key in ("enter", "tab"):
            event.prevent_default()

    def _own_bindings(self, key: str) -> list[Binding]:
        """The prompt's non-priority bindings for ``key``, with the app's keymap applied
        (priority ones the app has already run before the key came here)."""
        bindings = self._bindings.copy()
        if self.app._keymap:
            bindings.apply_keymap(self.app._keymap)
        return [b for b in bindings.key_to_bindings.get(key, ()) if not b.priority]

    def action_submit(self) -> None:
        """Send the text and clear the prompt at once: keys typed right after enter (in
        the same burst) belong to the next request, and clearing later, when the app
        handles the message, would wipe them. Blank text is not sent, and stays."""
        text = self.text.strip()
        if not text:
            return
        self.remember(text)
        self.value = ""
        self.post_message(self.Submitted(self, text))

    def action_newline(self) -> None:
        start, end = self.selection
        self._replace_via_keyboard("\n", start, end)

    def action_page(self, direction: int) -> None:
        self.post_message(self.Page(direction))

    # -- history ---------------------------------------------------------------------------

    def remember(self, text: str) -> None:
        if text and (not self.past or self.past[-1] != text):
            self.past.append(text)
            del self.past[: -self.history_limit]
            save_history(self.history_file, self.past, self.history_limit)
        self._history_index = None

    def action_history(self, direction: int) -> None:
        row, _ = self.cursor_location
        last_row = self.document.line_count - 1
        if direction < 0 and row > 0:  # inside a multi-line draft: move, not recall
            self.action_cursor_up()
            return
        if direction > 0 and row < last_row:
            self.action_cursor_down()
            return
        if not self.past:
            return
        if self._history_index is None:
            if direction > 0:
                return
            self._draft = self.text
            index = len(self.past) - 1
        else:
            index = self._history_index + direction
        if index >= len(self.past):
            self._history_index = None
            self.value = self._draft
        else:
            self._history_index = max(0, index)
            self.value = self.past[self._history_index]

    # -- completion ------------------------------------------------------------------------

    def _at_word(self) -> tuple[str, str] | None:
        """(text before the ``@word`` at the cursor, the word after ``@``) when the cursor
        ends an ``@path`` word; None otherwise."""
        row, column = self.cursor_location
        line = self.document[row][:column]
        head, at, word = line.rpartition("@")
        if not at or " " in word or (head and not head[-1].isspace()):
            return None
        return head, word

    def completions(self, value: str) -> list[str]:
        """Every completion of ``value``: command words, then theme or model names."""
        return matches(value, self.words, self.choices)

    def action_complete(self) -> None:
        """Tab completes and never moves focus; tab again cycles through the matches."""
        if self._complete_path():
            return
        if self._completing is not None and self.text == self._completing[1]:
            stem = self._completing[0]
        else:
            stem = self.text
        found = self.completions(stem)
        if not found:
            self._completing = None
            return
        index = (found.index(self.text) + 1) % len(found) if self.text in found else 0
        self.value = found[index]
        self._completing = (stem, self.text)

    def _complete_path(self) -> bool:
        """``@pa`` + tab -> ``@path/`` from the workspace; tab again cycles through the
        matches, or goes into the folder when it was the only one."""
        if self.files is None:
            return False
        at = self._at_word()
        if at is None:
            return False
        _, word = at
        if self._completing is not None and self._completing[1] == "@" + word:
            stem = self._completing[0]
        else:
            stem = word
        found = list(self.files(stem))
        if found == [word] and word.endswith("/"):
            # the one match is the folder the last tab completed: cycling would stay on it,
            # so tab again goes into it, as when ``@folder/`` was typed
            stem = word
            found = list(self.files(stem))
        if not found:
            self._completing = None
            return True  # an @word with nothing to complete: tab still does nothing else
        current = word if word in found else None
        pick = found[(found.index(current) + 1) % len(found)] if current else found[0]
        row, column = self.cursor_location
        self.replace(pick, (row, column - len(word)), (row, column))
        self._completing = (stem, "@" + pick)
        return True
