"""Skill summaries read frontmatter; headless progress lines stay one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from soothe.engine.config import load_settings
from soothe.engine.events import StepSuspended, ToolCalled
from soothe.engine.skills import list_skills
from soothe.frontends.headless import progress_line


def test_skill_summary_uses_frontmatter_description_or_first_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root = tmp_path / "ws" / ".soothe" / "skills"
    (root / "tidy").mkdir(parents=True)
    (root / "tidy" / "SKILL.md").write_text('---\nname: tidy\ndescription: "Tidy up"\n---\nBody\n')
    (root / "bare").mkdir()
    (root / "bare" / "SKILL.md").write_text("---\nname: bare\n---\n\n# Bare skill\n")
    settings = load_settings(overrides={"tools": {"workspace": str(tmp_path / "ws")}})
    assert [(s.name, s.summary) for s in list_skills(settings)] == [
        ("bare", "Bare skill"),
        ("tidy", "Tidy up"),
    ]


def test_progress_line_of_a_multiline_argument_is_one_line() -> None:
    event = ToolCalled(
        call_id="c1",
        tool="write_file",
        args={"path": "a.txt", "content": "one\ntwo"},
        step_id="S-01",
    )
    line = progress_line(event)
    assert line is not None and "\n" not in line
    assert "content=one ⏎ two" in line


def test_progress_line_of_a_suspended_step_says_it_is_paused() -> None:
    line = progress_line(StepSuspended(reason="interrupted by the user", step_id="S-01"))
    assert line == "‖ S-01 paused: interrupted by the user (resume continues it)"
