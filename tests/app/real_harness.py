"""The real engine behind UI tests: a `Session` talking to the fake Ollama server.

`Rig` starts a `FakeOllamaServer` whose replies come from a `Brain` (replies by what a
call is for, so parallel steps do not depend on arrival order), and builds the real
`soothe.engine.session.Session` against it over loopback HTTP with the real ChatOllama
client: the classifier, planner, executor, tools, approval gate, store and checkpoints
are the ones a user runs. Nothing on the engine side is replaced except two things a
snapshot cannot have: random ids and wall-clock durations (`still_engine`).

Waiting is by condition, never by a bare sleep: `until(check)` polls with a bound;
`settle` waits for the app's workers and the event handler; `Pause` holds a stream
after its first chunks (the server thread blocks, as a slow model would) until the
test releases it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from textual.pilot import Pilot

from soothe.app.main import SootheApp
from soothe.engine.config import Settings, load_settings
from soothe.engine.session import Session
from soothe.widgets.footer import SteadyFooter
from tests.fakes import FakeOllamaServer, FakeReply
from tests.fakes.brain import Brain

MODEL = "llama3.2"
PAUSE_LIMIT_S = 20.0


def classify(label: str, answer: str = "") -> dict[str, Any]:
    return {"label": label, "answer": answer, "reason": "scripted"}


def step(id: str, description: str, deps: list[str] | None = None, **extra: Any) -> dict:
    return {"id": id, "description": description, "dependencies": deps or [], **extra}


def plan(*steps: dict, mode: str = "parallel", reasoning: str = "scripted") -> dict[str, Any]:
    return {"steps": list(steps), "execution_mode": mode, "reasoning": reasoning}


def assess(status: str, *, progress: str = "medium", completion: bool = True) -> dict[str, Any]:
    return {
        "status": status,
        "goal_progress": progress,
        "reasoning": f"scripted {status}",
        "require_goal_completion": completion,
    }


@dataclass
class Pause(FakeReply):
    """A streamed reply that stops after ``after`` chunks until ``release`` is set (at
    most 20 s), like a model that is still generating; ``reached`` is set when it stops."""

    after: int = 1
    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def chunks(self) -> Iterator[str]:  # type: ignore[override]
        for index, piece in enumerate(super().chunks()):
            if index == self.after:
                self.reached.set()
                self.release.wait(PAUSE_LIMIT_S)
            yield piece


class StillClock:
    """``time`` for the engine modules that stamp or time things: ``perf_counter`` stands
    still (every duration is 0.0) and ``time()`` is ``wall`` (the store's timestamps,
    which the threads screen shows), moved only by the test (``at``); the rest is the
    real ``time`` module."""

    def __init__(self) -> None:
        self.wall = datetime(2025, 3, 3, 8, 0).timestamp()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def at(self, *when: int) -> None:
        """Stamp what the store writes from now on with ``datetime(*when)`` (local)."""
        self.wall = datetime(*when).timestamp()  # type: ignore[arg-type]

    def time(self) -> float:
        return self.wall

    @staticmethod
    def perf_counter() -> float:
        return 0.0


def still_engine(monkeypatch: pytest.MonkeyPatch) -> StillClock:
    """Thread ids t-0001, t-0002 ... instead of random hex; durations 0.0; the store's
    clock still (see `StillClock`). Only the engine modules named here are touched."""
    counter = itertools.count(1)
    monkeypatch.setattr(
        "soothe.engine.context.threads.uuid",
        SimpleNamespace(uuid4=lambda: SimpleNamespace(hex=f"t-{next(counter):04d}")),
    )
    clock = StillClock()
    for module in (
        "soothe.engine.runner.base",
        "soothe.engine.runner.route",
        "soothe.engine.loop.executor",
        "soothe.engine.context.unit",
    ):
        monkeypatch.setattr(f"{module}.time", clock)
    return clock


class Rig:
    """A fake Ollama server driven by ``brain`` and the settings to reach it; ``app()``
    builds a SootheApp that starts the real Session itself (as ``soothe`` does)."""

    def __init__(
        self,
        tmp_path: Path,
        server: FakeOllamaServer,
        brain: Brain,
        clock: StillClock | None = None,
        **sections: Any,
    ) -> None:
        self.tmp_path = tmp_path
        self.clock = clock
        self.server = server
        self.brain = brain
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir(exist_ok=True)
        (self.workspace / "README.md").write_text(
            "# Soothe\nA terminal workbench for goal-driven agents.\n"
        )
        self.data_dir = tmp_path / "data"
        self.sections = sections
        self.settings = self.make_settings()

    def make_settings(self) -> Settings:
        overrides: dict[str, Any] = {
            "model": {"provider": "ollama", "name": MODEL, "base_url": self.server.url},
            "storage": {"data_dir": str(self.data_dir)},
            "tools": {"workspace": str(self.workspace), "approval": "auto", "clarify": "auto"},
            "memory": {"max_recall": 0},
        }
        for name, values in self.sections.items():
            overrides[name] = {**overrides.get(name, {}), **values}
        return load_settings(overrides=overrides)

    def use_workspace(self, path: Path) -> None:
        """Work in ``path`` (with the same README.md) instead of tmp_path/ws."""
        (path / "README.md").write_text((self.workspace / "README.md").read_text())
        self.workspace = path
        self.settings = self.make_settings()

    def configure(self, **sections: Any) -> Settings:
        """Change settings sections (e.g. ``tools={"approval": "ask"}``) before ``app()``."""
        for name, values in sections.items():
            self.sections[name] = {**self.sections.get(name, {}), **values}
        self.settings = self.make_settings()
        return self.settings

    def session(self, thread_id: str | None = None) -> Session:
        return Session(self.settings, thread_id=thread_id, check_server=True)

    def app(self, thread_id: str | None = None, **kwargs: Any) -> SootheApp:
        """A SootheApp on a real Session; a still clock, no animation, long toasts."""
        kwargs.setdefault("clock", lambda: 100.0)
        kwargs.setdefault("animate", False)
        app = SootheApp(self.settings, thread_id, session=self.session(thread_id), **kwargs)
        app.NOTIFICATION_TIMEOUT = 120  # type: ignore[misc]  # toasts outlive a slow run
        return app


FIXED_WORKSPACE = Path("/tmp/soothe-demo")


@contextlib.contextmanager
def fixed_workspace() -> Iterator[Path]:
    """/tmp/soothe-demo, emptied, for screens that show the workspace path (a tmp_path
    differs every run); an flock keeps two test processes on the machine apart."""
    with open(f"{FIXED_WORKSPACE}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            shutil.rmtree(FIXED_WORKSPACE, ignore_errors=True)
            FIXED_WORKSPACE.mkdir()
            yield FIXED_WORKSPACE
        finally:
            shutil.rmtree(FIXED_WORKSPACE, ignore_errors=True)
            fcntl.flock(lock, fcntl.LOCK_UN)


# --- scripts: what the model answers, per kind of call -----------------------------------


def quiz(brain: Brain, answer: str) -> None:
    """A request the classifier answers itself (one model call)."""
    brain.add("Classification", classify("quiz", answer))


def readme_flow(brain: Brain, *, final: str = "Soothe is a terminal workbench.") -> None:
    """One goal, two steps: S-01 reads README.md with a tool, S-02 (after it) writes the
    summary; then the assessment says done and the completion call writes ``final``."""
    brain.add("Classification", classify("simple"))
    brain.add(
        "PlanGeneration",
        plan(
            step("S-01", "Read README.md"),
            step("S-02", "Write the summary", ["S-01"]),
            reasoning="Read the file first, then summarise it.",
        ),
    )
    brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "README.md"}}]),
        "README.md says Soothe is a terminal workbench for goal-driven agents.",
    )
    brain.step("S-02", "Soothe is a terminal workbench for goal-driven agents, run locally.")
    brain.add("StatusAssessment", assess("done", progress="complete"))
    brain.add("complete", final)


def long_step_flow(brain: Brain, rows: int, held_at: int) -> Pause:
    """One goal, one step that streams ``rows`` rows ("row 000" ...), one chunk per row;
    the reply stops after ``held_at`` rows until released (text longer than a live box)."""
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01", "Write many rows")))
    lines = [f"row {i:03d}\n" for i in range(rows)]
    reply = Pause(text="".join(lines), stream_chunks=lines, after=held_at)
    brain.step("S-01", reply)
    brain.add("StatusAssessment", assess("done", progress="complete"))
    brain.add("complete", "The rows are written.")
    return reply


def parallel_flow(brain: Brain) -> tuple[Pause, Pause]:
    """One goal, two independent steps that stream at the same time; each stops after a
    few words until released. S-01 calls a tool first."""
    brain.add("Classification", classify("complex"))
    brain.add(
        "PlanGeneration",
        plan(step("S-01", "Read the README"), step("S-02", "Write a haiku about tests")),
    )
    first = Pause(
        text="The README describes a small demo project: one heading and one line of text.",
        after=5,
    )
    second = Pause(
        text="Green checks at dawn, the fake server hums along, the real engine replies.",
        after=7,
    )
    brain.step(
        "S-01", FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "README.md"}}]), first
    )
    brain.step("S-02", second)
    brain.add("StatusAssessment", assess("done", progress="complete"))
    brain.add("complete", "The README describes a demo project; the haiku is written.")
    return first, second


@pytest.fixture
def brain() -> Brain:
    return Brain()


@pytest.fixture
def ollama(brain: Brain) -> Iterator[FakeOllamaServer]:
    server = FakeOllamaServer(responder=brain, models=[MODEL], hang_limit=5.0)
    with server:
        yield server
    assert not server.errors, "fake Ollama server crashed:\n" + "\n".join(server.errors)


@pytest.fixture
def rig(
    tmp_path: Path, ollama: FakeOllamaServer, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> Rig:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    return Rig(tmp_path, ollama, brain, still_engine(monkeypatch))


async def until(
    check: Callable[[], object], pilot: Pilot[Any] | None = None, *, timeout: float = 10.0
) -> None:
    """Poll ``check`` until it is true (letting the app run between polls), at most
    ``timeout`` seconds; fail with the check's source otherwise."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {check}")
        if pilot is not None:
            await pilot.pause(0.02)
        else:
            await asyncio.sleep(0.02)


async def settle(app: SootheApp, pilot: Pilot[Any]) -> None:
    """Workers done, every published event applied, the stream scrolled, painted."""
    await pilot.pause()
    # every worker to its end; an interrupted run ends cancelled (its wait() raises)
    while pending := [w for w in app.workers if not w.is_finished]:
        done, _ = await asyncio.wait([asyncio.ensure_future(w.wait()) for w in pending])
        for future in done:  # retrieved: a cancelled run is expected here
            _ = future.cancelled() or future.exception()
    await app.handler.wait_idle()
    await pilot.pause()
    stream = app.main.stream
    for _ in range(100):  # the stream's follow-scroll lands after a refresh (bounded)
        if not stream.follow or stream._at_end():
            break
        await pilot.pause(0.02)
    for footer in app.screen.query(SteadyFooter):  # the screen on top may have none
        for _ in range(100):  # it recomposes after a refresh once the keys changed
            if footer._shown == footer._keys():
                break
            await pilot.pause(0.02)
    assert not app.handler.errors, app.handler.errors


async def ready(app: SootheApp, pilot: Pilot[Any]) -> None:
    """The engine has started (the real Session's start() and server check ran)."""
    await until(lambda: app.session_ready or app.engine_failed, pilot, timeout=30)
    await settle(app, pilot)


async def send(app: SootheApp, pilot: Pilot[Any], text: str) -> None:
    """Put ``text`` in the prompt and press enter."""
    app.prompt.focus()
    app.prompt.value = text
    await pilot.press("enter")


async def wait_event(event: threading.Event, pilot: Pilot[Any], timeout: float = 15.0) -> None:
    """Wait for a server-thread event (a `Pause` reached, a Brain call seen)."""
    await until(event.is_set, pilot, timeout=timeout)


def screen_text(app: SootheApp) -> str:
    """The screen as plain text: what a snapshot shows, without the styling (as
    ``App.export_screenshot`` renders it, exported as text instead of SVG)."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), force_terminal=True, record=True
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text()


def panel(text: str, title: str) -> list[str]:
    """The inside of the bordered panel titled ``title`` on a `screen_text` screen, one
    string per row (right-stripped), without its border rows."""
    lines = text.splitlines()
    tops = [(row, line.find(f"╭─ {title}")) for row, line in enumerate(lines)]
    found = [(row, col) for row, col in tops if col >= 0]
    if not found:
        raise AssertionError(f"no panel {title!r} on screen:\n{text}")
    top, start = found[0]
    end = lines[top].index("╮", start)
    rows = []
    for line in lines[top + 1 :]:
        if line[start : start + 1] == "╰":
            break
        rows.append(line[start + 1 : end].rstrip())
    return rows
