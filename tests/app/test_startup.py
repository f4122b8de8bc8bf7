"""Start-up on the real Session (fake Ollama): light imports, no server (the real server
check), the demo model, a busy data dir, engine missing, config themes and keymaps, help."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from soothe.app.main import SootheApp
from soothe.app.screens.help import HelpScreen
from soothe.engine.config import Settings
from soothe.engine.datalock import DataDirLock
from soothe.widgets.goal_tree import GoalTree
from soothe.widgets.notice import Notice
from tests.app.conftest import settle as fake_settle
from tests.app.fake_session import FakeSession
from tests.app.real_harness import MODEL, Rig, readme_flow, ready, send, settle, until

HEAVY = ("langchain", "langgraph", "ollama", "openai", "httpx", "aiosqlite", "markdown_it")


def test_app_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, soothe.app.main, soothe.app.tui\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


FIRST_FRAME = """
import asyncio, sys
from soothe.app.main import SootheApp
from soothe.engine.config_file import FrameConfig

WATCHED = ("pydantic", "pydantic_core", "soothe.engine.events", "soothe.engine.views")

def loaded():
    return ",".join(sorted(m for m in WATCHED if m in sys.modules))

at_first_frame = []

async def main():
    app = SootheApp(FrameConfig.read(), animate=False,
                    on_first_frame=lambda app: at_first_frame.append(loaded()))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(600):
            if app.session_ready or app.engine_failed:
                break
            await pilot.pause(0.05)
        print(app.session_ready, repr(at_first_frame), loaded(), sep="|")

asyncio.run(main())
"""


def test_the_first_frame_is_drawn_before_any_pydantic_model_is_imported(tmp_path: Path) -> None:
    """pydantic (~60 ms) and the engine's event and view models (~20 ms more) load with the
    engine, behind the first frame (``soothe.app.lazy``); once the engine is up they are
    there, which shows the probe sees them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOOTHE_", "XDG_"))}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        SOOTHE_MODEL__PROVIDER="demo",
    )
    out = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0 and out.stdout.strip(), out.stderr
    ready, at_first_frame, after = out.stdout.strip().splitlines()[-1].split("|")
    assert ready == "True", out.stderr
    assert at_first_frame == "['']"
    assert after == "pydantic,pydantic_core,soothe.engine.events,soothe.engine.views"


async def test_no_server_start_says_so_and_offers_demo(rig: Rig) -> None:
    rig.server.stop()
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        assert app.is_running
        assert app.session.provider_status == "unreachable"
        assert app.main.status.info.provider == "unreachable"
        notice = app.main.query_one(Notice)
        assert notice.border_title == "No model server"
        assert "ollama serve" in notice.body and f"ollama pull {MODEL}" in notice.body
        await pilot.click("#notice-demo")
        await settle(app, pilot)
        assert app.session.provider_status == "demo"
        assert not list(app.main.query(Notice))
        assert app.main.status.info.provider == "demo"
        assert app.main.status.info.model == "demo model"
        await send(app, pilot, "hi")
        await settle(app, pilot)
        assert app.handler.answers  # the demo model answered, with no server
        assert all(a.strip() for a in app.handler.answers.values())


async def test_no_server_notice_can_be_dismissed(rig: Rig) -> None:
    rig.server.stop()
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.click("#notice-dismiss")
        await pilot.pause()
        assert not list(app.main.query(Notice))
        assert app.session.provider_status == "unreachable"  # not switched to the demo
        assert app.main.status.info.provider == "unreachable"


async def test_missing_engine_still_opens(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: SootheApp) -> object:  # no engine at all: nothing to run
        raise ModuleNotFoundError("No module named 'soothe.engine.session'")

    monkeypatch.setattr(SootheApp, "_build_session", broken)
    app = SootheApp(settings, animate=False, clock=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await fake_settle(app, pilot)
        notice = app.main.query_one(Notice)
        assert notice.border_title == "Engine unavailable"
        assert "soothe.engine.session" in notice.body
        assert app.main.status.info.provider == "offline"
        await send(app, pilot, "hello")
        await fake_settle(app, pilot)
        assert app.is_running
        assert any("engine is not available" in n.message for n in app._notifications)


async def test_session_start_failure_is_reported(rig: Rig) -> None:
    """Another soothe holds the data dir: the real start() fails with DataDirBusy and the
    notice says just that."""
    lock = DataDirLock(rig.data_dir)
    rig.data_dir.mkdir(parents=True, exist_ok=True)
    lock.acquire()
    try:
        app = rig.app()
        async with app.run_test(size=(100, 30)) as pilot:
            await ready(app, pilot)
            assert app.engine_failed
            notice = app.main.query_one(Notice)
            assert f"in use by soothe (pid {os.getpid()})" in notice.body
            assert "pip install" not in notice.body and "DataDirBusy" not in notice.body
            assert app.is_running
    finally:
        lock.release()


async def test_collector_off_at_start_resumes_once_the_engine_is_up(rig: Rig) -> None:
    """``run_tui`` turns the cyclic collector off before importing the app; the real
    engine start freezes what start-up built and turns it back on, with full collections
    left to the idle check (every 2 s, when no run is going)."""
    import gc

    from soothe.app.boot import FULL_GC_DUE

    thresholds = gc.get_threshold()
    app = rig.app()
    gc.disable()
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await ready(app, pilot)
            assert app.session_ready
            assert gc.isenabled() and gc.get_freeze_count() > 0
            assert gc.get_threshold()[2] > 10_000  # full collections only when idle
            gc.collect(1)  # young collections still run; a full one is due after enough
            while gc.get_count()[2] < FULL_GC_DUE:
                gc.collect(1)
            await until(lambda: gc.get_count()[2] < FULL_GC_DUE, pilot, timeout=10)
    finally:
        gc.unfreeze()  # the test process's objects back to the collector
        gc.set_threshold(*thresholds)
        gc.enable()


async def test_collector_resumes_when_the_engine_cannot_start(rig: Rig) -> None:
    import gc

    thresholds = gc.get_threshold()
    lock = DataDirLock(rig.data_dir)
    rig.data_dir.mkdir(parents=True, exist_ok=True)
    lock.acquire()
    gc.disable()
    try:
        app = rig.app()
        async with app.run_test(size=(100, 30)) as pilot:
            await ready(app, pilot)
            assert app.engine_failed and gc.isenabled()
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        gc.enable()
        lock.release()


# FakeSession: a start() held open until the test says so (the real start has no pause).
async def test_first_frame_comes_before_the_session_starts(make_app, session: FakeSession) -> None:
    from tests.app.fake_session import Gate

    session.start_gate = Gate()
    painted: list[bool] = []
    app = make_app(on_first_frame=lambda a: painted.append(session.started))
    async with app.run_test(size=(100, 30)) as pilot:
        await session.start_gate.reached.wait()
        assert painted == [False]
        assert app.main.status.info.provider == "unknown"
        session.start_gate.open()
        await fake_settle(app, pilot)
        assert session.started and app.main.status.info.provider == "reachable"


async def test_theme_from_config_and_switching(rig: Rig) -> None:
    rig.configure(ui={"theme": "soothe-dusk"})
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        assert app.theme == "soothe-dusk"
        await send(app, pilot, "/theme soothe-high-contrast")
        await pilot.pause()
        assert app.theme == "soothe-high-contrast"
        await send(app, pilot, "/theme nope")
        await pilot.pause()
        assert app.theme == "soothe-high-contrast"
        [said] = [n.message for n in app._notifications if "unknown theme 'nope'" in n.message]
        others = len(app.theme_names()) - 4  # Textual's own themes work too: it says so
        assert said.endswith(f"soothe-dusk or {others} more (tab completes)") and others > 0


async def test_unknown_config_theme_falls_back(rig: Rig) -> None:
    rig.configure(ui={"theme": "missing"})
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        assert app.theme == "soothe-dark"
        assert any("unknown theme 'missing'" in n.message for n in app._notifications)


async def test_user_theme_from_the_config_dir(rig: Rig) -> None:
    themes = rig.tmp_path / "config" / "soothe" / "themes"
    themes.mkdir(parents=True)
    (themes / "paper.toml").write_text(
        'primary = "#335577"\ndark = false\n[variables]\nborder = "#335577"\n'
    )
    (themes / "broken.toml").write_text('primary = "not a colour"\n')
    rig.configure(ui={"theme": "paper"})
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        assert app.theme == "paper"
        assert any("broken.toml" in n.message for n in app._notifications)


async def test_keymap_override_by_binding_id(rig: Rig) -> None:
    rig.configure(ui={"keymap": {"app.focus_goals": "ctrl+o", "no.such.binding": "x"}})
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+g")
        assert not isinstance(app.focused, GoalTree)
        await pilot.press("ctrl+o")
        assert isinstance(app.focused, GoalTree)
        assert any("no.such.binding" in n.message for n in app._notifications)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        assert "ctrl+o" in text and "app.focus_goals" in text and "/autonomous" in text
        await pilot.press("f1")
        assert app.screen is app.main


async def test_evidence_panel_toggles_with_ctrl_e(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        evidence = app.main.evidence
        assert not evidence.display  # narrow screen: hidden by default
        await pilot.press("ctrl+e")
        assert evidence.display and evidence.has_focus
        await pilot.press("ctrl+e")
        assert not evidence.display and app.prompt.has_focus


async def test_evidence_shows_on_wide_screens_and_opens_entries(rig: Rig) -> None:
    from soothe.app.screens.dialogs import EvidenceDialog

    readme_flow(rig.brain)
    app = rig.app()
    async with app.run_test(size=(140, 36)) as pilot:
        await ready(app, pilot)
        assert app.main.evidence.display
        await send(app, pilot, "go")
        await settle(app, pilot)
        await pilot.press("ctrl+e")  # visible but not focused: focus it
        assert app.main.evidence.has_focus
        await pilot.press("down", "enter")
        await until(lambda: isinstance(app.screen, EvidenceDialog), pilot)
        assert isinstance(app.screen, EvidenceDialog)
        assert app.screen.entry.content.startswith("# Soothe")
        await pilot.press("escape")
        assert app.screen is app.main


def test_the_real_session_has_the_contract(settings: Settings) -> None:
    """The engine's Session (constructed only: no imports of LangChain) matches SessionAPI."""
    import inspect

    from soothe.app.session_api import SessionAPI
    from soothe.engine.session import Session

    session = Session(settings, thread_id=None, check_server=True)
    assert isinstance(session, SessionAPI)
    for name, member in inspect.getmembers(SessionAPI):
        if name.startswith("_") or not callable(member):
            continue
        ours = inspect.signature(member)
        theirs = inspect.signature(getattr(Session, name))
        assert list(theirs.parameters)[: len(ours.parameters)] == list(ours.parameters), name
        assert inspect.iscoroutinefunction(member) == inspect.iscoroutinefunction(
            getattr(Session, name)
        ), name
