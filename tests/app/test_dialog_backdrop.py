"""A dialog shows the screen behind it dimmed, and what changes there (the app's CSS had
made every dialog's translucent backdrop opaque: a blank screen behind F1 or quit)."""

from __future__ import annotations

from soothe.app.screens.help import HelpScreen
from tests.app.real_harness import Rig, ready, until
from tests.app.screen_cells import Cells


async def test_the_help_dialog_shows_the_app_behind_it_dimmed_as_it_changes(
    rig: Rig,
) -> None:
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        before = Cells.of_screen(app)
        behind = "\n".join(before.text())
        assert "Conversation" in behind and "^q Quit" in behind
        x = before.text()[0].index("Goals")  # the goal tree's title, top left
        app.action_help()
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        await pilot.pause()
        shown = Cells.of_screen(app)
        text = "\n".join(shown.text())
        assert "keys and commands" in text
        assert "Conversation" in text  # the panel titles behind, dimmed
        assert shown.rows[0][x][0] == "G"  # the title behind is drawn ...
        assert shown.rows[0][x][1] != before.rows[0][x][1]  # ... in the dimmed colours
        app.handler.local_note("a note that came while the dialog was open")
        await pilot.pause()
        await pilot.pause()
        assert "while the dialog" in "\n".join(Cells.of_screen(app).text())  # it follows
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        assert "Conversation" in "\n".join(Cells.of_screen(app).text())
        app.screen.dismiss(None)
        await until(lambda: not isinstance(app.screen, HelpScreen), pilot)
        await pilot.pause()
        assert "^q Quit" in "\n".join(Cells.of_screen(app).text())
