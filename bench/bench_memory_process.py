"""Memory of the process people run: `soothe --provider demo` in a terminal (tmux, 120x40),
100 requests typed one after another, RSS read from /proc/PID/status (VmRSS).

python bench/bench_memory_process.py [--requests 10,30,50,100] [--dump DIR]

Each request is typed into the prompt and sent with enter; the next one is typed only
when the screen says this one finished (the status line went from "running" back to
"idle", or changed while idle for a run too quick to be seen running). The process has
its own XDG dirs, data dir and workspace. Target: at most 150 MB after 100 requests,
flat (within 10 MB) from request 50 to 100.

With --dump DIR the app is started with SOOTHE_MEMDUMP=DIR (app/memdump.py): on SIGUSR1
(sent at start and at each checkpoint) it writes a census of its live objects by type;
the bench prints the types that grew most between the last two checkpoints, and where
the memory was at each (``heap-NNN.txt``: RSS, Python's allocated blocks, glibc's heap in
use and free-but-kept, ``mallinfo2``). With
--trace too it runs with SOOTHE_TRACEMALLOC=DIR (tracemalloc from the start, several
times slower) and the bench also prints the allocation sites that grew most.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUESTS = ["Summarise README.md in one line", "What is 2+2?", "List the files here"]
SOCKET = f"soothe-mem-{os.getpid()}"
TIMEOUT_S = 60.0
DUMP_TIMEOUT_S = 600.0


def tmux(*args: str) -> str:
    out = subprocess.run(["tmux", "-L", SOCKET, *args], check=True, capture_output=True, text=True)
    return out.stdout


def screen() -> list[str]:
    return tmux("capture-pane", "-p", "-t", "mem").splitlines()


def status_line() -> str:
    """The status line (under the prompt box): 'idle │ demo model …' or '◐ running │ …'."""
    for line in reversed(screen()):
        text = line.strip()
        if text.startswith(("idle", "◐")):
            return text
    return ""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def wait_for(test: object, what: str, timeout: float | None = None) -> None:
    deadline = time.monotonic() + (timeout or TIMEOUT_S)
    while time.monotonic() < deadline:
        if test():  # type: ignore[operator]
            return
        time.sleep(0.03)
    raise SystemExit(f"timed out waiting for {what}:\n" + "\n".join(screen()))


def send(text: str) -> None:
    """Type one request, send it, and wait until the screen shows it finished."""
    before = status_line()
    tmux("send-keys", "-t", "mem", "-l", text)
    tmux("send-keys", "-t", "mem", "Enter")
    seen_running = False

    def finished() -> bool:
        nonlocal seen_running
        now = status_line()
        if now.startswith("◐"):
            seen_running = True
            return False
        return now.startswith("idle") and (seen_running or now != before)

    wait_for(finished, f"the request {text!r} to finish")


def settle(pid: int, timeout: float = 30.0) -> None:
    """Wait until the RSS holds still for two seconds (or ``timeout``)."""
    deadline = time.monotonic() + timeout
    last, still = rss_mb(pid), 0
    while time.monotonic() < deadline and still < 4:
        time.sleep(0.5)
        now = rss_mb(pid)
        still = still + 1 if abs(now - last) < 0.5 else 0
        last = now


def signal_dump(pid: int, dump: Path) -> None:
    """Ask the app for a census (SIGUSR1) and wait until it is written."""
    before = len(list(dump.glob("census-*.txt")))
    os.kill(pid, signal.SIGUSR1)
    wait_for(lambda: len(list(dump.glob("census-*.txt"))) > before, "the census")
    time.sleep(0.5)


def app_pid() -> int:
    return int(tmux("display-message", "-p", "-t", "mem", "#{pane_pid}").strip())


def main(checkpoints: list[int], dump: Path | None, trace: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        workspace = base / "ws"
        workspace.mkdir()
        (workspace / "README.md").write_text("# Kettle\nA tool that boils water.\n")
        (base / "config.toml").write_text("")
        env = {
            "XDG_CONFIG_HOME": str(base / "config"),
            "XDG_DATA_HOME": str(base / "data"),
            "XDG_CACHE_HOME": str(base / "cache"),
            "XDG_STATE_HOME": str(base / "state"),
            "TERM": "xterm-256color",
        }
        if dump is not None:
            dump.mkdir(parents=True, exist_ok=True)
            env["SOOTHE_MEMDUMP"] = str(dump)
            if trace:
                global TIMEOUT_S
                TIMEOUT_S = DUMP_TIMEOUT_S  # tracing makes everything several times slower
                env["SOOTHE_TRACEMALLOC"] = str(dump)
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        soothe = shlex.quote(str(ROOT / ".venv" / "bin" / "soothe"))
        command = (
            f"cd {shlex.quote(str(workspace))} && exec env {exports} {soothe} "
            f"--provider demo --config {shlex.quote(str(base / 'config.toml'))} "
            f"--data-dir {shlex.quote(str(base / 'store'))}"
        )
        tmux("new-session", "-d", "-s", "mem", "-x", "120", "-y", "40", command)
        try:
            pid = app_pid()
            wait_for(lambda: status_line().startswith("idle"), "the first frame")
            settle(pid)  # the engine is imported and started behind the first frame
            print(f"start: {rss_mb(pid):.0f} MB (pid {pid})", flush=True)
            if dump is not None:
                signal_dump(pid, dump)
            done = 0
            figures: dict[int, float] = {}
            began = time.perf_counter()
            for target in sorted(checkpoints):
                while done < target:
                    send(REQUESTS[done % len(REQUESTS)])
                    done += 1
                time.sleep(1.0)  # let the last frame and any deferred work settle
                figures[done] = rss_mb(pid)
                per = (time.perf_counter() - began) / done
                print(
                    f"after {done} requests: {figures[done]:.0f} MB ({per:.2f} s per request)",
                    flush=True,
                )
                if dump is not None:
                    signal_dump(pid, dump)
            if 50 in figures and 100 in figures:
                print(f"growth 50 -> 100: {figures[100] - figures[50]:+.1f} MB", flush=True)
        finally:
            subprocess.run(["tmux", "-L", SOCKET, "kill-server"], check=False)
        if dump is not None:
            report_growth(dump)


def report_heap(dump: Path) -> None:
    """Each checkpoint's heap figures (app/memdump.heap): RSS; Python's allocated blocks
    before and after a full collection, the garbage it found, how many full collections
    the app had run and the longest since the last checkpoint (ms); glibc's heap in use
    and free-but-kept (MB)."""
    columns = [
        ("VmRSS", "VmRSS", 1024),
        ("blocks", "pyblocks", 0),
        ("gc_found", "gc_found", 0),
        ("full_gcs", "gc_full_runs", 0),
        ("gc_max_ms", "gc_full_ms_max", 0),
        ("blocks_gc", "after_gc_pyblocks", 0),
        ("malloc", "after_gc_uordblks", 2**20),
        ("kept_free", "after_gc_fordblks", 2**20),
    ]
    print("heap at each checkpoint (MB; blocks: Python's allocated blocks):")
    print("  " + " ".join(f"{title:>10}" for title, _, _ in columns))
    for path in sorted(dump.glob("heap-*.txt")):
        values = dict(line.split(" ", 1) for line in path.read_text().splitlines() if line)
        cells = []
        for _, key, unit in columns:
            value = int(float(values.get(key, "0").split()[0]))
            cells.append(f"{value / unit:>10.1f}" if unit else f"{value:>10d}")
        print("  " + " ".join(cells))


def report_growth(dump: Path) -> None:
    import tracemalloc

    time.sleep(0.5)
    report_heap(dump)
    counts = sorted(dump.glob("census-*.txt"))
    if len(counts) >= 2:
        older, newer = (read_census(path) for path in counts[-2:])
        grown = sorted(((n - older.get(k, 0), n, k) for k, n in newer.items()), reverse=True)
        print(f"objects that grew most, {counts[-2].name} -> {counts[-1].name}:")
        for diff, n, name in grown[:25]:
            print(f"  {diff:+7d} {n:8d} {name}")
    snaps = sorted(dump.glob("snapshot-*.pickle"))
    if len(snaps) < 2:
        return
    older = tracemalloc.Snapshot.load(str(snaps[-2]))
    newer = tracemalloc.Snapshot.load(str(snaps[-1]))
    print(f"growth {snaps[-2].name} -> {snaps[-1].name}:")
    for stat in newer.compare_to(older, "traceback")[:15]:
        print(f"  {stat.size_diff / 1024:+8.0f} KiB {stat.count_diff:+7d} blocks")
        for line in stat.traceback.format()[-8:]:
            print(f"      {line}")


def read_census(path: Path) -> dict[str, int]:
    pairs = (line.split(" ", 1) for line in path.read_text().splitlines() if line)
    return {name: int(n) for n, name in pairs}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", default="10,30,50,100")
    parser.add_argument("--dump", type=Path, default=None)
    parser.add_argument("--trace", action="store_true", help="with --dump: tracemalloc too")
    args = parser.parse_args()
    main([int(n) for n in args.requests.split(",")], args.dump, args.trace)
    sys.exit(0)
