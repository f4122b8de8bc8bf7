"""PromptInput: one-line request input with history and slash-command completion."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.suggester import Suggester
from textual.widgets import Input

from soothe.app.keymap import PROMPT, bindings

SLASH_COMMANDS: dict[str, str] = {
    "/goal": "add a goal: /goal TEXT",
    "/autonomous": "run a request as an autonomous goal",
    "/run": "run the ready goals",
    "/model": "switch model: /model NAME",
    "/theme": "switch theme: /theme NAME",
    "/threads": "open the threads screen",
    "/new": "start a new thread",
    "/export": "export this thread to Markdown",
    "/demo": "use the demo model (no server needed)",
    "/help": "keys and commands",
    "/skill:": "run a skill: /skill:NAME args",
    "/quit": "quit",
}


class SlashSuggester(Suggester):
    """Completes command names, then theme and model names after /theme and /model."""

    def __init__(self, choices: Callable[[str], Iterable[str]]) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.choices = choices

    async def get_suggestion(self, value: str) -> str | None:
        if not value.startswith("/"):
            return None
        if " " not in value:
            for name in SLASH_COMMANDS:
                if name.startswith(value) and name != value:
                    return name if name.endswith(":") else name + " "
            return None
        command, _, arg = value.partition(" ")
        for choice in self.choices(command):
            if choice.startswith(arg) and choice != arg:
                return f"{command} {choice}"
        return None


def _input_bindings_without(taken: set[str]) -> list[BindingType]:
    """Input's own keys minus the ones the app uses globally (ctrl+e is the evidence panel)."""
    out: list[BindingType] = []
    for binding in Input.BINDINGS:
        assert isinstance(binding, Binding)
        keys = [k.strip() for k in binding.key.split(",") if k.strip() not in taken]
        if keys:
            out.append(dataclasses.replace(binding, key=",".join(keys)))
    return out


class PromptInput(Input, inherit_bindings=False):
    BINDINGS: ClassVar[list[BindingType]] = [
        *_input_bindings_without({"ctrl+e"}),
        *bindings(PROMPT),
    ]

    DEFAULT_CSS = """
    PromptInput {
        border: tall $border-blurred;
        &:focus { border: tall $border; }
    }
    """

    def __init__(
        self,
        *,
        choices: Callable[[str], Iterable[str]] = lambda command: (),
        history_limit: int = 200,
        id: str | None = None,
    ) -> None:
        super().__init__(
            placeholder="Ask, or /goal TEXT · /help  (enter sends)",
            suggester=SlashSuggester(choices),
            select_on_focus=False,  # coming back to a draft must not arm it for replacement
            id=id,
        )
        self.history: list[str] = []
        self.history_limit = history_limit
        self._history_index: int | None = None
        self._draft = ""
        self._completing: tuple[str, str] | None = None
        """(what the user typed, what tab last put in) while tab cycles through matches."""

    def remember(self, text: str) -> None:
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
            del self.history[: -self.history_limit]
        self._history_index = None

    def action_history(self, direction: int) -> None:
        if not self.history:
            return
        if self._history_index is None:
            if direction > 0:
                return
            self._draft = self.value
            index = len(self.history) - 1
        else:
            index = self._history_index + direction
        if index >= len(self.history):
            self._history_index = None
            self.value = self._draft
        else:
            self._history_index = max(0, index)
            self.value = self.history[self._history_index]
        self.cursor_position = len(self.value)

    def completions(self, value: str) -> list[str]:
        """Every completion of ``value``: command names, then theme or model names."""
        if not value.startswith("/"):
            return []
        if " " not in value:
            return [
                name if name.endswith(":") else name + " "
                for name in SLASH_COMMANDS
                if name.startswith(value) and name != value
            ]
        command, _, arg = value.partition(" ")
        choices = (
            self.suggester.choices(command) if isinstance(self.suggester, SlashSuggester) else ()
        )
        return [f"{command} {c}" for c in choices if c.startswith(arg) and c != arg]

    def action_complete(self) -> None:
        """Tab completes and never moves focus; tab again cycles through the matches."""
        if self._completing is not None and self.value == self._completing[1]:
            stem = self._completing[0]
        else:
            stem = self.value
        matches = self.completions(stem)
        if not matches:
            self._completing = None
            return
        index = (matches.index(self.value) + 1) % len(matches) if self.value in matches else 0
        self.value = matches[index]
        self.cursor_position = len(self.value)
        self._completing = (stem, self.value)
