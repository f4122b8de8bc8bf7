"""``soothe --thread ID``: a unique id prefix is enough (as ``soothe threads`` takes it);
an unknown or ambiguous id is one line saying so and where the ids are, and the
workbench does not open."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from soothe import cli
from soothe.engine.config import load_settings


def test_match_thread() -> None:
    ids = ["a1b2c3", "a1ff00", "9f0e1d"]
    assert cli.match_thread("9f", ids) == "9f0e1d"
    assert cli.match_thread("a1b", ids) == "a1b2c3"
    assert cli.match_thread("a1ff00", ids) == "a1ff00"
    with pytest.raises(cli.ThreadNotFound, match=r"^no thread 'zz' .*`soothe threads`"):
        cli.match_thread("zz", ids)
    with pytest.raises(cli.ThreadNotFound, match=r"start of 2 threads \(a1b2c3, a1ff00\)"):
        cli.match_thread("a1", ids)


def _threads(data_dir: Path, count: int) -> list[str]:
    from soothe.engine.context import ContextEngine

    settings = load_settings(overrides={"storage": {"data_dir": str(data_dir)}})

    async def make() -> list[str]:
        engine = await ContextEngine.open(settings.storage.db_path)
        try:
            return [(await engine.create_thread(f"t{i}")).id for i in range(count)]
        finally:
            await engine.close()

    return asyncio.run(make())


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The thread ids the workbench was opened with (it is not started for real)."""
    seen: list[str | None] = []

    def fake_tui(settings: object, thread_id: str | None = None, request: str | None = None) -> int:
        assert request is None
        seen.append(thread_id)
        return 0

    monkeypatch.setattr("soothe.app.tui.run_tui", fake_tui)
    return seen


def test_thread_prefix_opens_that_thread(
    tmp_path: Path, opened: list[str | None], capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    first, second = _threads(data, 2)
    common = next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b)
    assert cli.main(["--thread", first[: common + 1], "--data-dir", str(data)]) == 0
    assert opened == [first]
    assert cli.main(["--thread", second, "--data-dir", str(data)]) == 0
    assert opened == [first, second]


def test_unknown_or_ambiguous_thread_is_one_line(
    tmp_path: Path, opened: list[str | None], capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    _threads(data, 1)
    assert cli.main(["--thread", "nope", "--data-dir", str(data)]) == 1
    err = capsys.readouterr().err
    assert err == "error: no thread 'nope' (list the threads with `soothe threads`)\n"
    assert "install" not in err
    assert cli.main(["--thread", "", "--data-dir", str(data)]) == 0  # no id: a new thread
    assert opened == [None]
