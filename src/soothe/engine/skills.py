"""Skills: ``/skill:NAME args`` loads ``skills/NAME/SKILL.md`` into the planner context.

Skills are looked up in the workspace's ``.soothe/skills/`` first, then in the user's
config dir (``$XDG_CONFIG_HOME/soothe/skills/``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from soothe.engine.config import Settings, xdg_config_home

_INVOCATION = re.compile(r"^\s*/skill:([A-Za-z0-9][A-Za-z0-9_.-]*)\s*(.*)$", re.DOTALL)
MAX_SKILL_CHARS = 4000


@dataclass(frozen=True)
class Skill:
    name: str
    path: Path
    summary: str

    def text(self) -> str:
        body = self.path.read_text(encoding="utf-8", errors="replace")
        return body if len(body) <= MAX_SKILL_CHARS else body[:MAX_SKILL_CHARS] + "\n…"


class UnknownSkill(LookupError):
    def __init__(self, name: str, known: list[str]) -> None:
        names = ", ".join(known) if known else "none (add .soothe/skills/NAME/SKILL.md)"
        super().__init__(f"unknown skill '{name}'; known skills: {names}")
        self.name = name


def skill_dirs(settings: Settings) -> list[Path]:
    return [
        settings.tools.resolved_workspace() / ".soothe" / "skills",
        xdg_config_home() / "soothe" / "skills",
    ]


def _summary(path: Path) -> str:
    """The frontmatter's ``description:`` if there is one, else the first line of text."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(unreadable)"
    if lines and lines[0].strip() == "---":
        end = next((i for i, ln in enumerate(lines[1:], 1) if ln.strip() == "---"), 0)
        for line in lines[1:end]:
            key, _, value = line.partition(":")
            if key.strip() == "description" and value.strip():
                return value.strip().strip("\"'")[:80]
        lines = lines[end + 1 :]
    for line in lines:
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:80]
    return ""


def list_skills(settings: Settings) -> list[Skill]:
    found: dict[str, Skill] = {}
    for root in skill_dirs(settings):
        if not root.is_dir():
            continue
        for skill_file in sorted(root.glob("*/SKILL.md")):
            name = skill_file.parent.name
            if name not in found:
                found[name] = Skill(name, skill_file, _summary(skill_file))
    return sorted(found.values(), key=lambda s: s.name)


def parse_invocation(text: str) -> tuple[str, str] | None:
    """``/skill:NAME rest`` -> (NAME, rest); anything else -> None."""
    match = _INVOCATION.match(text)
    if not match:
        return None
    return match.group(1), match.group(2).strip()


def load_skill(settings: Settings, name: str) -> Skill:
    skills = list_skills(settings)
    for skill in skills:
        if skill.name == name:
            return skill
    raise UnknownSkill(name, [s.name for s in skills])
