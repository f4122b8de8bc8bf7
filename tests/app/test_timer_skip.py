"""A late interval timer ticks at the first tick of its grid after now, not the second:
``textual_fixes``' timer skip. The screen's update timer is late after every frame, so
without it a key typed during a frame waited a whole extra frame period for its echo.

The timer runs on a fake clock (Textual's ``_time``), so nothing here depends on how
fast the machine is."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from textual import _time
from textual import timer as timer_module
from textual._context import active_app
from textual.timer import Timer

from soothe.widgets import textual_fixes

INTERVAL = 0.05


class Owner:
    """What a timer is set on (it holds it weakly)."""


def test_textual_still_skips_one_tick_too_many() -> None:
    """The fix is for this line of the pinned Textual: re-check it on an upgrade."""
    source = inspect.getsource(textual_fixes.TEXTUAL_TIMER_RUN)
    assert "count = int((now - start) / _interval + 1)" in source
    textual_fixes.apply()
    assert "timer skip" in textual_fixes.applied()


class Clock:
    """Time that moves only when the timer sleeps or a tick says it took long."""

    def __init__(self) -> None:
        self.now = 0.0

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)
        await asyncio.sleep(0)


def ticks_of(
    run: Callable[[Timer], Any],
    monkeypatch: pytest.MonkeyPatch,
    on_tick: Callable[[Timer, Clock, int], None],
    count: int,
) -> list[float]:
    """When a timer of INTERVAL ticked its first ``count`` times, run by ``run`` on a fake clock;
    ``on_tick(timer, clock, n)`` plays what the n-th tick does (takes long, pauses)."""
    clock = Clock()
    monkeypatch.setattr(_time, "get_time", clock.time)
    monkeypatch.setattr(_time, "sleep", clock.sleep)
    monkeypatch.setattr(timer_module, "sleep", clock.sleep)  # Textual's loop imported it
    at: list[float] = []
    owner = Owner()

    def tick() -> None:
        at.append(round(clock.now, 6))
        on_tick(timer, clock, len(at))

    timer = Timer(owner, INTERVAL, callback=tick)  # type: ignore[arg-type]

    async def main() -> None:
        def fail(error: BaseException) -> None:
            raise error

        app = SimpleNamespace(_exit=False, _handle_exception=fail, features=frozenset())
        token = active_app.set(app)  # type: ignore[arg-type]
        try:
            task = asyncio.get_running_loop().create_task(run(timer))
            for _ in range(100_000):
                if len(at) >= count or task.done():
                    break
                await asyncio.sleep(0)
            task.cancel()
        finally:
            active_app.reset(token)

    asyncio.run(main())
    return at


def slow_first(timer: Timer, clock: Clock, n: int) -> None:
    if n == 1:
        clock.now += 0.06  # a 60 ms frame: the timer falls behind its 0.10 tick


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        (textual_fixes._run_timer_on_grid, [0.05, 0.15, 0.2]),
        pytest.param(
            textual_fixes.TEXTUAL_TIMER_RUN,
            [0.05, 0.2, 0.25],
            id="textual-skips-0.15",
        ),
    ],
)
def test_a_timer_that_fell_behind_ticks_at_the_next_tick_after_now(
    monkeypatch: pytest.MonkeyPatch, run: Callable[[Timer], Any], expected: list[float]
) -> None:
    """The first tick ends at 0.11: the next due is 0.15 (0.10 is missed and skipped)."""
    assert ticks_of(run, monkeypatch, slow_first, count=3) == expected


def paused_until_resumed_off_grid(timer: Timer, clock: Clock, n: int) -> None:
    """What the screen's update timer does: each frame pauses it; something that needs
    painting resumes it later, here 0.033 s after the grid's 0.35 tick."""
    if n == 1:
        timer.pause()

        async def resume() -> None:
            while clock.now < 0.383:
                await clock.sleep(0.001)
            timer.resume()

        asyncio.get_running_loop().create_task(resume())


def test_a_resumed_timer_ticks_at_once_then_on_its_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    ours = ticks_of(
        textual_fixes._run_timer_on_grid, monkeypatch, paused_until_resumed_off_grid, count=3
    )
    assert ours[0] == 0.05
    assert ours[1] == pytest.approx(0.383, abs=0.002)  # at once when resumed
    assert ours[2] == pytest.approx(0.4)  # the next tick of the grid: 17 ms later
    theirs = ticks_of(
        textual_fixes.TEXTUAL_TIMER_RUN, monkeypatch, paused_until_resumed_off_grid, count=3
    )
    assert theirs[2] == pytest.approx(0.45)  # Textual's: 67 ms later
