"""PromptInput: one-line request input with history and slash-command completion.

The widget knows no commands of its own: the app hands it the command words and a source
of argument completions (``commands=``, ``choices=``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.suggester import Suggester
from textual.widgets import Input

Choices = Callable[[str], Iterable[str]]
"""The argument completions for a command word (``/theme`` -> theme names)."""


def matches(value: str, words: Sequence[str], choices: Choices) -> list[str]:
    """Every completion of ``value``: command words, then the command's argument choices."""
    if not value.startswith("/"):
        return []
    if " " not in value:
        return [
            word if word.endswith(":") else word + " "
            for word in words
            if word.startswith(value) and word != value
        ]
    command, _, arg = value.partition(" ")
    return [f"{command} {c}" for c in choices(command) if c.startswith(arg) and c != arg]


class SlashSuggester(Suggester):
    """Suggests the first completion: command words, then theme and model names."""

    def __init__(self, words: Sequence[str], choices: Choices) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.words = list(words)
        self.choices = choices

    async def get_suggestion(self, value: str) -> str | None:
        found = matches(value, self.words, self.choices)
        return found[0] if found else None


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
        Binding("enter", "submit", "Send", show=False, id="prompt.submit"),
        Binding("up", "history(-1)", "Previous", show=False, id="prompt.history_previous"),
        Binding("down", "history(1)", "Next", show=False, id="prompt.history_next"),
        Binding("tab", "complete", "Complete", show=False, id="prompt.complete"),
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
        commands: Sequence[str] = (),
        choices: Choices = lambda command: (),
        history_limit: int = 200,
        id: str | None = None,
    ) -> None:
        super().__init__(
            placeholder="Ask, or /goal TEXT · /help  (enter sends)",
            suggester=SlashSuggester(commands, choices),
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
        """Every completion of ``value``: command words, then theme or model names."""
        if not isinstance(self.suggester, SlashSuggester):
            return []
        return matches(value, self.suggester.words, self.suggester.choices)

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
