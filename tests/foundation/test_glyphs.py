"""One meaning per glyph: the goal tree, the step cards and the Markdown export draw a
status with the same glyph (``⊘`` blocked, ``⊗`` cancelled)."""

from __future__ import annotations

from collections import defaultdict

from soothe.engine.context import ContextEngine
from soothe.engine.export import thread_markdown
from soothe.engine.glyphs import GOAL_GLYPHS, STEP_GLYPHS
from soothe.widgets.icons import GOAL_ICONS, STEP_ICONS, status_icon
from soothe.widgets.step_card import STATUS_MARKS


def test_each_glyph_has_one_meaning() -> None:
    meanings: dict[str, set[str]] = defaultdict(set)
    for table in (GOAL_GLYPHS, STEP_GLYPHS):
        for status, glyph in table.items():
            meanings[glyph].add(status)
    shared = {glyph: names for glyph, names in meanings.items() if len(names) > 1}
    assert shared == {
        "✓": {"completed", "validated"},  # both: the work is done
        "?": {"awaiting_clarification", "awaiting"},  # both: the user's turn (goal, step)
    }
    assert GOAL_GLYPHS["blocked"] == "⊘" and GOAL_GLYPHS["cancelled"] == "⊗"


def test_the_screen_and_the_export_draw_the_same_glyphs() -> None:
    assert GOAL_ICONS is GOAL_GLYPHS and STEP_ICONS is STEP_GLYPHS
    assert status_icon("cancelled", None) == "⊗"
    for status, (glyph, _style) in STATUS_MARKS.items():
        assert STEP_GLYPHS[status] == glyph, status


async def test_a_cancelled_goal_is_exported_with_the_tree_glyph() -> None:
    context = await ContextEngine.open(":memory:")
    try:
        thread = await context.create_thread("glyphs")
        kept = await context.create_goal("kept", thread_id=thread.id)
        dropped = await context.create_goal("dropped", thread_id=thread.id)
        await context.cancel_goal(dropped.id)
        text = await thread_markdown(context, thread.id)
    finally:
        await context.close()
    assert f"### ⊗ {dropped.id} — dropped" in text
    assert f"### ○ {kept.id} — kept" in text
    assert "⊘" not in text
