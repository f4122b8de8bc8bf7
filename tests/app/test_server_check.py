"""The model server's state on the real engine, against the fake Ollama server: a check
whose answer comes after the model settings changed (the demo model, another server)
changes nothing; a run whose model call succeeds shows the server back at once, not when
the run ends; while the server is reachable the idle check runs less often."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from soothe.app.boot import SERVER_RECHECK_REACHABLE_S, SERVER_RECHECK_S
from soothe.app.main import SootheApp
from soothe.engine.config import Settings
from soothe.engine.events import Usage
from soothe.engine.session import Session
from soothe.widgets.notice import Notice
from tests.app.real_harness import (
    Rig,
    assess,
    classify,
    plan,
    ready,
    send,
    settle,
    step,
    until,
    wait_event,
)

BACK = "The model server answers again."


def _notices(app: SootheApp) -> list[str]:
    return [n.border_title or "" for n in app.main.query(Notice) if not n.leaving]


class Gate:
    """``_check_ollama`` held until ``opened``: a server check in flight."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from soothe.engine.llm import server

        self.entered = asyncio.Event()
        self.opened = asyncio.Event()
        original = server._check_ollama

        async def held(client: Any, status: Any) -> None:
            self.entered.set()
            await self.opened.wait()
            await original(client, status)

        monkeypatch.setattr(server, "_check_ollama", held)


async def _idle_check(app: SootheApp, pilot: Pilot[Any]) -> None:
    app._recheck_in_worker()  # what the interval calls
    await app.workers.wait_for_complete()
    await settle(app, pilot)


async def test_a_check_in_flight_does_not_undo_a_switch_to_the_demo_model(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.main.status.info.provider == "reachable"
        rig.server.stop()
        gate = Gate(monkeypatch)
        app._recheck_in_worker()
        await until(gate.entered.is_set, pilot)
        app.use_demo()  # the user switches while the check waits for the server
        gate.opened.set()
        await app.workers.wait_for_complete()
        await settle(app, pilot)
        session = app.require_session()
        assert session.provider_status == "demo"
        assert session.settings.model.provider == "demo"
        assert app.main.status.info.provider == "demo"
        assert _notices(app) == []


async def test_a_check_answered_after_the_server_changed_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not only the demo model: another server (or model) makes the answer stale too."""
    settings = Settings(
        model={"provider": "ollama", "name": "llama3.2", "base_url": "http://127.0.0.1:9"},
        storage={"data_dir": tmp_path / "data"},
    )
    session = Session(settings)
    gate = Gate(monkeypatch)
    check = asyncio.create_task(session.refresh_provider_status())
    await asyncio.wait_for(gate.entered.wait(), 10)
    settings.model.base_url = "http://127.0.0.1:10"
    gate.opened.set()
    assert await asyncio.wait_for(check, 10) is None
    assert (session.provider_status, session.server_error) == ("unknown", "")
    # the same check with nothing changed counts
    assert await asyncio.wait_for(session.refresh_provider_status(), 10) == "unreachable"
    assert session.provider_status == "unreachable"
    # a run that found the server answering while a check was out is newer than it
    gate.entered.clear()
    gate.opened.clear()
    check = asyncio.create_task(session.refresh_provider_status())
    await asyncio.wait_for(gate.entered.wait(), 10)
    session._track_server(Usage(model="m", input_tokens=10, output_tokens=2))
    gate.opened.set()
    assert await asyncio.wait_for(check, 10) is None
    assert session.provider_status == "reachable"


async def test_a_model_call_that_succeeds_shows_the_server_back_during_the_run(
    rig: Rig,
) -> None:
    brain = rig.brain
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01", "Say hello")))
    brain.step("S-01", "Hello.")
    brain.add("StatusAssessment", assess("done", progress="complete"))
    brain.add("complete", "Said hello.")
    planning = brain.hold("PlanGeneration")  # the run waits on its second model call
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        rig.server.stop()  # restarted while idle: a check sees it gone
        await _idle_check(app, pilot)
        assert app.main.status.info.provider == "unreachable"
        assert _notices(app) == ["No model server"]
        # a call that fails is counted too (its Usage, no tokens): not the server back
        session = app.require_session()
        states: list[str] = []
        session.bus.add_listener(lambda _: states.append(session.provider_status))
        await send(app, pilot, "Anyone there?")
        await settle(app, pilot)
        assert states and set(states) == {"unreachable"}
        assert app.main.status.info.provider == "unreachable"
        assert _notices(app) == ["No model server"]
        assert not any(n.message == BACK for n in app._notifications)
        rig.server.start()
        await send(app, pilot, "Say hello")
        await wait_event(brain.seen("PlanGeneration"), pilot)
        # the classification answered: the run has not ended, the screen says so already
        await until(
            lambda: app.main.status.info.provider == "reachable" and not _notices(app),
            pilot,
            timeout=5.0,
        )
        assert app.running
        assert any(n.message == BACK for n in app._notifications)
        planning.set()
        await settle(app, pilot)
        assert not app.running
        assert app.main.status.info.provider == "reachable"
        assert _notices(app) == []


async def test_while_reachable_the_idle_check_runs_less_often(rig: Rig) -> None:
    now = [1000.0]
    app = rig.app(clock=lambda: now[0])
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        session = app.require_session()
        checks: list[float] = []
        refresh = session.refresh_provider_status  # type: ignore[attr-defined]

        async def counted() -> Any:
            checks.append(now[0])
            return await refresh()

        session.refresh_provider_status = counted  # type: ignore[attr-defined]

        async def tick(seconds: float) -> None:
            now[0] += seconds
            app._server_interval()  # what the interval calls, every SERVER_RECHECK_S
            await app.workers.wait_for_complete()
            await settle(app, pilot)

        # start() checked it; reachable: the next check is due a minute after that
        for _ in range(int(SERVER_RECHECK_REACHABLE_S // SERVER_RECHECK_S) - 1):
            await tick(SERVER_RECHECK_S)
        assert checks == []
        await tick(SERVER_RECHECK_S)
        assert checks == [1000.0 + SERVER_RECHECK_REACHABLE_S]
        rig.server.stop()
        await tick(SERVER_RECHECK_REACHABLE_S)
        assert len(checks) == 2 and app.main.status.info.provider == "unreachable"
        await tick(SERVER_RECHECK_S)  # unreachable: every SERVER_RECHECK_S
        rig.server.start()
        await tick(SERVER_RECHECK_S)
        assert len(checks) == 4 and app.main.status.info.provider == "reachable"
        await tick(SERVER_RECHECK_S)
        assert len(checks) == 4


@pytest.mark.parametrize("before", ["unknown", "reachable", "unreachable"])
async def test_a_call_answered_during_a_check_makes_the_check_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str
) -> None:
    """Whatever the status read when the check began: a run's call the server answered
    meanwhile is newer than the check's 'unreachable' (a review: only a check begun
    while unreachable was dropped)."""
    settings = Settings(
        model={"provider": "ollama", "name": "llama3.2", "base_url": "http://127.0.0.1:9"},
        storage={"data_dir": tmp_path / "data"},
    )
    session = Session(settings)
    session.provider_status = before  # type: ignore[assignment]
    gate = Gate(monkeypatch)
    check = asyncio.create_task(session.refresh_provider_status())
    await asyncio.wait_for(gate.entered.wait(), 10)
    session._track_server(Usage(model="m", input_tokens=10, output_tokens=2))
    gate.opened.set()
    assert await asyncio.wait_for(check, 10) is None
    assert session.provider_status == "reachable"  # what the call showed
