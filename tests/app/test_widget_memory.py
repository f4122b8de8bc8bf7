"""Removed widgets are let go: nothing of Textual's keeps them (or what they rendered)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Label
from textual.widgets._footer import FooterKey

from soothe.widgets import textual_fixes
from soothe.widgets.footer import SteadyFooter


class Board(App[None]):
    def compose(self) -> ComposeResult:
        yield Vertical(id="list")


async def test_a_removed_widget_and_its_rendered_lines_are_freed() -> None:
    textual_fixes.apply()
    assert "styles cache" in textual_fixes.applied()
    app = Board()
    async with app.run_test(size=(60, 20)) as pilot:
        board = app.query_one("#list", Vertical)
        labels = [Label(f"card {i}", classes="card") for i in range(10)]
        await board.mount_all(labels)
        await pilot.pause()
        caches = [weakref.ref(label._styles_cache) for label in labels]
        assert caches[0]() is not None
        await board.remove_children()
        # the container's arrangement and child-list caches hold the last children until
        # it lays out again (bounded, one generation): let it
        await board.mount(Label("next"))
        await pilot.pause()
        await pilot.pause()
        del labels
        gc.collect()
        alive = sum(1 for ref in caches if ref() is not None)
        assert alive == 0, f"{alive} style caches of removed labels still alive"


class Keys(App[None]):
    BINDINGS = [Binding("f2", "flip", "Flip")]

    def __init__(self) -> None:
        super().__init__()
        self.label = "One"

    def compose(self) -> ComposeResult:
        yield Label("body")
        yield SteadyFooter()

    def action_flip(self) -> None:
        self.label = "Two" if self.label == "One" else "One"
        self.bind_label()

    def bind_label(self) -> None:
        self.screen._bindings.key_to_bindings["f3"] = [Binding("f3", "noop", self.label)]
        self.refresh_bindings()

    def action_noop(self) -> None:
        pass


async def test_footer_recomposes_keep_no_removed_keys() -> None:
    app = Keys()
    async with app.run_test(size=(80, 10)) as pilot:
        footer = app.query_one(SteadyFooter)
        composed: list[weakref.ref[FooterKey]] = []
        for _ in range(6):  # each flip changes a shown key: the footer recomposes
            composed += [weakref.ref(key) for key in footer.query(FooterKey)]
            await pilot.press("f2")
            await pilot.pause()
            await pilot.pause()
        watched: list[Any] = getattr(footer, "__watchers", {}).get("compact", [])
        closed = [node for node, _ in watched if not node.is_attached]
        assert not closed, f"{len(closed)} removed FooterKeys still watched"
        shown = list(footer.query(FooterKey))
        assert any(str(key.description) in ("One", "Two") for key in shown)
        del shown
        gc.collect()
        alive = [ref() for ref in composed]
        removed = [key for key in alive if key is not None and not key.is_attached]
        assert not removed, f"{len(removed)} removed FooterKeys still alive"
