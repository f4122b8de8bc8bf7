"""The footer never shows part of a key ("f" of "f1 Help" at 80 columns) when its keys
change while the screen's layout is held back (a batch open elsewhere in the app, as on
a loaded machine while a run starts): what fits is decided in the layout that places the
keys, not in a callback that may run before it."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding

from soothe.widgets.footer import SteadyFooter
from tests.app.screen_cells import Cells

WHOLE = " esc Interrupt  ^g Goals  ^e Evidence  ^t Threads  f1 Help          ▏^p palette "
"""(help is kept at any width: the key before it is left out for it)"""


class Keys(App[None]):
    """The main screen's footer keys; 'esc Interrupt' shows while a run is in progress."""

    BINDINGS = [
        Binding("escape", "interrupt", "Interrupt"),
        Binding("ctrl+g", "goals", "Goals"),
        Binding("ctrl+e", "evidence", "Evidence"),
        Binding("ctrl+t", "threads", "Threads"),
        Binding("ctrl+o", "active_goal", "Active goal"),
        Binding("f1", "help", "Help"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.running = False

    def compose(self) -> ComposeResult:
        yield SteadyFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.running if action == "interrupt" else True


def footer_row(app: App[None]) -> str:
    return Cells.of_screen(app).text()[-1]


async def test_a_run_starting_while_the_layout_waits_shows_whole_keys_only() -> None:
    app = Keys()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert "f1 Help" in footer_row(app)  # room for it before the run
        with app.batch_update():  # the layout waits; callbacks after a refresh still run
            app.running = True
            app.refresh_bindings()
            for _ in range(10):
                await pilot.pause()
        for _ in range(5):
            await pilot.pause()
        assert footer_row(app) == WHOLE
        footer = app.query_one(SteadyFooter)
        assert [key.display for key in footer.children][-3:] == [False, True, True]  # ^o f1 ^p


async def test_whole_keys_only_however_the_run_start_and_the_layout_interleave() -> None:
    for held in range(8):  # the batch released after 0..7 turns of the loop
        app = Keys()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            with app.batch_update():
                app.running = True
                app.refresh_bindings()
                for _ in range(held):
                    await pilot.pause()
            for _ in range(5):
                await pilot.pause()
            assert footer_row(app) == WHOLE, held
