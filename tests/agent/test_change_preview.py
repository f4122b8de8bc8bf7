"""What the approval dialog shows: the change a tool call would make, against the disk."""

from __future__ import annotations

from pathlib import Path

from soothe.engine.agent.change_preview import MAX_DIFF_LINES, preview_change


def test_a_new_file_is_a_diff_from_nothing(tmp_path: Path) -> None:
    change = preview_change(tmp_path, "write_file", {"path": "notes/a.txt", "content": "x\ny\n"})
    assert change is not None
    assert change.summary == "new file, 2 lines"
    assert change.diff.splitlines() == [
        "--- /dev/null",
        "+++ b/notes/a.txt",
        "@@ -0,0 +1,2 @@",
        "+x",
        "+y",
    ]
    assert not (tmp_path / "notes").exists()  # nothing is written


def test_overwriting_says_how_many_lines_and_diffs_them(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    change = preview_change(tmp_path, "write_file", {"path": "a.txt", "content": "one\n2\nthree\n"})
    assert change is not None
    assert change.summary == "overwrites 3 lines"
    assert "-two\n+2\n" in change.diff
    assert change.diff.startswith("--- a/a.txt\n+++ b/a.txt\n")
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\nthree\n"
    same = preview_change(tmp_path, "write_file", {"path": "a.txt", "content": "one\ntwo\nthree\n"})
    assert same is not None and same.summary == "overwrites the file with the same text"


def test_an_edit_is_diffed_against_the_file(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    return 1\n\nprint(f())\n")
    change = preview_change(
        tmp_path, "edit_file", {"path": "m.py", "old": "    return 1", "new": "    return 2"}
    )
    assert change is not None
    assert change.summary == "edits 1 of 4 lines"
    assert "-    return 1\n+    return 2\n" in change.diff


def test_an_edit_the_tool_would_refuse_says_why(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a\n")
    change = preview_change(tmp_path, "edit_file", {"path": "m.py", "old": "zzz", "new": "b"})
    assert change is not None
    assert change.summary == "the tool would refuse this call"
    assert "'old' text not found in m.py" in change.problem
    outside = preview_change(tmp_path, "write_file", {"path": "../x", "content": ""})
    assert outside is not None and outside.problem and not outside.diff


def test_a_command_is_a_command_and_other_tools_have_no_preview(tmp_path: Path) -> None:
    change = preview_change(tmp_path, "run_shell", {"command": "pytest -q tests", "timeout": 60})
    assert change is not None
    assert (change.summary, change.command, change.diff) == (
        "runs a command",
        "pytest -q tests",
        "",
    )
    script = preview_change(tmp_path, "run_shell", {"command": "cd src\nmake"})
    assert script is not None and script.summary == "runs a 2-line script"
    assert preview_change(tmp_path, "read_file", {"path": "a"}) is None


def test_a_long_diff_is_cut_and_says_so(tmp_path: Path) -> None:
    content = "".join(f"line {i}\n" for i in range(MAX_DIFF_LINES * 2))
    change = preview_change(tmp_path, "write_file", {"path": "big.txt", "content": content})
    assert change is not None
    lines = change.diff.splitlines()
    assert len(lines) == MAX_DIFF_LINES + 1
    assert lines[-1] == f"... {MAX_DIFF_LINES * 2 + 3 - MAX_DIFF_LINES} more diff lines not shown"
