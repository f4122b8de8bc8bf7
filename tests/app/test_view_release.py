"""Bounded views on the real Session (fake Ollama): views of finished goals beyond the
view model's limit are released, and selecting one rebuilds it, whole, from the store."""

from __future__ import annotations

from textual.widgets import Markdown

from soothe.app.view_paging import LOADING
from tests.app.real_harness import Rig, readme_flow, ready, send, settle, until


def shown_text(app: object) -> str:
    stream = app.main.stream  # type: ignore[attr-defined]
    parts = [str(w.render()) for w in stream.query("Static")]
    parts += [m.source for m in stream.query(Markdown)]
    return "\n".join(parts)


async def test_selecting_a_released_goal_rebuilds_its_history_from_the_store(rig: Rig) -> None:
    finals = [f"Answer number {n}: Soothe is a terminal workbench." for n in range(1, 5)]
    for final in finals:
        readme_flow(rig.brain, final=final)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        state = app.handler.state
        state.max_views = 2  # fewer than one request's goal and step views
        await send(app, pilot, "Summarise README.md")
        await settle(app, pilot)
        before = {key: state.blocks(key) for key in ("G1", "G1/S-01", "G1/S-02")}
        assert any(b.get("answer") == finals[0] for b in before["G1"])
        for n in range(2, 5):
            await send(app, pilot, f"Summarise README.md again ({n})")
            await settle(app, pilot)
        assert set(app.handler.goals) == {"G1", "G2", "G3", "G4"}
        held = [key for key in state.views if key != "conversation"]
        assert len(held) <= state.max_views + 1  # + the visible one (here the conversation)
        assert {"G1", "G1/S-01", "G1/S-02"} <= set(state.released)

        app.handler.select(app.handler.ref_of("G1"))  # what the tree does on a click
        await until(lambda: "G1" not in state.released, pilot)
        await settle(app, pilot)
        assert app.main.stream.key == "G1"
        assert state.blocks("G1") == before["G1"]
        text = shown_text(app)
        assert finals[0] in text and LOADING not in text
        assert "S-01" in text and "read_file" in text

        app.handler.select(app.handler.ref_of("G1/S-01"))
        await until(lambda: "G1/S-01" not in state.released, pilot)
        await settle(app, pilot)
        assert state.blocks("G1/S-01") == before["G1/S-01"]
        assert [g.status for g in app.handler.goals.values()] == ["completed"] * 4
