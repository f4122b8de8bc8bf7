"""The demo provider drives whole requests with no server: headless and in the TUI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from soothe.cli import main
from soothe.engine.config import load_settings
from soothe.engine.events import parse_event


@pytest.fixture
def demo_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("OLLAMA_HOST", "OPENAI_BASE_URL", "OPENAI_API_KEY", "SOOTHE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    monkeypatch.setenv("SOOTHE_DATA_DIR", str(tmp_path / "data"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Kettle\nA tool that boils water.\n")
    (workspace / "kettle.py").write_text("print('boil')\n")
    monkeypatch.chdir(workspace)
    return workspace


def test_demo_quiz_is_answered_in_one_call(
    demo_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["-p", "What is 6*7?", "--provider", "demo", "--json"])
    out = capsys.readouterr().out
    events = [parse_event(line) for line in out.splitlines()]
    assert code == 0
    assert events[-1].type == "answer.final" and "42" in events[-1].text
    assert [e.type for e in events].count("usage") == 1


def test_demo_task_plans_runs_tools_and_answers(
    demo_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["-p", "Summarise this project", "--provider", "demo", "--json"])
    out = capsys.readouterr().out
    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    (plan,) = [e for e in events if e["type"] == "plan.created"]
    assert [s["id"] for s in plan["steps"]] == ["S-01", "S-02", "S-03"]
    assert plan["steps"][2]["dependencies"] == ["S-01", "S-02"]
    tools = [e["tool"] for e in events if e["type"] == "step.tool_call"]
    assert {"list_dir", "glob", "read_file"} <= set(tools)
    results = [e for e in events if e["type"] == "step.tool_result"]
    assert all(r["ok"] for r in results)
    assert events[-1]["type"] == "answer.final"
    assert "A tool that boils water." in events[-1]["text"]
    completed = [e["step_id"] for e in events if e["type"] == "step.completed"]
    assert sorted(completed) == ["S-01", "S-02", "S-03"]
    # S-03 depends on both others: it starts only after they completed.
    order = [(e["type"], e.get("step_id")) for e in events]
    s3_start = order.index(("step.started", "S-03"))
    assert order.index(("step.completed", "S-01")) < s3_start
    assert order.index(("step.completed", "S-02")) < s3_start


def test_demo_autonomous_run_reports_each_goal(
    demo_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["-p", "Tidy this project", "--provider", "demo", "--autonomous"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("# Report")
    assert "G2" in out and "G3" in out and "[completed]" in out


async def test_demo_task_through_the_tui(demo_env: Path) -> None:
    """The real Session (demo provider) behind the real app: tree, stream, evidence."""
    from textual.widgets import Markdown

    from soothe.app.main import SootheApp
    from soothe.engine.session import Session
    from tests.app.conftest import settle, submit

    settings = load_settings(overrides={"model": {"provider": "demo"}})
    session = Session(settings)
    app = SootheApp(settings, session=session)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "Summarise this project")
        await settle(app, pilot)
        goal = app.main.goal_tree.goal("G1")
        assert goal is not None and goal.status == "completed"
        assert [(s.id, s.status) for s in goal.steps] == [
            ("S-01", "completed"),
            ("S-02", "completed"),
            ("S-03", "completed"),
        ]
        answers = [md.source for md in app.main.stream.query(Markdown)]
        assert len(answers) == 1 and "A tool that boils water." in answers[0]
        assert len(app.main.evidence.entries) >= 4
        messages = await session.context.messages(session.thread_id)
        assert [m.role for m in messages] == ["user", "assistant"]


def test_demo_routes_each_request_of_a_thread_on_its_own(
    demo_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """History goes before the request in the classify prompt; the demo reads the request."""
    assert main(["-p", "Summarise this project", "--provider", "demo", "--json"]) == 0
    thread = json.loads(capsys.readouterr().out.splitlines()[-1])["thread_id"]
    assert main(["-p", "What is 9-4?", "--provider", "demo", "--thread", thread]) == 0
    assert capsys.readouterr().out.strip() == "9-4 = 5"
