"""Pure pieces: wrapping, the capped stream text, transcripts, commands, themes, keymap."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textual.binding import Binding
from textual.theme import Theme

from soothe.app.commands import parse, unescape
from soothe.app.keymap import all_ids, help_rows, validate_keymap
from soothe.themes import BUILTIN_THEMES, ThemeFileError, load_theme_file, load_user_themes
from soothe.widgets.status_line import StatusInfo, render_status
from soothe.widgets.stream_text import StreamText
from soothe.widgets.transcript import MAX_TEXT_CHARS, StepCard, TextRun, ToolRun, Transcript
from soothe.widgets.wrap import clean, wrap_line


def test_wrap_line_breaks_after_spaces_and_splits_long_words() -> None:
    assert wrap_line("hello world this is", 11) == ["hello world ", "this is"]
    assert wrap_line("hello world this is", 10) == ["hello ", "world this ", "is"]
    assert wrap_line("abcdefghijklmnopqrstuvwxyz", 10) == ["abcdefghij", "klmnopqrst", "uvwxyz"]
    assert wrap_line("", 10) == [""]
    assert wrap_line("日本語のテキスト", 6) == ["日本語", "のテキ", "スト"]


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(st.text(alphabet="ab 日", min_size=0, max_size=14), min_size=1, max_size=40),
    width=st.integers(min_value=2, max_value=30),
)
def test_incremental_wrap_equals_full_wrap(words: list[str], width: int) -> None:
    text = "".join(words)
    rows: list[str] = []
    tail = ""
    for piece in words:
        if not piece:
            continue
        wrapped = wrap_line(tail + piece, width)
        rows.extend(wrapped[:-1])
        tail = wrapped[-1]
    assert "".join([*rows, tail]) == text
    assert [*rows, tail] == wrap_line(text, width)


def test_stream_text_appends_wraps_and_caps() -> None:
    widget = StreamText(max_lines=5)
    widget._rewrap(10)
    widget.append("one two three four\nfive")
    assert widget.rows() == ["one two ", "three four", "five"]
    widget.append(" six seven")
    assert widget.rows() == ["one two ", "three four", "five six ", "seven"]
    widget.append("\n".join(f"line{i}" for i in range(20)))
    assert len(widget.rows()) == 5 and widget.rows()[-1] == "line19"
    assert widget.dropped_rows > 0
    widget._rewrap(40)  # a resize re-wraps what is kept
    assert widget.rows()[-1] == "line19" and len(widget.rows()) <= 5


def test_stream_text_cleans_control_characters() -> None:
    assert clean("a\tb\r\nc\x07") == "a   b\nc\ufffd"


def test_step_card_keeps_its_text_and_tool_calls_in_order() -> None:
    card = StepCard("G1", "S1", "Read")
    first = card.add_text("hello ")
    assert card.add_text("world") is first and first.text == "hello world"
    card.add_tool(ToolRun(call_id="c1", tool="read_file"))
    after = card.add_text("!")
    assert after is not first and card.text == "hello world!"
    assert [type(p).__name__ for p in card.parts] == ["TextRun", "ToolRun", "TextRun"]
    assert card.tokens == 3


def test_transcript_releases_the_oldest_blocks_past_its_cap() -> None:
    transcript = Transcript("conversation", "Conversation", max_segments=3)
    for n in range(5):
        transcript.note(f"n{n}")
    assert [b.dump()["note"] for b in transcript.segments] == ["n2", "n3", "n4"]
    assert transcript.released == 2


def test_text_run_keeps_a_bounded_tail_and_reports_new_text() -> None:
    run = TextRun(stream="s")
    for _ in range(5):
        run.add("x" * (MAX_TEXT_CHARS // 2))
    assert run.kept <= MAX_TEXT_CHARS
    assert run.total == 5 * (MAX_TEXT_CHARS // 2)
    seen = run.total
    run.add("tail")
    assert run.since(seen) == "tail"
    assert run.since(0) == run.text


def test_slash_command_parsing() -> None:
    goal = parse("/goal Write the docs ")
    assert goal is not None and (goal.name, goal.arg, goal.problem()) == (
        "goal",
        "Write the docs",
        None,
    )
    assert parse("/goal").problem() == (  # type: ignore[union-attr]
        'usage: /goal TEXT [--done-when "…"] [--budget calls=N,tokens=N,time=30m]'
    )
    skill = parse("/skill:review src/")
    assert skill is not None and (skill.name, skill.raw) == ("skill", "/skill:review src/")
    assert parse("/skill: x").problem() == "usage: /skill:NAME args"  # type: ignore[union-attr]
    assert parse("/frobnicate").problem().startswith("unknown command")  # type: ignore[union-attr]
    assert parse("plain text") is None
    assert parse("//etc/passwd is a path") is None
    assert unescape("//etc/passwd is a path") == "/etc/passwd is a path"


def test_builtin_themes() -> None:
    assert {"soothe-dark", "soothe-light", "soothe-high-contrast", "soothe-dusk"} <= set(
        BUILTIN_THEMES
    )
    assert not BUILTIN_THEMES["soothe-light"].dark
    assert all(isinstance(theme, Theme) for theme in BUILTIN_THEMES.values())


def test_user_theme_files(tmp_path: Path) -> None:
    good = tmp_path / "paper.toml"
    good.write_text('primary = "#335577"\nbackground = "#FAFAF7"\ndark = false\ntext_alpha = 1\n')
    theme = load_theme_file(good)
    assert (theme.name, theme.primary, theme.dark, theme.text_alpha) == (
        "paper",
        "#335577",
        False,
        1.0,
    )
    cases = {
        "nocolour.toml": ('primary = "nope"\n', "not a colour"),
        "unknown.toml": ('primary = "#fff"\nsparkle = true\n', "unknown key 'sparkle'"),
        "missing.toml": ("dark = true\n", "primary: required"),
        "bad.toml": ("primary = \n", "not valid TOML"),
        "types.toml": ('primary = "#fff"\ndark = "yes"\n', "dark: expected bool"),
    }
    for name, (body, problem) in cases.items():
        path = tmp_path / name
        path.write_text(body)
        with pytest.raises(ThemeFileError, match=problem):
            load_theme_file(path)
    themes, problems = load_user_themes(tmp_path)
    assert [t.name for t in themes] == ["paper"]
    assert len(problems) == len(cases)
    assert load_user_themes(tmp_path / "absent") == ([], [])


def test_keymap_validation_and_help_rows() -> None:
    assert validate_keymap({"tree.cancel": "delete"}) == []
    assert validate_keymap({"tree.nope": "x"}) == [
        "ui.keymap: unknown binding id 'tree.nope' (F1 lists them)"
    ]
    assert validate_keymap({"tree.cancel": " "}) == ["ui.keymap: 'tree.cancel' has no keys"]
    rows = dict(help_rows({"tree.cancel": "delete"}))
    assert ("delete", "Cancel", "tree.cancel") in rows["Goal tree (focused)"]
    assert {
        "app.interrupt",
        "app.focus_goals",
        "app.evidence",
        "app.threads",
        "app.jump_active",
        "evidence.show_all",
        "app.help",
        "app.quit",
        "app.command_palette",
    } <= all_ids()


def test_status_line_text() -> None:
    info = StatusInfo(
        model="qwen2.5:7b",
        provider="reachable",
        thread="t-1",
        iteration=2,
        max_iterations=8,
        tokens_in=12_345,
        tokens_out=678,
        elapsed=75.0,
        running=True,
    )
    assert render_status(info).plain == (
        "◐ running │ qwen2.5:7b ● reachable │ thread t-1 │ iter 2/8 │ tok 12.3k in · 678 out │ 1:15"
    )
    assert render_status(StatusInfo(provider="unreachable")).plain.startswith(
        "idle │ … ● unreachable"
    )
    # no counts yet (a new session, a reopened thread): no "tok 0 in · 0 out"
    assert render_status(StatusInfo(model="demo", provider="demo")).plain == "idle │ demo ● demo"


def test_wrap_keeps_every_character_of_a_long_stream() -> None:
    rng = random.Random(7)
    text = " ".join(rng.choice(["a", "bb", "ccc", "dddd", "eeeeeeeeeeeee"]) for _ in range(5000))
    assert "".join(wrap_line(text, 37)) == text


def test_one_command_registry_drives_parsing_completion_help_palette_and_dispatch() -> None:
    from soothe.app.commands import COMMANDS, words
    from soothe.app.main import SootheApp
    from soothe.app.screens.help import help_content
    from soothe.widgets.prompt_input import matches

    for command in COMMANDS:  # every row names a method the app has
        assert callable(getattr(SootheApp, command.handler, None)), command.name
        assert not (command.palette and command.passes != "nothing"), command.name
    assert words()[0] == "/goal" and "/skill:" in words() and len(words()) == len(COMMANDS)
    assert matches("/th", words(), lambda word: ()) == ["/theme ", "/threads "]
    assert matches("/sk", words(), lambda word: ()) == ["/skill:"]
    themes = {"/theme": ["soothe-dusk", "soothe-light"]}
    assert matches("/theme soothe-l", words(), lambda w: themes.get(w, [])) == [
        "/theme soothe-light"
    ]
    skill = parse("/skill:triage the inbox")
    assert skill is not None and skill.arguments() == ("/skill:triage the inbox",)
    goal = parse("/goal  Write docs ")
    assert goal is not None and goal.arguments() == ("Write docs",)
    quit_ = parse("/QUIT")
    assert quit_ is not None and quit_.arguments() == () and quit_.problem() is None
    help_text = help_content({}).plain
    assert all(f"  {command.word:<20}{command.summary}" in help_text for command in COMMANDS)


def test_widgets_declare_their_bindings_and_the_keymap_gathers_them() -> None:
    from soothe.app.keymap import scopes
    from soothe.widgets.goal_tree import GoalTree
    from soothe.widgets.prompt_input import PromptInput

    gathered = dict(scopes())
    tree_ids = [b.id for b in GoalTree.BINDINGS if isinstance(b, Binding)]
    assert [b.id for b in gathered["Goal tree (focused)"]] == tree_ids
    assert [b.id for b in gathered["Prompt"]] == [
        b.id for b in PromptInput.BINDINGS if isinstance(b, Binding) and b.id
    ]
    ids = [b.id for _, bindings in scopes() for b in bindings]
    assert len(ids) == len(set(ids)) == len(all_ids())


async def test_goal_details_show_an_answer_once() -> None:
    """A completed goal's findings are its answer: the dialog shows it once."""
    from textual.app import App
    from textual.widgets import Static

    from soothe.app.screens.goals import GoalDetailDialog
    from soothe.engine.views import GoalView

    answer = "The README describes a kettle."
    goal = GoalView(id="G1", description="Summarise", status="completed", findings=answer)

    def shown(dialog: GoalDetailDialog) -> str:
        return "\n".join(str(s.render()) for s in dialog.query(Static))

    async with App().run_test() as pilot:
        dialog = GoalDetailDialog(goal, answer=answer)
        await pilot.app.push_screen(dialog)
        await pilot.pause()
        assert shown(dialog).count(answer) == 1
        other = GoalDetailDialog(goal.model_copy(update={"findings": "2 files"}), answer=answer)
        await pilot.app.push_screen(other)
        await pilot.pause()
        assert "2 files" in shown(other) and shown(other).count(answer) == 1


def test_a_batch_is_split_after_its_last_token() -> None:
    """The streamed tokens are painted before what ends the step (each a layout)."""
    from soothe.app.handler import tokens_first
    from soothe.engine import events as ev

    tok = [ev.StepToken(text=t, goal_id="G1", step_id="S1") for t in ("a", "b")]
    done = ev.StepCompleted(goal_id="G1", step_id="S1")
    assert tokens_first([tok[0], tok[1], done]) == ([tok[0], tok[1]], [done])
    assert tokens_first([tok[0], tok[1]]) == ([tok[0], tok[1]], [])
    assert tokens_first([done]) == ([done], [])
    assert tokens_first([]) == ([], [])


def test_a_running_streams_tokens_come_before_the_card_of_a_step_that_starts() -> None:
    """A step that starts mounts a card (a layout): the tokens of the streams already on
    screen are painted first; each step's own events keep their order."""
    from soothe.app.handler import tokens_first
    from soothe.engine import events as ev

    def tok(text: str, step: str) -> ev.StepToken:
        return ev.StepToken(text=text, goal_id="G1", step_id=step)

    started = ev.StepStarted(goal_id="G1", step_id="S2", description="next")
    a, b, c = tok("a", "S1"), tok("b", "S1"), tok("c", "S1")
    new = tok("n", "S2")
    tool = ev.ToolCalled(goal_id="G1", step_id="S1", tool="read_file", call_id="1")
    other_goal = tok("x", "S2").model_copy(update={"goal_id": "G2"})
    assert tokens_first([a, started, new, b]) == ([a, b], [started, new])
    # S1's tokens after its tool call stay after it; G2's S2 is another stream
    batch = [started, a, tool, b, other_goal, new, c]
    assert tokens_first(batch) == ([a, other_goal], [started, tool, b, new, c])
    assert tokens_first([started, new]) == ([started, new], [])
    # the view model keys a card by goal and step: a token of the starting step with
    # another loop id is still that step's
    looped = new.model_copy(update={"loop_id": "G1-L2"})
    assert tokens_first([started, looped, a]) == ([a], [started, looped])


def test_dirty_regions_of_the_same_columns_are_merged() -> None:
    from textual.geometry import Region

    from soothe.widgets.textual_fixes import _merged_columns

    rows = [Region(2, y, 10, 1) for y in (5, 3, 4, 9)]
    assert _merged_columns([*rows, Region(0, 0, 4, 2)]) == [
        Region(0, 0, 4, 2),
        Region(2, 3, 10, 3),
        Region(2, 9, 10, 1),
    ]
