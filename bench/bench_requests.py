"""Model calls and prompt characters per request type, with a zero-latency scripted model.

Runs these requests through the real Session/runner/loop/agent (only the model is scripted):
a quiz, a one-step one-tool task, a 3-step plan ("list files and summarize README"), an
autonomous request split into two dependent goals, and a follow-up in the thread of the
one-tool task ("follow_up": answered from what the thread knows, continuation intake) next
to the same follow-up taken as a fresh request ("follow_up_fresh", the behaviour before
the continuation intake: classify, a new plan, a step that must look again, having no
evidence of the earlier goal); only the follow-up's calls count. Prints calls, total and
largest prompt per request, the bound the largest prompt must stay under (the fixed
instructions plus the projection and the other bounded sections), and the peer's figures
next to ours.

Targets: quiz 1 call; one-step one-tool task <= 4 calls; every prompt within its bound.
Run: ``.venv/bin/python bench/bench_requests.py``.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

# What the system the seeds describe took (NOTES.md, measured on the same machines).
PEER = {
    "quiz": "1 or 5 calls, ~49,000 prompt chars",
    "plan3": "7 calls, ~115,000 prompt chars",
}

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": False}
TOOL_STEP = {"S-01": ("list_dir", {"path": "."}), "S-02": ("read_file", {"path": "README.md"})}


@dataclass
class Scenario:
    key: str
    text: str
    autonomous: bool
    replies: dict[str, list[Any]]
    prelude: str = ""
    """A request run first in the same thread (its calls are not counted)."""
    fresh: bool = False
    """Take the request as a fresh one even in a thread with finished goals."""


def scenarios() -> list[Scenario]:
    plan3 = {
        "steps": [
            {"id": "S-01", "description": "List the files in the workspace"},
            {"id": "S-02", "description": "Read README.md", "dependencies": ["S-01"]},
            {"id": "S-03", "description": "Summarise the README", "dependencies": ["S-02"]},
        ],
        "execution_mode": "dependency",
    }
    return [
        Scenario(
            "quiz",
            "What is 2+2?",
            False,
            {"Classification": [{"label": "quiz", "answer": "2 + 2 = 4."}]},
        ),
        Scenario(
            "one_tool",
            "Which files are in the workspace?",
            False,
            {
                "Classification": [{"label": "simple", "reason": "one tool call"}],
                "PlanGeneration": [{"steps": [{"id": "S-01", "description": "List the files"}]}],
            },
        ),
        Scenario(
            "plan3",
            "list files and summarize README",
            False,
            {
                "Classification": [{"label": "complex", "reason": "several steps"}],
                "PlanGeneration": [plan3],
                "StatusAssessment": [{**DONE, "require_goal_completion": True}],
            },
        ),
        Scenario(
            "autonomous2",
            "Find the project version, then draft a changelog line for it",
            True,
            {
                "GoalDecomposition": [
                    {
                        "subgoals": [
                            {"key": "A", "description": "Find the project version"},
                            {
                                "key": "B",
                                "description": "Draft a changelog line for that version",
                                "depends_on": ["A"],
                                "informs": ["A"],
                            },
                        ]
                    }
                ],
                "PlanGeneration": [
                    {"steps": [{"id": "S-01", "description": "List the files"}]},
                    {"steps": [{"id": "S-01", "description": "Write the line"}]},
                ],
                "StatusAssessment": [DONE, DONE],
            },
        ),
    ]


def follow_ups() -> list[Scenario]:
    first = "Which files are in the workspace?"
    listing = {"steps": [{"id": "S-01", "description": "List the files"}]}
    again = "Which of those was the README again?"
    simple = {"label": "simple", "reason": "one question"}
    return [
        Scenario(
            "follow_up",
            again,
            False,
            {
                "Classification": [simple, simple],
                "PlanGeneration": [listing],
                "StatusAssessment": [{**DONE, "require_goal_completion": True}],
            },
            prelude=first,
        ),
        Scenario(
            "follow_up_fresh",
            again,
            False,
            {
                "Classification": [simple, simple],
                "PlanGeneration": [
                    listing,
                    {"steps": [{"id": "S-01", "description": "Name the README"}]},
                ],
            },
            prelude=first,
            fresh=True,
        ),
    ]


def make_responder(replies: dict[str, list[Any]]) -> Any:
    from soothe.engine.llm.scripted import ScriptedReply

    queues = {kind: list(items) for kind, items in replies.items()}
    step_calls: dict[str, int] = {}

    def respond(messages: list[Any], info: dict[str, Any]) -> Any:
        fmt = info["kwargs"].get("format")
        if isinstance(fmt, dict) and fmt.get("title"):
            return queues[fmt["title"]].pop(0)
        if info["tool_names"]:  # a CoreAgent step: one tool call where planned, then answer
            prompt = str(messages[1].content)
            step = prompt.split("Step ", 1)[1].split(":", 1)[0]
            n = step_calls[step] = step_calls.get(step, 0) + 1
            if "Name the README" in prompt:  # the fresh follow-up looks again, once
                n = step_calls["readme"] = step_calls.get("readme", 0) + 1
                step = "S-01"
            if n == 1 and step in TOOL_STEP and "Write the line" not in prompt:
                name, args = TOOL_STEP[step]
                return ScriptedReply(tool_calls=[{"name": name, "args": args}])
            return f"Result of {step}: done, see the tool output above."
        return "Final answer: the workspace holds a README describing Soothe."

    return respond


def call_kind(call: Any) -> str:
    fmt = call.kwargs.get("format")
    if isinstance(fmt, dict) and fmt.get("title") == "Classification":
        return "classify"
    if call.tool_names:
        return "step"
    return "planner"  # plan, assess, decompose and the completion call


def bounds(settings: Any) -> dict[str, int]:
    """Upper bounds of the variable parts of any prompt (chars), from the settings and the
    clip limits in the code; the fixed instructions are measured separately."""
    from soothe.engine.agent.prompts import MAX_SECTION_CHARS
    from soothe.engine.context.projection import (
        DESCRIPTION_CHARS,
        MAX_FACTS_CHARS,
        MAX_INSTRUCTIONS_CHARS,
        STEP_TEXT_CHARS,
    )
    from soothe.engine.runner import MAX_HISTORY_CHARS

    p = settings.projection
    projection = (
        p.max_goals * (DESCRIPTION_CHARS + 60)
        + p.max_steps_per_goal * (DESCRIPTION_CHARS + STEP_TEXT_CHARS + 30)
        + p.max_ledger_chars
        + p.max_ledger_messages * 30
        + 3 * p.max_lineage_chars
        + MAX_FACTS_CHARS  # the loader's workspace facts
        + 2 * MAX_INSTRUCTIONS_CHARS  # project instructions and the skill text
        + (p.max_goals + 1) * (DESCRIPTION_CHARS + 60)  # the goal-DAG summary
    )
    planner = projection + MAX_HISTORY_CHARS + 1200 + 1500 + 10 * 360 + 600  # + goal text
    step_history = max(8000, 4 * settings.tools.max_output_chars)  # CoreAgent tool history
    step = 2 * MAX_SECTION_CHARS + step_history + 600
    return {"planner": planner, "step": step, "history": MAX_HISTORY_CHARS}


async def run_scenario(sc: Scenario, root: Path) -> dict[str, Any]:
    from soothe.engine.config import load_settings
    from soothe.engine.llm.scripted import ScriptedChatModel
    from soothe.engine.session import Session

    ws = root / sc.key / "ws"
    ws.mkdir(parents=True)
    shutil.copy(REPO / "README.md", ws / "README.md")
    shutil.copy(REPO / "pyproject.toml", ws / "pyproject.toml")
    (ws / "src").mkdir()
    settings = load_settings(
        None,
        {
            "model": {"provider": "ollama", "name": "scripted"},
            "storage": {"data_dir": str(root / sc.key / "data")},
            "tools": {"workspace": str(ws), "approval": "auto", "clarify": "auto"},
        },
    )
    model = ScriptedChatModel(responder=make_responder(sc.replies))
    session = Session(
        settings, models={"default": model}, db_path=":memory:", checkpoint_path=":memory:"
    )
    await session.start()
    answer = ""
    if sc.fresh:  # the runner before the continuation intake: no earlier goal counts
        session.runner._earlier_goals = lambda thread_id: []  # type: ignore[method-assign]
    if sc.prelude:
        before = await session.run(sc.prelude)
        if not before.ok:
            raise RuntimeError(f"{sc.key} prelude: {before.error}")
    skip = len(model.calls)
    started = time.perf_counter()
    try:
        outcome = await session.run(sc.text, autonomous=sc.autonomous)
        if not outcome.ok:
            raise RuntimeError(f"{sc.key}: {outcome.error}")
        answer = outcome.answer
    finally:
        await session.close()
    elapsed = time.perf_counter() - started
    calls = model.calls[skip:]
    sizes = [c.prompt_chars for c in calls]
    largest = max(range(len(sizes)), key=sizes.__getitem__)
    big = calls[largest]
    fixed = sum(len(str(m.content)) for m in big.messages if m.type == "system")
    kind = call_kind(big)
    limit = bounds(settings)
    bound = fixed + (len(sc.text) + limit["history"] + 200 if kind == "classify" else limit[kind])
    return {
        "kinds": [call_kind(c) for c in calls],
        "calls": len(calls),
        "chars": sum(sizes),
        "largest": sizes[largest],
        "largest_kind": kind,
        "fixed": fixed,
        "bound": bound,
        "answer": answer,
        "seconds": elapsed,
    }


async def _run() -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="soothe-bench-") as tmp:
        rows = []
        for sc in [*scenarios(), *follow_ups()]:
            r = await run_scenario(sc, Path(tmp))
            rows.append((sc, r))
            figures[f"{sc.key}_calls"] = r["calls"]
            figures[f"{sc.key}_prompt_chars"] = r["chars"]
            figures[f"{sc.key}_largest_prompt"] = r["largest"]
            figures[f"{sc.key}_within_bound"] = float(r["largest"] <= r["bound"])
    print(f"{'request':15} {'calls':>5} {'prompt chars':>12} {'largest':>8} {'bound':>7}  peer")
    for sc, r in rows:
        peer = PEER.get(sc.key, "")
        print(
            f"{sc.key:15} {r['calls']:>5} {r['chars']:>12,} {r['largest']:>8,} "
            f"{r['bound']:>7,}  {peer}"
        )
    print("largest = the biggest single prompt; bound = its fixed instructions + the bounded")
    print("sections of that kind of call (projection, history, memory, evidence, tool history)")
    for sc, r in rows:
        print(f"  {sc.key}: largest is a {r['largest_kind']} call; calls: {' '.join(r['kinds'])}")
    targets = {
        "quiz 1 call": figures["quiz_calls"] == 1,
        "one-tool task <= 4 calls": figures["one_tool_calls"] <= 4,
        "follow-up <= 3 calls": figures["follow_up_calls"] <= 3,
        "every prompt within bound": all(r["largest"] <= r["bound"] for _, r in rows),
    }
    print("targets: " + ", ".join(f"{k}: {'ok' if v else 'MISSED'}" for k, v in targets.items()))
    return figures


def run() -> dict[str, float]:
    return asyncio.run(_run())


def main() -> int:
    run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
