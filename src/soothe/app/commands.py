"""Slash commands typed in the prompt: parsing only; the app carries them out."""

from __future__ import annotations

from dataclasses import dataclass

NEEDS_ARGUMENT = {
    "goal": "/goal TEXT",
    "autonomous": "/autonomous TEXT",
    "theme": "/theme NAME",
}
KNOWN = {
    *NEEDS_ARGUMENT,
    "model",
    "threads",
    "export",
    "help",
    "run",
    "new",
    "demo",
    "quit",
    "skill",
}


@dataclass(frozen=True)
class SlashCommand:
    name: str
    arg: str
    raw: str

    @property
    def known(self) -> bool:
        return self.name in KNOWN

    def problem(self) -> str | None:
        """A one-line reason this command cannot run as typed, or None."""
        if not self.known:
            return f"unknown command /{self.name} — /help lists the commands"
        if self.name in NEEDS_ARGUMENT and not self.arg:
            return f"usage: {NEEDS_ARGUMENT[self.name]}"
        if self.name == "skill" and not self.raw.partition(" ")[0].removeprefix("/skill:"):
            return "usage: /skill:NAME args"
        return None


def parse(text: str) -> SlashCommand | None:
    """``/name arg`` -> SlashCommand; plain text (or ``//text``, sent as ``/text``) -> None."""
    text = text.strip()
    if not text.startswith("/") or text.startswith("//"):
        return None
    head, _, arg = text[1:].partition(" ")
    if head.startswith("skill:"):
        return SlashCommand("skill", arg.strip(), text)
    return SlashCommand(head.lower(), arg.strip(), text)


def unescape(text: str) -> str:
    """``//text`` sends ``/text`` as a plain request."""
    text = text.strip()
    return text[1:] if text.startswith("//") else text
