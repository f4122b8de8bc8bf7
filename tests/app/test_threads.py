"""The threads screen and the command palette providers, on the real Session (fake
Ollama): the stored threads are made by real requests at fixed store times."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable, Markdown

from soothe.app.palette import (
    ActionsProvider,
    GoalsProvider,
    ModelsProvider,
    ThemesProvider,
    ThreadsProvider,
)
from soothe.app.screens.dialogs import ConfirmDialog
from soothe.app.screens.threads import ThreadsScreen
from soothe.widgets.goal_tree import NodeRef
from tests.app.conftest import top_goals
from tests.app.real_harness import Rig, quiz, readme_flow, ready, screen_text, send, settle, until


async def _stored_threads(rig: Rig) -> tuple[str, str, str]:
    """A trip thread (a completed goal with evidence, a failed goal, a quick answer), a
    readme thread (one quick answer), and the current one (one goal); fixed times."""
    clock = rig.clock
    assert clock is not None
    session = rig.session()
    await session.start()
    try:
        clock.at(2025, 3, 1, 9, 30)
        readme_flow(rig.brain, final="Cheapest: **TP1351** on Friday morning, 142 EUR.")
        await session.run("Plan a weekend in Lisbon")
        trip = session.thread_id
        clock.at(2025, 3, 2, 18, 5)
        quiz(rig.brain, "Hello again.")
        await session.run("Hello?")
        hotel = await session.add_goal("Book a hotel near Alfama")
        await session.add_dependency(hotel, "G1")
        # failed, as the runner leaves a goal after its last round
        await session.context.fail_goal(hotel, error="no hotel tool", allow_retry=False)
        await session.new_thread()
        clock.at(2025, 2, 20, 14, 0)
        quiz(rig.brain, "Soothe is a terminal workbench.")
        await session.run("What is Soothe?")
        readme = session.thread_id
        await session.new_thread()
        clock.at(2025, 3, 3, 8, 0)
        await session.add_goal("Tidy the notes folder")
        current = session.thread_id
    finally:
        await session.close()
    assert not rig.brain.unscripted and not rig.brain.leftover(), " ".join(rig.brain.kinds())
    return trip, readme, current


async def test_open_a_thread_from_the_threads_screen(rig: Rig) -> None:
    trip, readme, current = await _stored_threads(rig)
    app = rig.app(current)
    async with app.run_test(size=(120, 32)) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+t")
        await until(lambda: isinstance(app.screen, ThreadsScreen), pilot)
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, ThreadsScreen)
        table = screen.query_one(DataTable)
        assert [t.id for t in screen.threads] == [current, trip, readme]
        row = table.get_row_at(1)[1:5]
        assert row == [trip, "Plan a weekend in Lisbon", "2", "2025-03-02 18:05"]
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert app.screen is app.main
        assert app.session.thread_id == trip
        tree = app.main.goal_tree
        assert top_goals(tree) == ["G1", "G2"]
        assert tree.goal("G2").status == "failed"  # type: ignore[union-attr]
        assert [e.summary for e in app.main.evidence.entries.values()]
        sources = [md.source for md in app.main.stream.query(Markdown)]
        assert sources == ["Cheapest: **TP1351** on Friday morning, 142 EUR.", "Hello again."]
        assert app.main.status.info.thread == trip
        tree.show_ref(NodeRef("goal", "G2"))
        await pilot.pause()
        notes = [str(w.render()) for w in app.main.stream.query(".note")]
        assert "no hotel tool" in notes[-1], notes


async def test_delete_export_and_new_thread(rig: Rig) -> None:
    trip, readme, current = await _stored_threads(rig)
    app = rig.app(current)
    async with app.run_test(size=(120, 32)) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+t")
        await until(lambda: isinstance(app.screen, ThreadsScreen), pilot)
        await settle(app, pilot)
        await pilot.press("d")  # the open thread cannot be deleted
        await pilot.pause()
        assert any("open another one first" in n.message for n in app._notifications)
        await pilot.press("down", "down", "e")
        await settle(app, pilot)
        exported = rig.data_dir / "exports" / f"soothe-{readme}.md"
        await until(exported.exists, pilot)
        assert exported.read_text().startswith("# What is Soothe?")
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await settle(app, pilot)
        assert app.session.context.get_thread(readme) is None
        screen = app.screen
        assert [t.id for t in screen.threads] == [current, trip]  # type: ignore[attr-defined]
        await pilot.press("n")
        await settle(app, pilot)
        assert app.screen is app.main
        assert app.main.status.info.thread == app.session.thread_id != current
        await pilot.press("ctrl+t")
        await until(lambda: isinstance(app.screen, ThreadsScreen), pilot)
        await settle(app, pilot)
        await pilot.press("escape")
        assert app.screen is app.main


async def test_palette_providers(rig: Rig) -> None:
    trip, _, current = await _stored_threads(rig)
    rig.server.add_model("qwen2.5:7b")
    app = rig.app(current)
    async with app.run_test(size=(120, 32)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "/goal Write the docs")
        await settle(app, pilot)

        async def hits(provider_cls: Any, query: str) -> list[Any]:
            provider = provider_cls(app.screen)
            await provider.startup()
            return [hit async for hit in provider.search(query)]

        [docs] = [g.id for g in app.session.goals() if g.description == "Write the docs"]
        goals = await hits(GoalsProvider, "docs")
        assert [h.text for h in goals] == [f"Goal {docs}: Write the docs"]
        goals[0].command()
        await pilot.pause()
        assert app.main.goal_tree.selected_ref == NodeRef("goal", docs)

        themes = await hits(ThemesProvider, "dusk")
        assert [h.text for h in themes] == ["Theme: soothe-dusk"]
        themes[0].command()
        assert app.theme == "soothe-dusk"

        models = await hits(ModelsProvider, "qwen")
        assert [h.text for h in models] == ["Use model: qwen2.5:7b"]
        models[0].command()
        await settle(app, pilot)
        assert app.main.status.info.model == "qwen2.5:7b"

        threads = await hits(ThreadsProvider, "lisbon")
        assert [h.text for h in threads] == ["Open thread: Plan a weekend in Lisbon"]
        threads[0].command()
        await settle(app, pilot)
        assert app.main.status.info.thread == trip

        actions = await hits(ActionsProvider, "demo")
        assert [h.text for h in actions] == ["Use the demo model"]

        await pilot.press("ctrl+p")
        assert app.screen.__class__.__name__ == "CommandPalette"
        await pilot.press("escape")
        assert app.screen is app.main


async def test_the_threads_screen_at_80x24_shows_each_id_whole_first(rig: Rig) -> None:
    """``--thread`` needs the id: at 80 columns it comes first, after the mark, and no
    column is cut off (the title is clipped to the room left)."""
    trip, readme, current = await _stored_threads(rig)
    app = rig.app(current)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+t")
        await until(lambda: isinstance(app.screen, ThreadsScreen), pilot)
        await settle(app, pilot)
        text = screen_text(app)
        header = next(line for line in text.splitlines() if "Title" in line)
        assert header.index("Id") < header.index("Title") < header.index("Created"), header
        for thread_id, date in ((trip, "2025-03-01 09:30"), (readme, "2025-02-20 14:00")):
            row = next(line for line in text.splitlines() if thread_id in line)
            assert row.index(thread_id) < 8 and date in row, row
            assert row.rstrip().endswith("│"), row  # inside the box: nothing past its edge
        # a wider terminal gives the title its room back
        await pilot.resize_terminal(120, 32)
        await settle(app, pilot)
        assert "Plan a weekend in Lisbon" in screen_text(app)
