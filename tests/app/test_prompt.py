"""The prompt: multi-line (a paste keeps every line, enter sends, ctrl+j adds a line),
history kept under the data dir, @path completion, page keys scroll the conversation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App, ComposeResult

from soothe.app.main import PROMPT_HISTORY
from soothe.widgets.prompt_input import (
    HISTORY_LIMIT,
    PromptInput,
    load_history,
    save_history,
    workspace_paths,
)
from tests.app.real_harness import Rig, classify, ready, send, settle, until


class _Host(App[None]):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self.prompt = PromptInput(id="prompt", **kwargs)
        self.sent: list[str] = []
        self.pages: list[int] = []

    def compose(self) -> ComposeResult:
        yield self.prompt

    def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        self.sent.append(event.value)

    def on_prompt_input_page(self, event: PromptInput.Page) -> None:
        self.pages.append(event.direction)


async def test_paste_keeps_every_line_enter_sends_ctrl_j_adds_a_line() -> None:
    app = _Host()
    async with app.run_test() as pilot:
        app.prompt.focus()
        app.post_message(events.Paste("first line\nsecond line\n\nfourth"))
        await pilot.pause()
        assert app.prompt.value == "first line\nsecond line\n\nfourth"
        await pilot.press("ctrl+j", *"fifth")
        assert app.prompt.value.endswith("fourth\nfifth")
        await pilot.press("enter")
        await pilot.pause()
        assert app.sent == ["first line\nsecond line\n\nfourth\nfifth"]
        assert app.prompt.value == ""


async def test_up_moves_inside_a_draft_and_recalls_history_at_its_edge() -> None:
    app = _Host()
    async with app.run_test() as pilot:
        app.prompt.remember("older")
        app.prompt.remember("one\ntwo")
        app.prompt.focus()
        await pilot.press(*"a", "ctrl+j", *"b")
        await pilot.press("up")  # second line -> first line of the draft
        assert app.prompt.cursor_location[0] == 0 and app.prompt.value == "a\nb"
        await pilot.press("up")  # first line: the history
        assert app.prompt.value == "one\ntwo"
        await pilot.press("up", "up")  # inside the recalled entry, then the older one
        assert app.prompt.value == "older"
        await pilot.press("down")
        assert app.prompt.value == "one\ntwo"
        await pilot.press("down", "down")
        assert app.prompt.value == "a\nb"


async def test_history_survives_a_restart_and_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "data" / PROMPT_HISTORY
    app = _Host(history_file=path)
    async with app.run_test() as pilot:
        app.prompt.focus()
        app.prompt.value = "a request\nwith two lines"
        await pilot.press("enter")
        app.prompt.remember("/goal second")
    assert load_history(path) == ["a request\nwith two lines", "/goal second"]
    again = _Host(history_file=path)
    async with again.run_test() as pilot:
        again.prompt.focus()
        await pilot.press("up")
        assert again.prompt.value == "/goal second"
    save_history(path, [f"r{i}" for i in range(HISTORY_LIMIT + 20)])
    kept = load_history(path)
    assert len(kept) == HISTORY_LIMIT and kept[0] == "r20"
    path.write_text('"ok"\nnot json\n{"x": 1}\n')  # damaged lines are skipped
    assert load_history(path) == ["ok"]
    assert json.loads(path.read_text().splitlines()[0]) == "ok"


async def test_history_on_the_app_lives_under_the_data_dir(rig: Rig) -> None:
    rig.brain.add("Classification", classify("quiz", "Four."))
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "What is 2+2?")
        await settle(app, pilot)
    assert load_history(rig.data_dir / PROMPT_HISTORY) == ["What is 2+2?"]


def test_workspace_paths_complete_one_level_like_a_shell(tmp_path: Path) -> None:
    (tmp_path / "src" / "soothe").mkdir(parents=True)
    (tmp_path / "src" / "setup.py").write_text("")
    (tmp_path / "README.md").write_text("")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".env").write_text("")
    assert workspace_paths(tmp_path, "") == ["README.md", "src/"]
    assert workspace_paths(tmp_path, "src/s") == ["src/setup.py", "src/soothe/"]
    assert workspace_paths(tmp_path, ".") == [".env"]  # hidden only when asked; never .git
    assert workspace_paths(tmp_path, "../") == []  # nothing outside the workspace
    assert workspace_paths(tmp_path, "nope/x") == []


async def test_at_path_completion_with_tab(tmp_path: Path) -> None:
    (tmp_path / "src" / "soothe").mkdir(parents=True)
    (tmp_path / "src" / "setup.py").write_text("")
    app = _Host(files=lambda prefix: workspace_paths(tmp_path, prefix))
    async with app.run_test() as pilot:
        app.prompt.focus()
        await pilot.press(*"explain @sr", "tab")
        assert app.prompt.value == "explain @src/"
        await pilot.press(*"s", "tab")
        assert app.prompt.value == "explain @src/setup.py"
        await pilot.press("tab")  # cycles
        assert app.prompt.value == "explain @src/soothe/"
        await pilot.press(*" and x@y", "tab")  # not a word start: nothing happens
        assert app.prompt.value == "explain @src/soothe/ and x@y"


async def test_page_keys_in_the_prompt_ask_to_scroll() -> None:
    app = _Host()
    async with app.run_test() as pilot:
        app.prompt.focus()
        await pilot.press("pageup", "pagedown", "pageup")
        assert app.pages == [-1, 1, -1]


async def test_a_pasted_request_reaches_the_model_whole(rig: Rig) -> None:
    rig.brain.add("Classification", classify("quiz", "Both lines read."))
    rig.brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Read"}]})
    rig.brain.step("S-01", "Both lines read.")
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        app.prompt.focus()
        app.post_message(events.Paste("Read this:\nline two\nline three"))
        await until(lambda: "line three" in app.prompt.value, pilot)
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.prompt.value == ""
        sent = rig.brain.prompts("Classification")[0]
        assert "Read this:\nline two\nline three" in sent  # every line, as pasted


async def test_page_up_in_the_prompt_scrolls_the_conversation(rig: Rig) -> None:
    rig.brain.add("Classification", classify("quiz", "\n\n".join(f"para {i}" for i in range(60))))
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Long answer please")
        await settle(app, pilot)
        stream = app.main.stream
        assert stream.max_scroll_y > 0 and app.focused is app.prompt
        bottom = stream.scroll_y
        await pilot.press("pageup")
        await pilot.pause()
        assert stream.scroll_y < bottom and app.focused is app.prompt
        await pilot.press("pagedown")
        await pilot.pause()
        assert stream.scroll_y > bottom - stream.size.height


async def test_page_keys_in_the_prompt_with_nothing_to_scroll_keep_the_app(rig: Rig) -> None:
    """At start the conversation is shorter than its panel: pageup used to raise Textual's
    SkipAction out of the message handler (exit 1 with a traceback)."""
    app = rig.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        app.prompt.focus()
        assert app.main.stream.max_scroll_y == 0
        await pilot.press("pageup", "pagedown", "pageup")
        await pilot.pause()
        assert app.is_running and app._exception is None
        assert app.focused is app.prompt
    assert app.return_code in (None, 0)
