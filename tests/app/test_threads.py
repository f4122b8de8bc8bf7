"""The threads screen and the command palette providers."""

from __future__ import annotations

from pathlib import Path

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
from tests.app.conftest import settle, submit, top_goals
from tests.app.fake_session import FakeSession
from tests.app.scripts import stored_threads


async def test_open_a_thread_from_the_threads_screen(make_app, session: FakeSession) -> None:
    stored_threads(session)
    app = make_app()
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+t")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, ThreadsScreen)
        table = screen.query_one(DataTable)
        assert [t.id for t in screen.threads] == ["t-0001", "t-trip", "t-readme"]
        assert table.get_row_at(1)[1:4] == ["Plan a weekend in Lisbon", "2", "2025-03-02 18:05"]
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert app.screen is app.main
        assert ("open_thread", ("t-trip",)) in session.calls
        tree = app.main.goal_tree
        assert top_goals(tree) == ["G1", "G2"]
        assert tree.goal("G2").status == "failed"  # type: ignore[union-attr]
        assert list(app.main.evidence.entries) == ["E1"]
        sources = [md.source for md in app.main.stream.query(Markdown)]
        assert sources == ["Hello again.", "Cheapest: **TP1351** on Friday morning, 142 EUR."]
        assert app.main.status.info.thread == "t-trip"
        tree.show_ref(NodeRef("goal", "G2"))
        await pilot.pause()
        notes = [str(w.render()) for w in app.main.stream.query(".note")]
        assert "no hotel tool" in notes[-1]


async def test_delete_export_and_new_thread(make_app, session: FakeSession, tmp_path: Path) -> None:
    stored_threads(session)
    app = make_app()
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+t")
        await settle(app, pilot)
        await pilot.press("d")  # the open thread cannot be deleted
        await pilot.pause()
        assert any("open another one first" in n.message for n in app._notifications)
        await pilot.press("down", "down", "e")
        await settle(app, pilot)
        assert (
            (tmp_path / "data" / "exports" / "soothe-t-readme.md")
            .read_text()
            .startswith("# Thread t-readme")
        )
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await settle(app, pilot)
        assert "t-readme" not in session.threads
        assert [t.id for t in app.screen.threads] == ["t-0001", "t-trip"]  # type: ignore[attr-defined]
        await pilot.press("n")
        await settle(app, pilot)
        assert app.screen is app.main
        assert app.main.status.info.thread == session.thread_id != "t-0001"
        await pilot.press("ctrl+t")
        await settle(app, pilot)
        await pilot.press("escape")
        assert app.screen is app.main


async def test_palette_providers(make_app, session: FakeSession) -> None:
    stored_threads(session)
    app = make_app()
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "/goal Write the docs")
        await settle(app, pilot)

        async def hits(provider_cls, query):  # type: ignore[no-untyped-def]
            provider = provider_cls(app.screen)
            await provider.startup()
            return [hit async for hit in provider.search(query)]

        goals = await hits(GoalsProvider, "docs")
        assert [h.text for h in goals] == ["Goal G1: Write the docs"]
        goals[0].command()
        await pilot.pause()
        assert app.main.goal_tree.selected_ref == NodeRef("goal", "G1")

        themes = await hits(ThemesProvider, "dusk")
        assert [h.text for h in themes] == ["Theme: soothe-dusk"]
        themes[0].command()
        assert app.theme == "soothe-dusk"

        models = await hits(ModelsProvider, "large")
        assert [h.text for h in models] == ["Use model: fake-large"]
        models[0].command()
        await settle(app, pilot)
        assert app.main.status.info.model == "fake-large"

        threads = await hits(ThreadsProvider, "lisbon")
        assert [h.text for h in threads] == ["Open thread: Plan a weekend in Lisbon"]
        threads[0].command()
        await settle(app, pilot)
        assert app.main.status.info.thread == "t-trip"

        actions = await hits(ActionsProvider, "demo")
        assert [h.text for h in actions] == ["Use the demo model"]

        await pilot.press("ctrl+p")
        assert app.screen.__class__.__name__ == "CommandPalette"
        await pilot.press("escape")
        assert app.screen is app.main
