"""First frame: `soothe` against a bare Textual app (Header, Input, Footer), measured the
same way and alternated in one run (A B A B ...), in a 120x40 pseudo-terminal.

The time is from spawning the process to the first bytes of a marker that only the
first full frame draws ("Conversation" for soothe, the footer's "palette" for the bare
app). Each process gets its own XDG dirs, so no data dir is shared and nothing is cached
between runs except the OS file cache (one warm-up run of each first).

python bench/bench_first_frame.py [--pairs N]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

PAIRS = 6
TIMEOUT_S = 20.0
BARE_APP = """
from textual.app import App
from textual.widgets import Footer, Header, Input

class Bare(App):
    def compose(self):
        yield Header()
        yield Input(placeholder="type")
        yield Footer()

Bare().run()
"""


def first_frame_ms(argv: list[str], marker: bytes, env: dict[str, str]) -> float:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    seen = b""
    try:
        while time.perf_counter() - start < TIMEOUT_S:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                if proc.poll() is not None:
                    raise RuntimeError(f"{argv} exited early:\n{seen[-2000:]!r}")
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            seen += chunk
            if marker in seen:
                return (time.perf_counter() - start) * 1000
        raise RuntimeError(f"no {marker!r} within {TIMEOUT_S} s:\n{seen[-2000:]!r}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        os.close(master)


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOOTHE_", "OLLAMA_"))}
    env.update(
        TERM="xterm-256color",
        COLORTERM="truecolor",
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CACHE_HOME=str(home / "cache"),
        SOOTHE_MODEL__PROVIDER="demo",
    )
    env.pop("NO_COLOR", None)
    return env


def soothe_argv() -> list[str]:
    script = Path(sys.executable).parent / "soothe"
    return [str(script)] if script.exists() else [sys.executable, "-m", "soothe"]


def run(pairs: int = PAIRS) -> dict[str, float]:
    bare_file = Path(tempfile.mkdtemp(prefix="bench-ff-")) / "bare.py"
    bare_file.write_text(BARE_APP)
    cases = {
        "bare Textual app": ([sys.executable, str(bare_file)], b"palette"),
        "soothe": (soothe_argv(), b"Conversation"),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-ff-") as tmp:
        for round_ in range(pairs + 1):  # round 0 warms the file cache
            for name, (argv, marker) in cases.items():
                home = Path(tmp) / f"{name.split()[0]}-{round_}"
                ms = first_frame_ms(argv, marker, environment(home))
                if round_:
                    times[name].append(ms)
    figures = {f"{name} first frame (ms)": statistics.median(v) for name, v in times.items()}
    bare = figures["bare Textual app first frame (ms)"]
    ours = figures["soothe first frame (ms)"]
    figures["ratio soothe / bare"] = ours / bare
    # each pair ran back to back: its ratio is less moved by load that comes and goes
    pair_ratios = [a / b for a, b in zip(times["soothe"], times["bare Textual app"], strict=True)]
    figures["median of pair ratios"] = statistics.median(pair_ratios)
    print(
        f"first frame, 120x40 pty, median of {pairs} alternated pairs, "
        f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}, "
        f"load average {load[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end"
    )
    for name, values in times.items():
        print(
            f"  {name:<18} median {statistics.median(values):7.1f} ms   runs "
            + " ".join(f"{v:.0f}" for v in values)
        )
    print(f"  ratio soothe / bare: {ours / bare:.2f}x (goal: 1.5x or less)")
    print(
        f"  per pair: median {statistics.median(pair_ratios):.2f}x, "
        + " ".join(f"{r:.2f}" for r in pair_ratios)
    )
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=PAIRS)
    run(parser.parse_args().pairs)
