"""Repros from an hour of real use: each test fails without its fix."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from soothe.app.main import SootheApp
from soothe.app.screens.dialogs import ConfirmDialog
from soothe.app.session_api import GoalView
from soothe.engine import events as ev
from soothe.widgets.goal_tree import NodeRef
from tests.app.conftest import settle, submit
from tests.app.fake_session import FakeSession, Gate
from tests.app.scripts import agentic_script


def _shows_the_end(app: SootheApp) -> bool:
    stream = app.main.stream
    last = stream.children[-1]
    return stream.scroll_y == stream.max_scroll_y and stream.region.contains_region(last.region)


async def _tab_to_prompt(app: SootheApp, pilot: Pilot[Any]) -> None:
    for _ in range(20):
        if app.focused is app.prompt:
            return
        await pilot.press("tab")
    raise AssertionError("tab never reached the prompt")


async def test_conversation_keeps_following_after_looking_at_a_goal(
    make_app, session: FakeSession
) -> None:
    session.script = lambda text, auto: agentic_script()
    app = make_app()
    async with app.run_test(size=(80, 20)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "Summarise this project")
        await settle(app, pilot)
        await submit(app, pilot, "/goal Alpha goal one")
        await settle(app, pilot)
        await pilot.press("ctrl+g", "down")
        await settle(app, pilot)
        await pilot.press("up")
        await settle(app, pilot)
        assert app.main.goal_tree.selected_ref == NodeRef("conversation")
        # tab passes through the tool-call blocks in the stream, which scrolls it up
        await _tab_to_prompt(app, pilot)
        stream = app.main.stream
        # output from the engine is followed although tab scrolled the view up
        session.publish(ev.GoalCreated(goal_id="G9", description="Gamma from the engine"))
        await settle(app, pilot)
        assert "Gamma" in str(stream.children[-1].render())
        assert _shows_the_end(app)
        app.prompt.value = "/goal Beta goal two"
        await pilot.press("enter")
        await settle(app, pilot)
        assert any("Beta goal two" in str(c.render()) for c in stream.children[-2:])
        assert _shows_the_end(app)


async def test_stream_stays_put_when_the_user_scrolls_up(make_app, session: FakeSession) -> None:
    session.script = lambda text, auto: agentic_script()
    app = make_app()
    async with app.run_test(size=(80, 20)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "Summarise this project")
        await settle(app, pilot)
        stream = app.main.stream
        stream.focus()
        await pilot.press("pageup")
        await settle(app, pilot)
        where = stream.scroll_y
        assert where < stream.max_scroll_y
        session.publish(ev.GoalCreated(goal_id="G9", description="Gamma from the engine"))
        await settle(app, pilot)
        assert stream.scroll_y == where  # reading: not yanked to the end
        await submit(app, pilot, "/goal Delta")  # sending something jumps back to the end
        await settle(app, pilot)
        assert _shows_the_end(app)


async def test_tab_in_the_prompt_only_completes_and_cycles(make_app, session: FakeSession) -> None:
    session.seed_goal(GoalView(id="G1", description="Explain the code"))
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        app.prompt.focus()
        await pilot.press(*"/ex", "tab", "tab", *" just fix it")
        assert app.focused is app.prompt
        assert app.prompt.value == "/export  just fix it"
        assert session.calls.count(("toggle_suspend", ("G1",))) == 0
        app.prompt.value = ""
        await pilot.press("tab")  # nothing to complete: nothing happens
        assert app.focused is app.prompt and app.prompt.value == ""
        await pilot.press(*"/th", "tab")
        assert app.prompt.value == "/theme "
        await pilot.press("tab")
        assert app.prompt.value == "/threads "
        await pilot.press("tab")
        assert app.prompt.value == "/theme "
        await pilot.press("backspace", "space", *"soothe-", "tab")
        assert app.prompt.value.startswith("/theme soothe-")
        first = app.prompt.value
        await pilot.press("tab")
        assert app.prompt.value != first and app.prompt.value.startswith("/theme soothe-")
        assert app.focused is app.prompt


async def test_cancel_asks_first(make_app, session: FakeSession) -> None:
    session.seed_goal(GoalView(id="G1", description="Explain the code"))
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+g", "down", "x")
        assert isinstance(app.screen, ConfirmDialog)
        assert "G1" in app.screen.question
        await pilot.press("n")
        await settle(app, pilot)
        assert ("cancel_goal", ("G1",)) not in session.calls
        await pilot.press("x", "y")
        await settle(app, pilot)
        assert ("cancel_goal", ("G1",)) in session.calls
        assert app.main.goal_tree.goal("G1").status == "cancelled"  # type: ignore[union-attr]
        await pilot.press("x")  # already cancelled: no question, a note why
        await pilot.pause()
        assert app.screen is app.main
        assert any("already cancelled" in n.message for n in app._notifications)


async def test_the_draft_survives_a_trip_to_the_evidence_panel(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        app.prompt.focus()
        await pilot.press(*"half a thought")
        await pilot.press("ctrl+e")
        assert app.main.evidence.has_focus
        await pilot.press("ctrl+e")
        assert app.focused is app.prompt
        assert app.prompt.selection.is_empty
        await pilot.press(*" more")
        assert app.prompt.value == "half a thought more"


async def test_keys_that_go_back_to_the_prompt(make_app, session: FakeSession) -> None:
    from soothe.app.screens.help import HelpScreen, help_content
    from soothe.app.screens.threads import ThreadsScreen

    session.seed_goal(GoalView(id="G1", description="Explain the code"))
    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+g")
        assert app.focused is app.main.goal_tree
        await pilot.press("escape")
        assert app.focused is app.prompt
        await pilot.press("ctrl+e")
        assert app.main.evidence.has_focus
        await pilot.press("escape")
        assert app.focused is app.prompt

        def footer() -> set[str]:
            return {
                key
                for key, active in app.screen.active_bindings.items()
                if active.binding.show and active.enabled
            }

        assert "ctrl+l" not in footer()  # already typing: no need to offer it
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert "ctrl+l" in footer()
        await pilot.press("ctrl+l")
        assert app.focused is app.prompt
        assert "ctrl+l" in help_content({}).plain and "Prompt" in help_content({}).plain
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        # threads -> n (new thread): back on the main screen, typing
        await pilot.press("ctrl+g", "ctrl+t")
        await settle(app, pilot)
        assert isinstance(app.screen, ThreadsScreen)
        await pilot.press("n")
        await settle(app, pilot)
        assert app.screen is app.main
        assert app.focused is app.prompt


async def test_escape_in_the_tree_interrupts_a_run_first(make_app, session: FakeSession) -> None:
    gate = Gate()
    session.script = lambda text, auto: [gate]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "long job")
        await gate.reached.wait()
        await pilot.press("ctrl+g", "escape")
        await settle(app, pilot)
        assert session.interrupted
        assert app.focused is app.main.goal_tree


async def test_a_server_that_dies_mid_session_gets_the_no_server_notice(
    make_app, session: FakeSession
) -> None:
    from soothe.widgets.notice import Notice

    error = "cannot reach the model server at http://127.0.0.1:11434 (connection refused)"
    session.script = lambda text, auto: [ev.RunFailed(error=error, kind="unreachable")]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert app.main.status.info.provider == "reachable"
        assert not list(app.main.query(Notice))
        await submit(app, pilot, "hello?")
        await settle(app, pilot)
        assert app.main.status.info.provider == "unreachable"
        notice = app.main.query_one(Notice)
        assert notice.border_title == "No model server"
        assert "connection refused" in notice.body
        await pilot.click("#notice-demo")
        await settle(app, pilot)
        assert ("use_demo", ()) in session.calls
        assert app.main.status.info.provider == "demo"
        assert not list(app.main.query(Notice))


async def test_other_run_failures_do_not_claim_the_server_is_gone(
    make_app, session: FakeSession
) -> None:
    from soothe.widgets.notice import Notice

    session.script = lambda text, auto: [ev.RunFailed(error="plan broke", kind="bad_output")]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "hello?")
        await settle(app, pilot)
        assert app.main.status.info.provider == "reachable"
        assert not list(app.main.query(Notice))
        assert any(n.title == "Run failed" for n in app._notifications)


def test_the_real_session_tracks_a_lost_server(settings) -> None:  # type: ignore[no-untyped-def]
    from soothe.engine.session import Session

    session = Session(settings)
    session.provider_status = "reachable"
    session.bus.publish(ev.RunFailed(error="connection refused", kind="unreachable"))
    assert (session.provider_status, session.server_error) == ("unreachable", "connection refused")
    session.bus.publish(ev.RunFinished(duration_s=1.0))
    assert session.provider_status == "reachable"


async def test_model_after_demo_goes_back_to_the_server(make_app, session: FakeSession) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "/demo")
        await settle(app, pilot)
        assert app.main.status.info.provider == "demo"
        await submit(app, pilot, "/model fake-large")
        await settle(app, pilot)
        assert ("set_model", ("fake-large",)) in session.calls
        assert app.main.status.info.provider == "reachable"
        assert app.main.status.info.model == "fake-large"
        assert not any(n.severity == "warning" for n in app._notifications)
        await submit(app, pilot, "/model llama3.2")  # not on the server: switched, with a warning
        await settle(app, pilot)
        warned = [n for n in app._notifications if n.severity == "warning"]
        assert warned and "llama3.2 is not on the server" in warned[-1].message
        assert "fake-model, fake-large" in warned[-1].message
        app.clear_notifications()
        await submit(app, pilot, "/model")  # no name: list them
        await settle(app, pilot)
        listed = [n for n in app._notifications if n.title == "Models"]
        assert listed and "fake-model" in listed[-1].message and "fake-large" in listed[-1].message


async def test_the_real_session_remembers_the_provider_behind_demo(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from soothe.engine.session import Session

    session = Session(settings)
    assert settings.model.provider == "ollama"
    checked: list[str] = []

    async def check() -> str:
        checked.append(session.settings.model.provider)
        session.provider_status = "reachable"
        return "reachable"

    monkeypatch.setattr(session, "refresh_provider_status", check)
    from soothe.engine.loop import demo_brain

    # install() registers the demo handlers process-wide; other tests expect the plain demo
    monkeypatch.setattr(demo_brain, "install", lambda: None)
    session.use_demo()
    assert (settings.model.provider, session.provider_status) == ("demo", "demo")
    await session.set_model("llama3.2")
    assert (settings.model.provider, settings.model.name) == ("ollama", "llama3.2")
    assert checked == ["ollama"] and session.provider_status == "reachable"
    assert session.model_label == "llama3.2"


def _footer(app: SootheApp) -> dict[str, str]:
    return {
        active.binding.description: key
        for key, active in app.screen.active_bindings.items()
        if active.binding.show and active.enabled
    }


async def test_s_reads_resume_on_a_suspended_goal(make_app, session: FakeSession) -> None:
    session.seed_goal(GoalView(id="G1", description="Paused job", status="suspended"))
    session.seed_goal(GoalView(id="G2", description="Waiting job"))
    app = make_app()
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+g", "down")
        await pilot.pause()
        assert _footer(app).get("Resume") == "s" and "Suspend" not in _footer(app)
        await pilot.press("down")
        await pilot.pause()
        assert _footer(app).get("Suspend") == "s" and "Resume" not in _footer(app)
        await pilot.press("up", "s")  # resume G1: the footer follows the new status
        await settle(app, pilot)
        assert ("toggle_suspend", ("G1",)) in session.calls
        assert app.main.goal_tree.goal("G1").status == "pending"  # type: ignore[union-attr]
        assert "Suspend" in _footer(app) and "Resume" not in _footer(app)


async def test_the_dependency_picker_leaves_out_cycles(make_app, session: FakeSession) -> None:
    from soothe.app.screens.goals import DependencyDialog
    from soothe.engine.context.errors import CycleError

    session.seed_goal(GoalView(id="G1", description="First"))
    session.seed_goal(GoalView(id="G2", description="Second", depends_on=["G1"]))
    session.seed_goal(GoalView(id="G3", description="Third", depends_on=["G2"]))
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+g", "down", "d")  # G1: G2 and G3 wait for it
        await pilot.pause()
        assert not isinstance(app.screen, DependencyDialog)
        assert any("without a cycle" in n.message for n in app._notifications)
        await pilot.press("down", "d")  # G2 may wait for nothing but... G1 is taken, G3 cycles
        await pilot.pause()
        assert not isinstance(app.screen, DependencyDialog)

        async def refuse(goal_id: str, depends_on: str) -> None:
            raise CycleError(f"{goal_id} depends_on {depends_on}", [goal_id, depends_on, goal_id])

        session.add_dependency = refuse  # type: ignore[method-assign]
        app.call_session(lambda s: s.add_dependency("G3", "G2"), what="add the dependency")
        await settle(app, pilot)
        messages = [n.message for n in app._notifications]
        assert "G3 depends_on G2 would close the cycle G3 -> G2 -> G3" in messages
        assert not any("CycleError" in m for m in messages)


def _notes(app: SootheApp) -> list[str]:
    return [str(w.render()) for w in app.main.stream.query(".note")]


async def test_one_line_per_queued_goal_and_per_activation(make_app, session: FakeSession) -> None:
    session.goal_script = [
        ev.GoalStatusChanged(goal_id="G1", from_status="pending", to_status="active"),
        ev.GoalStatusChanged(goal_id="G1", from_status="active", to_status="completed"),
    ]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "/goal Alpha goal one")
        await settle(app, pilot)
        about_g1 = [n for n in _notes(app) if "G1" in n]
        assert about_g1 == ["◇ G1 new goal: Alpha goal one — ctrl+r runs ready goals"]
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        assert [n for n in _notes(app) if n.endswith("G1 active")] == ["G1 active"]


async def test_the_palette_lists_help_once(make_app) -> None:
    from textual.command import CommandPalette

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"help")
        await app.workers.wait_for_complete()
        await pilot.pause(0.3)
        from textual.command import CommandList

        options = app.screen.query_one(CommandList)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert sum(1 for p in prompts if p.splitlines()[0].strip() == "Help") == 1, prompts


async def test_a_denied_tool_says_denied_not_the_model_text(make_app, session: FakeSession) -> None:
    from soothe.engine.interact import ApprovalRequest, ApprovalResponse
    from tests.app.fake_session import Ask

    asked = Ask(ApprovalRequest(tool="write_file", args={"path": "x"}, goal_id="G1", step_id="S1"))
    model_text = "the user denied write_file; it was not run. Do not repeat the same call."
    session.script = lambda text, auto: [
        ev.ToolCalled(goal_id="G1", step_id="S1", call_id="c1", tool="write_file"),
        asked,
        ev.ApprovalAnswered(
            goal_id="G1", step_id="S1", request_id="r", tool="write_file", outcome="deny"
        ),
        ev.ToolResult(
            goal_id="G1", step_id="S1", call_id="c1", tool="write_file", ok=False, output=model_text
        ),
        ev.RunFinished(duration_s=0.1),
    ]
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "write it")
        for _ in range(50):
            if session.asked and not isinstance(app.screen, type(app.main)):
                break
            await pilot.pause(0.02)
        await pilot.press("d")
        await settle(app, pilot)
        assert isinstance(asked.response, ApprovalResponse) and asked.response.outcome == "deny"
        messages = [n.message for n in app._notifications]
        assert "write_file denied" in messages
        assert not any("Do not repeat" in m for m in messages)


async def test_a_busy_data_dir_shows_just_its_message(make_app, session: FakeSession) -> None:
    from soothe.engine.datalock import DataDirBusy
    from soothe.widgets.notice import Notice

    session.start_error = DataDirBusy("/tmp/x is in use by soothe (pid 42); close it first")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        notice = app.main.query_one(Notice)
        assert "in use by soothe (pid 42)" in notice.body
        assert "pip install" not in notice.body and "DataDirBusy" not in notice.body
