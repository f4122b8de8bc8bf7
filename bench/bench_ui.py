"""Live-stream figures on the real engine: a 2,000-token reply, key echo while streaming,
two parallel streams at 500 tokens/s each; this tree and the base, alternated in one run.

python bench/bench_ui.py [--runs N] [--base DIR] [--seconds S] [--server thread]

Each run is a fresh process per tree (this tree and the base at --base, default
/tmp/base13; A B B A A B ..., so a machine that speeds up or slows down favours neither).
The process starts the real app (``SootheApp`` builds its real
``Session``, as ``soothe`` does) against the fake Ollama server of the same tree
(tests/fakes, real HTTP on loopback, the real ChatOllama client), headless at 120x40, and
sends three requests typed into the prompt the way a user does (``pilot.press``: each
character, then enter):

1. reply: one step whose model reply is 2,000 tokens sent as fast as the server writes.
   Figures: enter -> the first frame showing any of its tokens, enter -> the last token
   on screen.
2. stream: one step streaming 500 tokens/s for S seconds; meanwhile a printable key every
   100 ms, sent as the terminal driver sends keys. Key echo = the key sent -> the first
   frame that shows the prompt with it. Median, p95 and max per run.
3. parallel: two steps streaming 500 tokens/s each at the same time, and the same keys.
   Figures: each stream's lag (a token written by the server -> the first frame showing
   it; median, p95, max) and the key echo.

"On screen" is a frame the app hands to its driver: ``App._display`` is wrapped to time
every frame, render it to the escape sequences a terminal driver would write (the cost a
real terminal adds; written nowhere) and read its text. Tokens are numbered (``a0001``),
so a frame shows which token it brought. Per run, also the share of the machine's CPU time
the VM's host took (steal, /proc/stat: latencies grow with it) and what the app's main
thread spent while the streams ran (CPU ms per second, frames per second: steal does not
inflate them). Nothing here is a timed assertion.

The fake server runs in a process of its own, forked from the app's, as a real Ollama
does: in a thread of the app's process its Python work (1,000 lines/s written, each
paced by a sleep) would take the GIL from the app's event loop, a cost no user has.
``--server thread`` puts it back in the app's process, to see that cost.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BASE = Path("/tmp/base13")
RESULT = "BENCH_UI_RESULT "
SIZE = (120, 40)
REPLY_TOKENS = 2000
RATE = 500.0
KEY_EVERY_S = 0.1
CHILD_TIMEOUT_S = 240.0
MODEL = "llama3.2"
REQUESTS = ("write the long reply", "stream a reply slowly", "write two replies at once")


def tokens(label: str, count: int) -> list[str]:
    """``count`` numbered words (``a0001 ``), a line break after every twelfth."""
    return [f"{label}{i:04d}" + ("\n" if i % 12 == 0 else " ") for i in range(1, count + 1)]


def frame_text(update: Any) -> str:
    """The text a compositor update draws (its changed lines)."""
    rows: list[Any] = []
    if hasattr(update, "chops"):
        for chop in update.chops:
            rows.extend(strip for strip in chop.values() if strip is not None)
    elif hasattr(update, "strips"):
        rows.extend(update.strips)
    out = []
    for row in rows:
        text = getattr(row, "text", None)
        out.append(text if isinstance(text, str) else "".join(s.text for s in row))
    return "\n".join(out)


def spread(values: list[float]) -> dict[str, float]:
    """median, p95 and max in ms (nan when there is nothing)."""
    if not values:
        return {"median": float("nan"), "p95": float("nan"), "max": float("nan"), "n": 0}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "median": statistics.median(ordered) * 1000,
        "p95": p95 * 1000,
        "max": ordered[-1] * 1000,
        "n": len(ordered),
    }


# -- the child: one tree, one app, three requests -----------------------------------------


def start_like_run_tui() -> None:
    """Before importing the app, do what the tree's ``soothe`` does (``run_tui``): this
    tree's turns the cyclic garbage collector off until the engine is up (app/boot.py
    turns it back on); the base's does not."""
    if "gc.disable()" in Path("src/soothe/app/tui.py").read_text(encoding="utf-8"):
        gc.disable()


class Sent:
    """When each chunk of a reply was handed to the socket (perf_counter, the same clock
    in every process on Linux), in shared memory: the server's process appends, the
    app's reads. A list's ``append``, ``len``, indexing and iteration."""

    def __init__(self, capacity: int) -> None:
        import multiprocessing

        self._at = multiprocessing.RawArray("d", capacity)
        self._count = multiprocessing.RawValue("i", 0)

    def append(self, at: float) -> None:
        count = self._count.value
        if count >= len(self._at):
            return  # full: the figures use the first chunks, a reply past them is not lost
        self._at[count] = at  # the time first, then the count that shows it
        self._count.value = count + 1

    def __len__(self) -> int:
        return int(self._count.value)

    def __getitem__(self, index: int) -> float:
        count = len(self)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError(index)
        return float(self._at[index])

    def __iter__(self) -> Any:
        return iter(self._at[: len(self)])


def serve_apart(make_server: Any) -> tuple[str, Any]:
    """``make_server()`` started in a forked process of its own: its url and a stop()."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe()

    def serve() -> None:
        ours.close()  # this process's copy: the app's process going must read as EOF here
        server = make_server().start()
        theirs.send(server.url)
        with contextlib.suppress(EOFError):
            theirs.recv()  # until the app's process says stop (or goes)

    process = context.Process(target=serve, daemon=True)
    process.start()
    theirs.close()
    url = ours.recv()

    def stop() -> None:
        with contextlib.suppress(OSError):
            ours.send("stop")
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join()
        ours.close()

    return str(url), stop


async def child(seconds: float, server_in: str = "process") -> dict[str, Any]:
    from tests.fakes import FakeOllamaServer, FakeReply
    from tests.fakes.brain import Brain, prompt_text
    from textual import events

    from soothe.app.main import SootheApp
    from soothe.engine import config

    @dataclass
    class Paced(FakeReply):
        """A streamed reply written at ``rate`` tokens/s (0: as fast as the server writes);
        ``sent`` holds when each chunk was handed to the socket."""

        rate: float = 0.0
        sent: list[float] = field(default_factory=list)

        def chunks(self) -> Any:  # type: ignore[override]
            start = time.perf_counter()
            for index, piece in enumerate(super().chunks()):
                if self.rate:
                    due = start + index / self.rate
                    while (now := time.perf_counter()) < due:
                        time.sleep(min(due - now, 0.002))
                self.sent.append(time.perf_counter())
                yield piece

    def plan(request: str, *steps: str) -> dict[str, Any]:
        return {  # each step's words are the request's: the planner checks they belong
            "steps": [
                {"id": s, "description": f"{request} (part {s})", "dependencies": []} for s in steps
            ],
            "execution_mode": "parallel",
            "reasoning": "bench",
        }

    streamed = int(RATE * seconds)
    reply = Paced(stream_chunks=tokens("a", REPLY_TOKENS))
    stream = Paced(stream_chunks=tokens("b", streamed), rate=RATE)
    left = Paced(stream_chunks=tokens("c", streamed), rate=RATE)
    right = Paced(stream_chunks=tokens("d", streamed), rate=RATE)
    for paced in (reply, stream, left, right):
        paced.sent = Sent(len(paced.stream_chunks or ()))  # type: ignore[assignment]
    replies = ((reply,), (stream,), (left, right))
    steps = (("S-01",), ("S-01",), ("S-01", "S-02"))

    def current(body: dict[str, Any]) -> int:
        """Which request a call works for: the latest one its prompt names (a prompt
        names earlier requests only as history)."""
        text = prompt_text(body)
        return max(i for i, request in enumerate(REQUESTS) if request in text)

    def assess(body: dict[str, Any]) -> dict[str, Any]:
        """Done once the request's step replies were written out, else plan (afresh)."""
        done = all(
            r.sent and len(r.sent) == len(r.stream_chunks or ()) for r in replies[current(body)]
        )
        return {
            "status": "done" if done else "replan",
            "goal_progress": "complete" if done else "none",
            "reasoning": "bench",
            "require_goal_completion": done,
        }

    brain = Brain()
    brain.always["Classification"] = {"label": "simple", "answer": "", "reason": "bench"}
    brain.always["StatusAssessment"] = assess
    brain.always["PlanGeneration"] = lambda body: plan(
        REQUESTS[current(body)], *steps[current(body)]
    )
    brain.always["complete"] = "Done."
    brain.step("S-01", reply, stream, left)
    brain.step("S-02", right)

    tmp = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    (tmp / "ws").mkdir()

    def make_server() -> Any:
        return FakeOllamaServer(responder=brain, models=[MODEL], hang_limit=60.0)

    if server_in == "thread":
        server = make_server().start()
        url, stop_server = server.url, server.stop
    else:
        url, stop_server = serve_apart(make_server)
    overrides: dict[str, Any] = {
        "model": {"provider": "ollama", "name": MODEL, "base_url": url},
        "storage": {"data_dir": str(tmp / "data")},
        "tools": {"workspace": str(tmp / "ws"), "approval": "auto", "clarify": "auto"},
        "memory": {"max_recall": 0},
    }
    if hasattr(config, "NumPredictSettings"):  # no reply limit: the 2,000 tokens all come
        overrides["model"]["num_predict"] = {"step": 0}
    settings = config.load_settings(overrides=overrides)

    frames: list[tuple[float, str]] = []
    published: dict[str, dict[int, float]] = {}
    app = SootheApp(settings)
    original_display = app._display

    def display(screen: Any, renderable: Any) -> None:
        if renderable is not None:
            at = time.perf_counter()
            renderable.render_segments(app.console)  # what a terminal driver writes
            frames.append((at, frame_text(renderable)))
        original_display(screen, renderable)

    app._display = display  # type: ignore[method-assign]

    def first_frame_with(pattern: str, since: int = 0) -> float | None:
        for at, text in frames[since:]:
            if pattern in text:
                return at
        return None

    async def until(check: Any, timeout: float, what: str) -> None:
        deadline = time.perf_counter() + timeout
        while not check():
            if time.perf_counter() > deadline:
                calls = (
                    f"model calls: {brain.kinds()}, left: {brain.leftover()}"
                    if server_in == "thread"
                    else "the server's calls are in its own process"
                )
                raise TimeoutError(
                    f"no {what} within {timeout} s ({calls}, running: {app.running})"
                )
            await asyncio.sleep(0.002)

    out: dict[str, Any] = {}
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.session_ready, 60, "engine start")
            numbered = re.compile(r"\b([a-d])(\d{4})\b")

            def on_event(event: Any) -> None:  # when the engine published each token
                if getattr(event, "type", "") == "step.token":
                    at = time.perf_counter()
                    for label, n in numbered.findall(event.text):
                        published.setdefault(label, {})[int(n)] = at

            app.session.bus.add_listener(on_event)
            driver = app._driver
            assert driver is not None
            previous: Any = None

            def key(name: str, char: str | None) -> None:
                event = events.Key(name, char)
                event.set_sender(app)
                driver.send_message(event)  # the way a terminal key arrives

            async def request(text: str) -> float:
                nonlocal previous
                previous = app._run_worker
                app.prompt.focus()
                await pilot.press(*text)
                await until(lambda: app.prompt.value == text, 5, "typed request")
                sent = time.perf_counter()
                key("enter", "\r")
                return sent

            def run_done() -> bool:
                worker = app._run_worker
                return worker is not None and worker is not previous and worker.is_finished

            async def finished() -> None:
                await until(run_done, 90, "run end")
                await pilot.pause(0.2)

            async def echo_once(typed: int) -> float:
                """One key as a terminal sends it -> the first frame showing it typed."""
                before = len(frames)
                shown = "x" * typed
                at = time.perf_counter()
                key("x", "x")
                await until(lambda: len(app.prompt.value) == typed, 5, "key in the prompt")
                await until(lambda: first_frame_with(shown, before) is not None, 5, "echo")
                return first_frame_with(shown, before) - at  # type: ignore[operator]

            async def echoes(until_done: Any) -> list[float]:
                """A key every 100 ms while ``until_done()`` is false."""
                latencies: list[float] = []
                typed = len(app.prompt.value)
                while not until_done():
                    typed += 1
                    latencies.append(await echo_once(typed))
                    await asyncio.sleep(KEY_EVERY_S)
                return latencies

            async def clear_prompt() -> None:
                await pilot.press(*["backspace"] * len(app.prompt.value))
                await until(lambda: app.prompt.value == "", 5, "empty prompt")

            # 1. a 2,000-token reply as fast as it comes
            mark = len(frames)
            enter = await request(REQUESTS[0])
            last = tokens("a", REPLY_TOKENS)[-1].strip()
            await until(lambda: first_frame_with(last, mark) is not None, 60, "last token")
            # a live card shows its newest rows: the first frame may start past a0001
            first_at = next(
                (at for at, text in frames[mark:] if re.search(r"\ba\d{4}\b", text)), None
            )
            out["reply"] = {
                "enter_to_first_token_ms": ((first_at or float("nan")) - enter) * 1000,
                "enter_to_last_token_ms": (first_frame_with(last, mark) - enter) * 1000,  # type: ignore[operator]
                "server_first_chunk_ms": (reply.sent[0] - enter) * 1000,
                "server_last_chunk_ms": (reply.sent[-1] - enter) * 1000,
                "published_last_token_ms": (published["a"][REPLY_TOKENS] - enter) * 1000,
            }
            await finished()

            # 2. one stream at 500 tokens/s, keys meanwhile
            await request(REQUESTS[1])
            await until(lambda: len(stream.sent) > 0, 30, "stream start")
            spent = Spent.start(frames)
            echo = await echoes(lambda: len(stream.sent) >= streamed)
            out["stream"] = {"key_echo": spread(echo), **spent.stop(frames)}
            await finished()
            await clear_prompt()

            # 3. two parallel streams at 500 tokens/s each, keys meanwhile
            mark = len(frames)
            await request(REQUESTS[2])
            await until(lambda: left.sent and right.sent, 30, "both streams")
            spent = Spent.start(frames)
            echo = await echoes(lambda: len(left.sent) >= streamed and len(right.sent) >= streamed)
            used = spent.stop(frames)
            await finished()
            out["parallel"] = {
                **used,
                "key_echo": spread(echo),
                "lag_c": spread(stream_lags("c", left.sent, frames[mark:])),
                "lag_d": spread(stream_lags("d", right.sent, frames[mark:])),
                "engine_lag": spread(
                    [at - left.sent[n - 1] for n, at in published.get("c", {}).items()]
                    + [at - right.sent[n - 1] for n, at in published.get("d", {}).items()]
                ),
                "overlap_s": min(left.sent[-1], right.sent[-1]) - max(left.sent[0], right.sent[0]),
            }
    finally:
        stop_server()
    return out


@dataclass
class Spent:
    """What the app's main thread (the event loop: engine and screen) spent while a phase
    streamed, per second of it: CPU ms, and frames. CPU time does not count what the VM's
    host takes away (steal), so it compares trees on a noisy machine better than the
    latencies do."""

    cpu: float
    wall: float
    frames: int

    @classmethod
    def start(cls, frames: list[Any]) -> Spent:
        return cls(time.thread_time(), time.perf_counter(), len(frames))

    def stop(self, frames: list[Any]) -> dict[str, float]:
        wall = time.perf_counter() - self.wall
        return {
            "cpu_ms_per_s": (time.thread_time() - self.cpu) / wall * 1000,
            "frames_per_s": (len(frames) - self.frames) / wall,
        }


def stream_lags(label: str, sent: list[float], frames: list[tuple[float, str]]) -> list[float]:
    """For each frame that shows a newer token of stream ``label``: that frame's time minus
    when the server wrote the newest token it shows."""
    numbered = re.compile(rf"\b{label}(\d{{4}})\b")
    newest = 0
    lags = []
    for at, text in frames:
        shown = [int(n) for n in numbered.findall(text)]
        if shown and max(shown) > newest:
            newest = max(shown)
            lags.append(at - sent[newest - 1])
    return lags


# -- the parent: alternate the trees -------------------------------------------------------


def cpu_ticks() -> list[int]:
    """The machine's CPU time counters (/proc/stat: user ... steal), or [] off Linux."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            return [int(v) for v in stat.readline().split()[1:9]]
    except OSError:
        return []


def steal_share(before: list[int], after: list[int]) -> float:
    """The share of the machine's CPU time the VM's host took (steal) between two reads."""
    if len(before) < 8 or len(after) < 8:
        return float("nan")
    total = sum(after) - sum(before)
    return (after[7] - before[7]) / total * 100 if total else float("nan")


def run_child(tree: Path, seconds: float, server_in: str) -> dict[str, Any]:
    before = cpu_ticks()
    result = _run_child(tree, seconds, server_in)
    result["steal_pct"] = steal_share(before, cpu_ticks())
    return result


def _run_child(tree: Path, seconds: float, server_in: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOOTHE_", "OLLAMA_"))}
    env["PYTHONPATH"] = f"{tree / 'src'}{os.pathsep}{tree}"
    env.pop("NO_COLOR", None)
    proc = subprocess.run(
        [
            *(sys.executable, str(Path(__file__).resolve()), "--child"),
            *("--seconds", str(seconds), "--server", server_in),
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            result: dict[str, Any] = json.loads(line[len(RESULT) :])
            return result
    return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-3:]}


def fmt(s: dict[str, float]) -> str:
    return f"median {s['median']:5.1f}  p95 {s['p95']:5.1f}  max {s['max']:6.1f}  (n={s['n']})"


def machine_ms() -> float:
    """How long this machine takes for a fixed pure-Python loop (ms): a VM's speed varies
    through the day, and every figure here varies with it."""
    start = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i
    return (time.perf_counter() - start) * 1000


def run(
    runs: int = 5, seconds: float = 3.0, base: Path = BASE, server_in: str = "process"
) -> dict[str, float]:
    speed_before = machine_ms()
    trees = {"this tree": ROOT}
    if (base / "src" / "soothe").is_dir():
        trees["base"] = base
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    load = os.getloadavg()
    for index in range(runs):
        # alternated A B B A A B ...: a machine that speeds up or slows down through the
        # bench (it does) favours neither tree
        order = list(trees.items()) if index % 2 == 0 else list(reversed(trees.items()))
        for name, tree in order:
            results[name].append(run_child(tree, seconds, server_in))
    print(
        f"live stream on the real Session + fake Ollama, {runs} runs per tree alternated ABBA, "
        f"{SIZE[0]}x{SIZE[1]} headless, {RATE:.0f} tok/s streams of {seconds:.0f} s, "
        f"the fake server in {'the app' if server_in == 'thread' else 'its own'} process; "
        f"load average at start {load[0]:.2f} {load[1]:.2f}, at end "
        f"{os.getloadavg()[0]:.2f}; a 2M-step Python loop took {speed_before:.0f} ms before, "
        f"{machine_ms():.0f} ms after"
    )
    figures: dict[str, float] = {}
    for name, per_run in results.items():
        print(f"\n{name} ({trees[name]}):")
        good = [r for r in per_run if "error" not in r]
        for i, r in enumerate(per_run, 1):
            if "error" in r:
                print(f"  run {i}: FAILED {r['error']}")
                continue
            reply, stream, par = r["reply"], r["stream"], r["parallel"]
            print(
                f"  run {i}: 2,000-token reply: enter -> first token "
                f"{reply['enter_to_first_token_ms']:6.0f} ms, -> last token "
                f"{reply['enter_to_last_token_ms']:6.0f} ms (server wrote the first chunk at "
                f"{reply['server_first_chunk_ms']:.0f} ms, the last at "
                f"{reply['server_last_chunk_ms']:.0f} ms, the engine published the last token "
                f"at {reply['published_last_token_ms']:.0f} ms)"
            )
            print(
                f"         machine: {r['steal_pct']:.0f}% steal; main thread while streaming: "
                f"one stream {stream['cpu_ms_per_s']:.0f} CPU ms/s, "
                f"{stream['frames_per_s']:.0f} frames/s; two streams "
                f"{par['cpu_ms_per_s']:.0f} CPU ms/s, {par['frames_per_s']:.0f} frames/s"
            )
            print(f"         key echo, one stream:   {fmt(stream['key_echo'])}")
            print(f"         key echo, two streams:  {fmt(par['key_echo'])}")
            print(f"         stream 1 lag:           {fmt(par['lag_c'])}")
            print(f"         stream 2 lag:           {fmt(par['lag_d'])}")
            print(
                f"         of which engine (server wrote -> published, every token): "
                f"{fmt(par['engine_lag'])}"
            )
        if not good:
            continue
        short = "" if name == "this tree" else " (base)"
        figures[f"2000-token reply, enter -> last token, median (ms){short}"] = statistics.median(
            r["reply"]["enter_to_last_token_ms"] for r in good
        )
        for scenario, label in (("stream", "one stream"), ("parallel", "two streams")):
            figures[f"key echo {label}, worst run's max (ms){short}"] = max(
                r[scenario]["key_echo"]["max"] for r in good
            )
        figures[f"parallel streams lag, worst run's p95 (ms){short}"] = max(
            max(r["parallel"]["lag_c"]["p95"], r["parallel"]["lag_d"]["p95"]) for r in good
        )
        figures[f"two streams, main thread CPU ms per s, median{short}"] = statistics.median(
            r["parallel"]["cpu_ms_per_s"] for r in good
        )
    print()
    width = max(len(name) for name in figures)
    for name, value in figures.items():
        print(f"  {name:<{width}}  {value:8.1f}")
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--base", type=Path, default=BASE)
    parser.add_argument(
        "--server",
        choices=("process", "thread"),
        default="process",
        help="where the fake Ollama runs: its own process (as a real one), or a thread",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        start_like_run_tui()
        sys.path[:0] = [os.getcwd() + "/src", os.getcwd()]
        print(RESULT + json.dumps(asyncio.run(child(args.seconds, args.server))), flush=True)
    else:
        run(args.runs, args.seconds, args.base, args.server)
