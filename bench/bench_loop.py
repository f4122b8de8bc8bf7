"""Engine overhead of the StrangeLoop with a zero-latency scripted model.

Figures (no assertions; target: < 150 ms for the whole 3-step plan):
- the 3-step plan (two parallel steps, then one that depends on both) end to end through
  ``Session.run``: median wall time of RUNS runs after a warm-up, in memory and on files
  (SQLite WAL + checkpoints written before each next node), and per step;
- the model calls of a one-step task, with each call's kind and prompt characters;
- the largest prompt seen, next to the projection bounds (``settings.projection``),
  also after a thread has grown (many earlier requests in the same thread).

Run: ``.venv/bin/python bench/bench_loop.py [--profile]``.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import pstats
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUNS = 20
TARGET_MS = 150.0
_STEP = re.compile(r"^Step (\S+):", re.MULTILINE)
_KINDS = {"Classification": "classify", "PlanGeneration": "plan", "StatusAssessment": "assess"}


def _kind(messages: list[Any], info: dict[str, Any]) -> str:
    schema = info["kwargs"].get("format")
    if isinstance(schema, dict):
        return _KINDS.get(str(schema.get("title")), "structured")
    system = str(messages[0].content)
    if system.startswith("You are the step executor"):
        match = _STEP.search(str(messages[1].content))
        return f"step:{match.group(1) if match else '?'}"
    return "complete" if system.startswith("Write the final answer") else "other"


class Router:
    """Replies by call kind (so parallel steps need no fixed order); logs every call."""

    def __init__(self, replies: dict[str, list[Any]]) -> None:
        self.replies = replies
        self.calls: list[tuple[str, int]] = []  # (kind, prompt chars)

    def __call__(self, messages: list[Any], info: dict[str, Any]) -> Any:
        from soothe.engine.llm.scripted import message_chars

        kind = _kind(messages, info)
        self.calls.append((kind, sum(message_chars(m) for m in messages)))
        items = self.replies[kind]
        return items[0] if len(items) == 1 else items.pop(0)


def three_step_router() -> Router:
    return Router(
        {
            "classify": [{"label": "complex", "answer": "", "reason": "several steps"}],
            "plan": [
                {
                    "steps": [
                        {"id": "S-01", "description": "read the README"},
                        {"id": "S-02", "description": "read the notes"},
                        {
                            "id": "S-03",
                            "description": "combine both",
                            "dependencies": ["S-01", "S-02"],
                        },
                    ],
                    "execution_mode": "parallel",
                }
            ],
            "step:S-01": ["The README describes a demo project."],
            "step:S-02": ["The notes list alpha and beta."],
            "step:S-03": ["A demo project; notes: alpha, beta."],
            "assess": [
                {
                    "status": "done",
                    "goal_progress": "complete",
                    "reasoning": "all steps done",
                    "require_goal_completion": False,
                }
            ],
        }
    )


def one_step_router() -> Router:
    from soothe.engine.llm.scripted import ScriptedReply

    return Router(
        {
            "classify": [{"label": "simple", "answer": "", "reason": "one tool call"}],
            "plan": [{"steps": [{"id": "S-01", "description": "list the workspace files"}]}],
            "step:S-01": [
                ScriptedReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}]),
                "README.md and notes.txt.",
            ],
        }
    )


def settings_for(root: Path) -> Any:
    from soothe.engine.config import load_settings

    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "README.md").write_text("# Demo\nA small demo project.\n")
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    return load_settings(
        overrides={
            "storage": {"data_dir": str(root / "data")},
            "tools": {"workspace": str(ws), "approval": "auto", "clarify": "auto"},
        }
    )


async def _session(root: Path, router: Router, files: bool) -> Any:
    from soothe.engine.llm.scripted import ScriptedChatModel
    from soothe.engine.session import Session

    where = {} if files else {"db_path": ":memory:", "checkpoint_path": ":memory:"}
    session = Session(
        settings_for(root), models={"default": ScriptedChatModel(responder=router)}, **where
    )
    await session.start()
    return session


async def _timed_runs(
    session: Any, text: str, runs: int, fresh_thread: bool = True
) -> tuple[list[float], list[float], list[Any]]:
    walls: list[float] = []
    steps: list[float] = []
    events: list[Any] = []
    for _ in range(runs):
        if fresh_thread:
            await session.new_thread()
        started = time.perf_counter()
        sub = session.bus.subscribe("*", maxsize=1_000_000)  # the run returns its outcome
        try:
            await session.run(text)
        finally:
            sub.close()
        events = sub.drain()
        walls.append(time.perf_counter() - started)
        begun = {e.step_id: e.ts for e in events if e.type == "step.started"}
        steps += [e.ts - begun[e.step_id] for e in events if e.type == "step.completed"]
    return walls, steps, events


async def _three_step(root: Path, files: bool) -> dict[str, float]:
    router = three_step_router()
    session = await _session(root, router, files)
    try:
        await _timed_runs(session, "summarise README and notes", 2)  # warm-up
        router.calls.clear()
        walls, steps, events = await _timed_runs(session, "summarise README and notes", RUNS)
    finally:
        await session.close()
    kinds = [k for k, _ in router.calls[: len(router.calls) // RUNS]]
    model_s = sum(e.duration_s for e in events if e.type == "usage")
    assert [e.step_id for e in events if e.type == "step.completed"][-1] == "S-03"
    return {
        "wall_ms": statistics.median(walls) * 1000,
        "wall_p90_ms": sorted(walls)[int(0.9 * len(walls)) - 1] * 1000,
        "step_ms": statistics.median(steps) * 1000,
        "inside_model_ms_last_run": model_s * 1000,
        "calls": float(len(kinds)),
        "max_prompt_chars": float(max(c for _, c in router.calls)),
    }


async def _one_step(root: Path) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    router = one_step_router()
    session = await _session(root, router, files=False)
    try:
        await _timed_runs(session, "what files are here?", 1)
        projection = session.settings.projection.model_dump()
    finally:
        await session.close()
    return router.calls, projection


async def _grown_thread(root: Path, runs: int) -> int:
    """The largest prompt after ``runs`` requests in one thread (history, ledger grow)."""
    router = three_step_router()
    session = await _session(root, router, files=False)
    try:
        await _timed_runs(session, "summarise README and notes " * 20, runs, fresh_thread=False)
    finally:
        await session.close()
    return max(c for _, c in router.calls)


async def _main(profile: bool) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        memory = await _three_step(root / "mem", files=False)
        disk = await _three_step(root / "disk", files=True)
        calls, projection = await _one_step(root / "one")
        grown = await _grown_thread(root / "grown", 30)
        if profile or memory["wall_ms"] > TARGET_MS:
            await _profile(root / "prof")

    print(f"3-step plan (2 parallel + 1 dependent), median of {RUNS} runs after a warm-up:")
    print(f"  model calls per run: {memory['calls']:.0f}")
    for name, fig in (("in memory", memory), ("on files", disk)):
        print(
            f"  {name:9}: wall {fig['wall_ms']:6.1f} ms (p90 {fig['wall_p90_ms']:.1f}), "
            f"per step {fig['step_ms']:.1f} ms, inside model calls "
            f"{fig['inside_model_ms_last_run']:.1f} ms   target < {TARGET_MS:.0f} ms"
        )
    print("one-step task (classify, plan, step with one tool call):")
    for i, (kind, chars) in enumerate(calls, 1):
        print(f"  call {i}: {kind:10} {chars:6d} prompt chars")
    print(f"  total: {len(calls)} calls, {sum(c for _, c in calls)} prompt chars")
    print(
        f"largest prompt: {int(memory['max_prompt_chars'])} chars (3-step plan), "
        f"{grown} chars after 30 requests in one thread"
    )
    print("  projection bounds: " + ", ".join(f"{k}={v}" for k, v in projection.items()))
    bound = projection["max_ledger_chars"] + projection["max_lineage_chars"]
    print(f"  (ledger + lineage bounds alone: {bound} chars)")

    figures["loop_3step_wall_ms"] = memory["wall_ms"]
    figures["loop_3step_per_step_ms"] = memory["step_ms"]
    figures["loop_3step_files_wall_ms"] = disk["wall_ms"]
    figures["loop_3step_model_calls"] = memory["calls"]
    figures["loop_1step_model_calls"] = float(len(calls))
    figures["loop_1step_prompt_chars"] = float(sum(c for _, c in calls))
    figures["loop_largest_prompt_chars"] = memory["max_prompt_chars"]
    figures["loop_largest_prompt_grown_chars"] = float(grown)
    return figures


async def _profile(root: Path) -> None:
    router = three_step_router()
    session = await _session(root, router, files=False)
    try:
        await _timed_runs(session, "summarise README and notes", 2)
        profiler = cProfile.Profile()
        profiler.enable()
        await _timed_runs(session, "summarise README and notes", 10)
        profiler.disable()
    finally:
        await session.close()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).sort_stats("cumulative")
    stats.print_stats(r"soothe|langgraph|langchain_core", 25)
    print("cProfile, 10 runs of the 3-step plan (cumulative, top 25):")
    print(out.getvalue())


def run(profile: bool = False) -> dict[str, float]:
    return asyncio.run(_main(profile))


if __name__ == "__main__":
    for name, value in run(profile="--profile" in sys.argv).items():
        print(f"{name:36} {value:10.1f}")
