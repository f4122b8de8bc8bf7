"""The argparse front end: flags, their mapping onto settings, and config errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from soothe.cli import build_parser, build_sub_parser, main, overrides_from


def test_prompt_flags_parse() -> None:
    args = build_parser().parse_args(
        ["-p", "list files", "--autonomous", "--json", "--thread", "t-1", "--debug"]
    )
    assert args.prompt == "list files"
    assert (args.autonomous, args.json, args.thread, args.debug) == (True, True, "t-1", True)
    assert build_parser().parse_args(["--prompt", ""]).prompt == ""


def test_parser_defaults() -> None:
    args = build_parser().parse_args([])
    assert args.prompt is None
    assert not (args.autonomous or args.yes or args.json or args.debug)
    for name in ("thread", "workspace", "max_iterations", "clarify", "config", "data_dir"):
        assert getattr(args, name) is None
    assert overrides_from(args) == {}


@pytest.mark.parametrize(
    "argv",
    [["--clarify", "maybe"], ["--provider", "nope"], ["--max-iterations", "many"], ["-p"]],
)
def test_bad_flags_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(argv)
    assert info.value.code == 2
    assert "usage: soothe" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--yes"], {"tools": {"approval": "auto"}}),
        (["--clarify", "auto"], {"tools": {"clarify": "auto"}}),
        (["--clarify", "fail"], {"tools": {"clarify": "fail"}}),
        (["--provider", "openai"], {"model": {"provider": "openai"}}),
        (["--model", "qwen3:4b"], {"model": {"name": "qwen3:4b"}}),
        (["--base-url", "h:1"], {"model": {"base_url": "h:1"}}),
        (["--data-dir", "/d"], {"storage": {"data_dir": "/d"}}),
        (["--workspace", "/w"], {"tools": {"workspace": "/w"}}),
        (["--max-iterations", "3"], {"loop": {"max_iterations": 3}}),
        (
            ["-p", "x", "--yes", "--clarify", "auto", "--model", "m", "--max-iterations", "2"],
            {
                "tools": {"approval": "auto", "clarify": "auto"},
                "model": {"name": "m"},
                "loop": {"max_iterations": 2},
            },
        ),
    ],
)
def test_overrides_from(argv: list[str], expected: dict[str, Any]) -> None:
    assert overrides_from(build_parser().parse_args(argv)) == expected


def test_overrides_from_a_subcommand() -> None:
    args = build_sub_parser("config").parse_args(["show", "--model", "m", "--data-dir", "/d"])
    assert args.action == "show"
    assert overrides_from(args) == {"model": {"name": "m"}, "storage": {"data_dir": "/d"}}


def test_overrides_reach_the_settings(isolated_env: Path) -> None:
    from soothe.engine.config import load_settings

    argv = ["--yes", "--clarify", "fail", "--workspace", str(isolated_env), "--data-dir", "/d"]
    s = load_settings(None, overrides_from(build_parser().parse_args(argv)))
    assert (s.tools.approval, s.tools.clarify) == ("auto", "fail")
    assert s.tools.resolved_workspace() == isolated_env.resolve()
    assert s.storage.data_dir == Path("/d")


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('[model]\ntimeout = "soon"\n', "model.timeout"),
        ("[model\n", "not valid TOML"),
        ("surprise = 1\n", "surprise: unknown key"),
        (None, "no such file"),
    ],
    ids=["bad-type", "bad-toml", "unknown-key", "missing"],
)
def test_bad_config_exits_2_with_one_error_line(
    isolated_env: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    needle: str,
) -> None:
    path = tmp_path / "conf.toml"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["--config", str(path), "-p", "hello"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n")
    assert err.startswith("error:")
    assert str(path) in err and needle in err


def test_bad_flag_value_exits_2(isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", "--model", "m"]) == 0
    capsys.readouterr()
    assert main(["--max-iterations", "0", "-p", "x"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error:") and err.count("\n") == 1
    assert "loop.max_iterations" in err
