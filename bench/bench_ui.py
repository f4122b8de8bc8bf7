"""UI figures: first frame, enter -> first token on screen, frames and key latency under load.

python bench/bench_ui.py [--runs N] [--seconds S]

- first frame: a fresh ``python -c`` runs the real app (no session given, so the engine
  would be imported in a worker after the first paint) in a pseudo-terminal; the figure is
  wall time from spawning the process to the screen's text arriving on the terminal.
  Targets: < 500 ms.
- enter -> first token: in-process, a zero-latency session that streams at once; from the
  enter key event to the first paint of the streamed text (headless frames).
- streaming 1,000 tokens/s: frames per second the screen is refreshed, and key latency
  (a key sent to the prompt -> the first frame after the prompt changed), median and p95.
  Target: < 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import sys
import termios
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FIRST_FRAME_CODE = """
import os, tempfile
os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp()
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp()
from soothe.engine.config import Settings
from soothe.app.main import SootheApp
SootheApp(Settings()).run()
"""
MARKER = b"Conversation"


def _first_frame_once(timeout: float = 10.0) -> float:
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "36"}
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: become the app
        os.execve(sys.executable, [sys.executable, "-c", FIRST_FRAME_CODE], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    seen = b""
    elapsed = float("nan")
    try:
        while time.perf_counter() - start < timeout:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if MARKER in seen:
                elapsed = time.perf_counter() - start
                break
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return elapsed


def first_frame(runs: int) -> list[float]:
    _first_frame_once()  # warm the file cache
    return [_first_frame_once() for _ in range(runs)]


class _PacedSession:
    """Builds on the test FakeSession: streams ``rate`` tokens/s for ``seconds``."""

    def __new__(cls, rate: float, seconds: float) -> Any:
        from tests.app.fake_session import FakeSession

        from soothe.engine import events as ev

        class Paced(FakeSession):
            async def run(self, text: str, *, autonomous: bool = False) -> AsyncIterator[Any]:
                yield self.publish(ev.RunStarted(text=text))
                yield self.publish(ev.GoalCreated(goal_id="G1", description="stream"))
                yield self.publish(ev.StepStarted(goal_id="G1", step_id="S1", description="write"))
                loop = asyncio.get_running_loop()
                begin = loop.time()
                sent = 0
                while (now := loop.time() - begin) < seconds:
                    due = int(now * rate) + 1
                    while sent < due:
                        text_piece = "word " if sent % 12 else "word\n"
                        yield self.publish(
                            ev.StepToken(goal_id="G1", step_id="S1", text=text_piece)
                        )
                        sent += 1
                    await asyncio.sleep(0.002)
                yield self.publish(ev.RunFinished(duration_s=seconds))

        return Paced()


async def _ui_figures(seconds: float) -> dict[str, float]:
    from textual import events

    from soothe.app.main import SootheApp
    from soothe.engine.config import Settings
    from soothe.widgets.stream_text import StreamText

    frames: list[float] = []
    first_text_paint: list[float] = []
    original_render_line = StreamText.render_line

    def render_line(self: StreamText, y: int) -> Any:
        if not first_text_paint:
            first_text_paint.append(time.perf_counter())
        return original_render_line(self, y)

    StreamText.render_line = render_line  # type: ignore[method-assign]
    try:
        session = _PacedSession(rate=1000.0, seconds=seconds)
        app = SootheApp(Settings(), session=session, animate=True)
        original_display = app._display

        def display(screen: Any, renderable: Any) -> None:
            if renderable is not None:
                frames.append(time.perf_counter())
            original_display(screen, renderable)

        app._display = display  # type: ignore[method-assign]
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause()
            await app.workers.wait_for_complete()
            driver = app._driver
            assert driver is not None

            def press(key: events.Key) -> None:
                key.set_sender(app)
                driver.send_message(key)  # the way a terminal key arrives

            app.prompt.value = "stream please"
            sent_at = time.perf_counter()
            press(events.Key("enter", "\r"))
            while not first_text_paint:
                await asyncio.sleep(0.001)
            enter_to_token = first_text_paint[0] - sent_at

            # key latency while the stream runs: a printable key every 100 ms
            stream_start = time.perf_counter()
            frames_before = len(frames)
            latencies: list[float] = []
            while time.perf_counter() - stream_start < seconds - 0.2:
                before = app.prompt.value
                key_at = time.perf_counter()
                press(events.Key("x", "x"))
                while app.prompt.value == before:
                    await asyncio.sleep(0.0005)
                changed = len(frames)
                while len(frames) == changed:
                    await asyncio.sleep(0.0005)
                latencies.append(frames[changed] - key_at)
                await asyncio.sleep(0.1)
            stream_time = time.perf_counter() - stream_start
            fps = (len(frames) - frames_before) / stream_time
            await app.workers.wait_for_complete()
            await app.handler.wait_idle()
            lines = app.main.stream.stream_line_count()
    finally:
        StreamText.render_line = original_render_line  # type: ignore[method-assign]
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))]
    return {
        "enter -> first token painted (ms)": enter_to_token * 1000,
        "frames/s while streaming 1000 tok/s": fps,
        "key latency while streaming, median (ms)": statistics.median(latencies) * 1000,
        "key latency while streaming, p95 (ms)": p95 * 1000,
        "stream rows held (cap 2000)": float(lines),
    }


def run(runs: int = 5, seconds: float = 3.0) -> dict[str, float]:
    frames = first_frame(runs)
    figures = {
        "first frame, median (ms)": statistics.median(frames) * 1000,
        "first frame, max (ms)": max(frames) * 1000,
    }
    figures.update(asyncio.run(_ui_figures(seconds)))
    width = max(len(name) for name in figures)
    print(
        f"UI, first frame over {runs} runs in a pty (120x36), "
        f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}"
    )
    for name, value in figures.items():
        print(f"  {name:<{width}}  {value:8.1f}")
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    run(args.runs, args.seconds)
