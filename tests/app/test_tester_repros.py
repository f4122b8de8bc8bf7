"""Repros from an hour of real use: each test fails without its fix. On the real Session
and the fake Ollama server (tests/app/real_harness.py)."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from soothe.app.main import SootheApp
from soothe.app.screens.dialogs import ConfirmDialog
from soothe.engine import events as ev
from soothe.widgets.goal_tree import NodeRef
from tests.app.real_harness import (
    Pause,
    Rig,
    assess,
    classify,
    plan,
    readme_flow,
    ready,
    settle,
    step,
    until,
    wait_event,
)
from tests.app.real_harness import send as submit
from tests.fakes import FakeHTTPError, FakeReply


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


async def test_conversation_keeps_following_after_looking_at_a_goal(rig: Rig) -> None:
    readme_flow(rig.brain)
    app = rig.app()
    async with app.run_test(size=(80, 20)) as pilot:
        await ready(app, pilot)
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
        await app.session.add_goal("Gamma from the engine")  # the engine publishes it
        await settle(app, pilot)
        assert "Gamma" in str(stream.children[-1].render())
        assert _shows_the_end(app)
        app.prompt.value = "/goal Beta goal two"
        await pilot.press("enter")
        await settle(app, pilot)
        assert any("Beta goal two" in str(c.render()) for c in stream.children[-2:])
        assert _shows_the_end(app)


async def test_stream_stays_put_when_the_user_scrolls_up(rig: Rig) -> None:
    readme_flow(rig.brain)
    app = rig.app()
    async with app.run_test(size=(80, 20)) as pilot:
        await ready(app, pilot)
        await submit(app, pilot, "Summarise this project")
        await settle(app, pilot)
        stream = app.main.stream
        stream.focus()
        await pilot.press("pageup")
        await settle(app, pilot)
        where = stream.scroll_y
        assert where < stream.max_scroll_y
        await app.session.add_goal("Gamma from the engine")  # the engine publishes it
        await settle(app, pilot)
        assert stream.scroll_y == where  # reading: not yanked to the end
        await submit(app, pilot, "/goal Delta")  # sending something jumps back to the end
        await settle(app, pilot)
        assert _shows_the_end(app)


async def test_tab_in_the_prompt_only_completes_and_cycles(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await app.session.add_goal("Explain the code")
        await settle(app, pilot)
        app.prompt.focus()
        await pilot.press(*"/ex", "tab", "tab", *" just fix it")
        assert app.focused is app.prompt
        assert app.prompt.value == "/export  just fix it"
        assert app.session.context.get_goal("G1").status == "pending"  # tab did not suspend
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


async def test_cancel_asks_first(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await app.session.add_goal("Explain the code")
        await settle(app, pilot)
        await pilot.press("ctrl+g", "down", "x")
        assert isinstance(app.screen, ConfirmDialog)
        assert "G1" in app.screen.question
        await pilot.press("n")
        await settle(app, pilot)
        assert app.session.context.get_goal("G1").status == "pending"
        await pilot.press("x", "y")
        await settle(app, pilot)
        assert app.session.context.get_goal("G1").status == "cancelled"
        assert app.main.goal_tree.goal("G1").status == "cancelled"  # type: ignore[union-attr]
        await pilot.press("x")  # already cancelled: no question, a note why
        await pilot.pause()
        assert app.screen is app.main
        assert any("already cancelled" in n.message for n in app._notifications)


async def test_the_draft_survives_a_trip_to_the_evidence_panel(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        app.prompt.focus()
        await pilot.press(*"half a thought")
        await pilot.press("ctrl+e")
        assert app.main.evidence.has_focus
        await pilot.press("ctrl+e")
        assert app.focused is app.prompt
        assert app.prompt.selection.is_empty
        await pilot.press(*" more")
        assert app.prompt.value == "half a thought more"


async def test_keys_that_go_back_to_the_prompt(rig: Rig) -> None:
    from soothe.app.screens.help import HelpScreen, help_content
    from soothe.app.screens.threads import ThreadsScreen

    app = rig.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        await app.session.add_goal("Explain the code")
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


async def test_escape_in_the_tree_interrupts_a_run_first(rig: Rig) -> None:
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Write a long text")))
    held = Pause(text="A long text " * 20, after=2)
    rig.brain.step("S-01", held)
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await submit(app, pilot, "long job")
        await wait_event(held.reached, pilot)
        await pilot.press("ctrl+g", "escape")
        held.release.set()
        await settle(app, pilot)
        assert app.session.context.get_goal("G1").status == "suspended"  # interrupted
        assert app.check_action("interrupt", ()) is False
        assert app.focused is app.main.goal_tree


async def test_a_server_that_dies_mid_session_gets_the_no_server_notice(rig: Rig) -> None:
    from soothe.widgets.notice import Notice

    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        assert app.main.status.info.provider == "reachable"
        assert not list(app.main.query(Notice))
        rig.server.stop()  # the server goes away while the app is open
        await submit(app, pilot, "hello?")
        await settle(app, pilot)
        assert app.main.status.info.provider == "unreachable"
        notice = app.main.query_one(Notice)
        assert notice.border_title == "No model server"
        assert rig.server.url in notice.body
        await pilot.click("#notice-demo")
        await settle(app, pilot)
        assert app.session.provider_status == "demo"
        assert app.main.status.info.provider == "demo"
        assert not list(app.main.query(Notice))


async def test_other_run_failures_do_not_claim_the_server_is_gone(rig: Rig) -> None:
    from soothe.widgets.notice import Notice

    # the server answers, with an error: the run fails, the server is not gone
    rig.brain.always["Classification"] = FakeHTTPError(500, "plan broke")
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
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


async def test_model_after_demo_goes_back_to_the_server(rig: Rig) -> None:
    rig.server.add_model("qwen2.5:7b")
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await submit(app, pilot, "/demo")
        await settle(app, pilot)
        assert app.main.status.info.provider == "demo"
        await submit(app, pilot, "/model qwen2.5:7b")
        await settle(app, pilot)
        assert app.session.settings.model.name == "qwen2.5:7b"
        assert app.main.status.info.provider == "reachable"
        assert app.main.status.info.model == "qwen2.5:7b"
        assert not any(n.severity == "warning" for n in app._notifications)
        await submit(app, pilot, "/model mistral")  # not on the server: switched, with a warning
        await settle(app, pilot)
        warned = [n for n in app._notifications if n.severity == "warning"]
        assert warned and "mistral is not on the server" in warned[-1].message
        assert "llama3.2:latest, qwen2.5:7b" in warned[-1].message
        app.clear_notifications()
        await submit(app, pilot, "/model")  # no name: list them
        await settle(app, pilot)
        listed = [n for n in app._notifications if n.title == "Models"]
        assert listed and "llama3.2" in listed[-1].message and "qwen2.5:7b" in listed[-1].message


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


async def test_s_reads_resume_on_a_suspended_goal(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(140, 30)) as pilot:
        await ready(app, pilot)
        paused = await app.session.add_goal("Paused job")
        await app.session.add_goal("Waiting job")
        await app.session.toggle_suspend(paused)
        await settle(app, pilot)
        await pilot.press("ctrl+g", "down")
        await pilot.pause()
        assert _footer(app).get("Resume") == "s" and "Suspend" not in _footer(app)
        await pilot.press("down")
        await pilot.pause()
        assert _footer(app).get("Suspend") == "s" and "Resume" not in _footer(app)
        await pilot.press("up", "s")  # resume G1: the footer follows the new status
        await settle(app, pilot)
        assert app.session.context.get_goal("G1").status == "pending"
        assert app.main.goal_tree.goal("G1").status == "pending"  # type: ignore[union-attr]
        assert "Suspend" in _footer(app) and "Resume" not in _footer(app)


async def test_the_dependency_picker_leaves_out_cycles(rig: Rig) -> None:
    from soothe.app.screens.goals import DependencyDialog

    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        for description in ("First", "Second", "Third"):
            await app.session.add_goal(description)
        await app.session.add_dependency("G2", "G1")
        await app.session.add_dependency("G3", "G2")
        await settle(app, pilot)
        await pilot.press("ctrl+g", "down", "d")  # G1: G2 and G3 wait for it
        await pilot.pause()
        assert not isinstance(app.screen, DependencyDialog)
        assert any("without a cycle" in n.message for n in app._notifications)
        await pilot.press("down", "d")  # G2 may wait for nothing but... G1 is taken, G3 cycles
        await pilot.pause()
        assert not isinstance(app.screen, DependencyDialog)
        # a cycle asked for anyway (the palette, a stale picker): the engine's CycleError
        app.call_session(lambda s: s.add_dependency("G1", "G3"), what="add the dependency")
        await settle(app, pilot)
        messages = [n.message for n in app._notifications]
        assert any("would close the cycle G1 -> G3 -> G2 -> G1" in m for m in messages)
        assert not any("CycleError" in m for m in messages)


def _notes(app: SootheApp) -> list[str]:
    return [str(w.render()) for w in app.main.stream.query(".note")]


async def test_one_line_per_queued_goal_and_per_activation(rig: Rig) -> None:
    rig.brain.add("PlanGeneration", plan(step("S-01", "Do alpha")))
    rig.brain.step("S-01", "Alpha done.")
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", "Alpha done.")
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await submit(app, pilot, "/goal Alpha goal one")
        await settle(app, pilot)
        about_g1 = [n for n in _notes(app) if "G1" in n]
        assert about_g1 == ["◇ G1 new goal: Alpha goal one — ctrl+r runs ready goals"]
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        assert [n for n in _notes(app) if n.endswith("G1 active")] == ["G1 active"]


async def test_the_palette_lists_help_once(rig: Rig) -> None:
    from textual.command import CommandPalette

    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
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


async def test_a_denied_tool_says_denied_not_the_model_text(rig: Rig) -> None:
    from soothe.app.screens.requests import ApprovalModal

    rig.configure(tools={"approval": "ask"})
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Write x")))
    call = FakeReply(tool_calls=[{"name": "write_file", "args": {"path": "x", "content": "1"}}])
    rig.brain.step("S-01", call, "I did not write x.")
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", "x was not written.")
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        answered: list[ev.ApprovalAnswered] = []
        app.session.bus.add_listener(
            lambda e: answered.append(e) if isinstance(e, ev.ApprovalAnswered) else None
        )
        await submit(app, pilot, "write it")
        await until(lambda: isinstance(app.screen, ApprovalModal), pilot, timeout=20)
        await pilot.press("d")
        await settle(app, pilot)
        assert [a.outcome for a in answered] == ["deny"]
        assert not (rig.workspace / "x").exists()
        # the model was told not to repeat the call; the user is told it was denied
        assert any("Do not repeat" in p for p in rig.brain.prompts("step:S-01")[1:])
        messages = [n.message for n in app._notifications]
        assert "write_file denied" in messages
        assert not any("Do not repeat" in m for m in messages)


async def test_a_busy_data_dir_shows_just_its_message(rig: Rig) -> None:
    import os

    from soothe.engine.datalock import DataDirLock
    from soothe.widgets.notice import Notice

    rig.data_dir.mkdir(parents=True, exist_ok=True)
    lock = DataDirLock(rig.data_dir)  # another soothe holds the data dir
    lock.acquire()
    try:
        app = rig.app()
        async with app.run_test(size=(100, 30)) as pilot:
            await ready(app, pilot)
            notice = app.main.query_one(Notice)
            assert f"in use by soothe (pid {os.getpid()})" in notice.body
            assert "pip install" not in notice.body and "DataDirBusy" not in notice.body
    finally:
        lock.release()
