"""The no-server notice is keyboard first (issue 32 item 5) and a long paste folds in the
conversation (item 6), on the real Session against the fake Ollama."""

from __future__ import annotations

from textual import events
from textual.widgets._collapsible import CollapsibleTitle

from soothe.app.boot import NO_SERVER_NOTICE
from soothe.widgets.pasted import PastedRequest
from tests.app.real_harness import Rig, classify, ready, screen_text, send, settle, until

CLOSED_PORT = "http://127.0.0.1:9"  # the discard port: nothing listens there


async def test_the_no_server_notice_names_a_key_that_works_from_the_prompt(rig: Rig) -> None:
    rig.server.stop()
    rig.configure(model={"base_url": CLOSED_PORT})
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.main.has_notice(NO_SERVER_NOTICE)
        notice = app.main.notices[NO_SERVER_NOTICE]
        assert "press ctrl+d or type /demo" in notice.body
        text = screen_text(app)
        assert "press ctrl+d" in text and "or type /demo." in text
        assert "Use demo model (ctrl+d)" in text
        # typing in the prompt: the key works there, and the draft stays
        assert app.focused is app.prompt
        await pilot.press(*"draft")
        await pilot.press("ctrl+d")
        await settle(app, pilot)
        session = app.require_session()
        assert session.provider_status == "demo"
        assert not app.main.has_notice(NO_SERVER_NOTICE)
        assert app.prompt.value == "draft" and app.focused is app.prompt
        # without the notice ctrl+d is the prompt's own again (delete right)
        await pilot.press("home", "ctrl+d")
        assert app.prompt.value == "raft"


async def test_slash_demo_works_from_the_prompt_while_the_notice_shows(rig: Rig) -> None:
    rig.server.stop()
    rig.configure(model={"base_url": CLOSED_PORT})
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.main.has_notice(NO_SERVER_NOTICE)
        await send(app, pilot, "/demo")
        await settle(app, pilot)
        assert app.require_session().provider_status == "demo"
        assert not app.main.has_notice(NO_SERVER_NOTICE)


async def test_a_long_paste_folds_in_the_conversation_and_the_model_gets_it_whole(
    rig: Rig,
) -> None:
    rig.brain.add("Classification", classify("quiz", "It is a list of 200 rows."))
    pasted = "\n".join(f"row {i:03d} of the pasted table" for i in range(200))
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        app.prompt.focus()
        app.post_message(events.Paste(pasted))
        await until(lambda: app.prompt.value == pasted, pilot)
        await pilot.press("ctrl+j", *"What is this?", "enter")
        await until(lambda: rig.brain.count("Classification") == 1, pilot)
        await settle(app, pilot)
        # the model got every line, and the question after them
        (prompt,) = rig.brain.user_prompts("Classification")
        assert "row 000 of the pasted table" in prompt and "row 199 of the pasted table" in prompt
        assert "What is this?" in prompt
        # the screen: one folded line, not 201 rows
        (block,) = app.main.stream.query(PastedRequest)
        assert block.collapsed
        text = screen_text(app)
        # folded, it still shows the first line and the question typed after the paste
        assert block.title == "pasted 201 lines · row 000 of the pasted table … What is this?"
        assert "pasted 201 lines · row 000 of the pasted" in text
        assert "row 001" not in text and "It is a list of 200 rows." in text
        # a key opens it: enter on its title
        title = block.query_one(CollapsibleTitle)
        title.focus()
        await pilot.press("enter")
        await settle(app, pilot)
        assert not block.collapsed
        assert "row 150 of the pasted table" in str(block._body.render())


async def test_the_footer_settles_while_the_no_server_notice_shows(rig: Rig) -> None:
    """Two hidden bindings of ctrl+d (the demo model, the prompt's delete-right) took turns
    in the screen's active bindings, so the footer found its keys changed on every check
    and recomposed a row that looked the same, forever. It compares what it draws."""
    from soothe.widgets.footer import SteadyFooter

    rig.server.stop()
    rig.configure(model={"base_url": CLOSED_PORT})
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        assert app.main.has_notice(NO_SERVER_NOTICE)
        footer = app.screen.query_one(SteadyFooter)
        recomposed = 0
        original = footer.recompose

        async def counted() -> None:
            nonlocal recomposed
            recomposed += 1
            await original()

        await settle(app, pilot)
        assert footer._keys() == footer._shown, "the footer shows what it would draw"
        footer.recompose = counted  # type: ignore[method-assign]
        for _ in range(5):  # the bindings checked again, nothing else changed
            app.screen.refresh_bindings()
            await pilot.pause()
        assert recomposed == 0, recomposed
