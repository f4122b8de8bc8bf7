"""The footer leaves out the keys that do not fit whole, from the right, instead of
cutting the last one mid-word ("^l Promp"); it shows them again when there is room."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from textual.widgets._footer import FooterLabel, KeyGroup

from soothe.widgets.footer import PALETTE, SteadyFooter
from tests.app.real_harness import Rig, ready, screen_text, settle


def placed(footer: SteadyFooter) -> tuple[list[Any], list[Any], int]:
    """The footer's keys shown and left out, and where the palette key starts."""
    items = [child for child in footer.children if not child.has_class(PALETTE)]
    palette = [child for child in footer.children if child.has_class(PALETTE)]
    return (
        [item for item in items if item.display],
        [item for item in items if not item.display],
        palette[0].region.x,
    )


async def tree_keys(app: Any, pilot: Any) -> SteadyFooter:
    """The footer with the goal tree's keys (more than 100 columns of them)."""
    await ready(app, pilot)
    await app.session.add_goal("Write the notes")
    await settle(app, pilot)
    await pilot.press("ctrl+g")
    await settle(app, pilot)
    footer: SteadyFooter = app.query_one(SteadyFooter)
    return footer


async def test_the_footer_shows_whole_keys_only(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(100, 30)) as pilot:
        footer = await tree_keys(app, pilot)
        shown, left_out, palette_at = placed(footer)
        assert shown and left_out
        assert all(item.region.right <= palette_at for item in shown)
        await pilot.resize_terminal(240, 30)
        await settle(app, pilot)
        shown, left_out, palette_at = placed(footer)
        assert not left_out and all(item.region.right <= palette_at for item in shown)
        await pilot.resize_terminal(100, 30)
        await settle(app, pilot)
        shown, left_out, palette_at = placed(footer)
        assert left_out and all(item.region.right <= palette_at for item in shown)


def groups_keep_their_labels(footer: SteadyFooter) -> bool:
    """A key group (the tree's priority keys) is shown only with the label after it."""
    items = [child for child in footer.children if not child.has_class(PALETTE)]
    return not any(
        isinstance(item, KeyGroup)
        and isinstance(following, FooterLabel)
        and item.display
        and not following.display
        for item, following in pairwise(items)
    )


async def test_a_key_group_goes_with_its_label(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(120, 30)) as pilot:
        footer = await tree_keys(app, pilot)
        assert footer.query(KeyGroup), "the tree's priority keys are a group"
        for width in range(90, 100):
            await pilot.resize_terminal(width, 30)
            await settle(app, pilot)
            shown, _, palette_at = placed(footer)
            assert all(item.region.right <= palette_at for item in shown), width
            assert groups_keep_their_labels(footer), width


async def test_quit_and_help_stay_at_80_columns_whatever_has_the_focus(rig: Rig) -> None:
    """At 80x24 the tree's keys and the app's fill the footer twice over: the keys left out
    to make room are others, never ^q Quit (before: dropped first, being last) or f1 Help."""
    app = rig.app()
    async with app.run_test(size=(80, 24)) as pilot:
        footer = await tree_keys(app, pilot)
        for focus in ("ctrl+g", "ctrl+l"):  # the goal tree's keys, then the prompt's
            await pilot.press(focus)
            await settle(app, pilot)
            row = screen_text(app).splitlines()[-1]
            assert "^q Quit" in row and "f1 Help" in row, row
            shown, left_out, palette_at = placed(footer)
            assert all(item.region.right <= palette_at for item in shown)
        assert left_out  # the prompt's row is full too: something else made room
