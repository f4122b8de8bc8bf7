"""Notices and server state on the real engine: the no-server notice can be shown,
replaced and removed any number of times, the Conversation panel stays, and the status
line follows the server both ways (a run that succeeds, a check that passes)."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from soothe.app.boot import NO_SERVER_NOTICE
from soothe.app.main import SootheApp
from soothe.widgets.notice import Notice
from soothe.widgets.step_stream import StepStream
from tests.app.real_harness import Rig, classify, ready, send, settle


def _notices(app: SootheApp) -> list[Notice]:
    return [n for n in app.main.query(Notice) if not n.leaving]


def _conversation_intact(app: SootheApp) -> None:
    stream = app.main.query_one("#center").query_one(StepStream)
    assert stream.display and stream.border_title == "Conversation"
    assert not [n for n in app._notifications if n.title == "Display error"]


async def _fail_a_request(app: SootheApp, pilot: Pilot[Any], text: str) -> None:
    await send(app, pilot, text)
    await settle(app, pilot)
    assert app.main.status.info.provider == "unreachable"
    assert [n.border_title for n in _notices(app)] == ["No model server"]
    _conversation_intact(app)


async def test_no_server_notice_shown_replaced_removed_again_and_again(rig: Rig) -> None:
    rig.server.stop()
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.main.status.info.provider == "unreachable"
        assert [n.border_title for n in _notices(app)] == ["No model server"]
        # the first request with no server used to raise DuplicateIds('no-server')
        await _fail_a_request(app, pilot, "hello?")
        await _fail_a_request(app, pilot, "hello again?")
        await pilot.click("#notice-dismiss")
        await settle(app, pilot)
        assert _notices(app) == []
        await _fail_a_request(app, pilot, "and now?")
        # shown and removed in the same frame, then shown again: still one, no error
        app.main.remove_notice(NO_SERVER_NOTICE)
        app.server_lost("refused")
        app.main.remove_notice(NO_SERVER_NOTICE)
        app.server_lost("refused twice")
        await settle(app, pilot)
        assert len(_notices(app)) == 1 and "refused twice" in _notices(app)[0].body
        _conversation_intact(app)


async def test_the_status_line_comes_back_when_a_run_succeeds(rig: Rig) -> None:
    rig.server.stop()
    rig.brain.add("Classification", classify("quiz", "Back: 4."))
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.main.status.info.provider == "unreachable"
        rig.server.start()
        await send(app, pilot, "What is 2+2?")
        await settle(app, pilot)
        assert app.handler.answers[""] == "Back: 4."
        assert app.main.status.info.provider == "reachable"
        assert _notices(app) == []
        _conversation_intact(app)


async def test_the_status_line_follows_a_server_check_both_ways(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.main.status.info.provider == "reachable"
        rig.server.stop()
        await _fail_a_request(app, pilot, "anyone?")
        rig.server.start()
        await app.recheck_server()
        await settle(app, pilot)
        assert app.main.status.info.provider == "reachable"
        assert _notices(app) == []
        assert any(n.message == "The model server answers again." for n in app._notifications)


async def test_a_server_that_goes_away_while_idle_is_shown_by_the_next_check(rig: Rig) -> None:
    """No run needed: the idle check finds it gone, as it finds it back."""
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.main.status.info.provider == "reachable"
        rig.server.stop()
        app._recheck_in_worker()  # what the 15 s interval calls
        await app.workers.wait_for_complete()
        await settle(app, pilot)
        assert app.main.status.info.provider == "unreachable"
        assert [n.border_title for n in _notices(app)] == ["No model server"]
        rig.server.start()
        app._recheck_in_worker()
        await app.workers.wait_for_complete()
        await settle(app, pilot)
        assert app.main.status.info.provider == "reachable"
        assert _notices(app) == []
        _conversation_intact(app)
