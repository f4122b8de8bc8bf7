"""The largest prompt against the context window, per route, through a fake Ollama that
loads the window as a real one does and cuts an overlong prompt silently from the front.

Runs one request naming a ~200 KB README and four source files through the real
Session (the real ChatOllama client, profile and packer, if any) against
`tests.fakes.FakeOllamaServer`, on each route: quiz, agentic (a 3-step plan),
autonomous (two sub-goals) and a follow-up in the thread of the agentic one (only the
follow-up's requests count), at ``model.num_ctx`` 2048 and 8192. The model answers by
the kind of call (schema title, a step's tool call then its result), from what it was
given after the cut. Prints, per route and window: model requests, the largest prompt
in tokens (the fake's estimate: chars / 4, messages + tool specs, as SENT), how many
requests were over the window (the server cut them), the outcome and the time.

No assertions. Run: ``.venv/bin/python bench/bench_window.py``.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

WINDOWS = (2048, 8192)
README_CHARS = 200_000
SOURCES = {
    "src/hub.py": "src/soothe/engine/llm/hub.py",
    "src/profile.py": "src/soothe/engine/llm/profile.py",
    "src/scripted.py": "src/soothe/engine/llm/scripted.py",
    "src/errors.py": "src/soothe/engine/llm/errors.py",
}
REQUEST = (
    "Read README.md, src/hub.py, src/profile.py, src/scripted.py and src/errors.py "
    "and explain how the model layer fits together."
)
FOLLOW_UP = "Now compare README.md with src/errors.py: which errors does the README name?"
RUN_LIMIT_S = 240.0
FILE = re.compile(r"\b(README\.md|src/\w+\.py)\b")
DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": True}


@dataclass
class Route:
    key: str
    label: str
    autonomous: bool = False
    prelude: str = ""


ROUTES = (
    Route("quiz", "quiz"),
    Route("agentic", "complex"),
    Route("autonomous", "complex", autonomous=True),
    Route("follow-up", "complex", prelude=REQUEST),
)


def example(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """A minimal instance of a JSON schema (for a structured call this bench does not
    script): required properties only, first enum value, empty lists."""
    if "$ref" in schema:
        return example(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return example(schema[key][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: example(props[k], defs) for k in schema.get("required", []) if k in props}
    return {"string": "ok", "integer": 0, "number": 0, "boolean": False, "array": []}.get(str(kind))


def responder(label: str) -> Any:
    from tests.fakes import FakeReply
    from tests.fakes.brain import prompt_text, schema_title

    plan = {
        "steps": [
            {"id": "S-01", "description": "Read README.md"},
            {
                "id": "S-02",
                "description": "Read src/hub.py and src/profile.py",
                "dependencies": ["S-01"],
            },
            {
                "id": "S-03",
                "description": "Read src/scripted.py and src/errors.py",
                "dependencies": ["S-02"],
            },
        ],
        "execution_mode": "dependency",
    }
    replies: dict[str, Any] = {
        "Classification": {"label": label, "answer": "It is the model layer.", "reason": "x"},
        "PlanGeneration": plan,
        "StatusAssessment": DONE,
        "GoalDecomposition": {
            "subgoals": [
                {"key": "A", "description": "Read README.md and summarise it"},
                {"key": "B", "description": "Explain src/hub.py", "depends_on": ["A"]},
            ]
        },
    }

    def respond(body: dict[str, Any]) -> Any:
        title = schema_title(body)
        if title:
            if title in replies:
                return replies[title]
            fmt = body.get("format") or {}
            return example(fmt, fmt.get("$defs", {}))
        messages = body.get("messages") or []
        if body.get("tools") and messages and messages[-1].get("role") != "tool":
            user = next((m["content"] for m in messages if m.get("role") == "user"), "")
            found = FILE.findall(str(user)) or ["README.md"]
            calls = [{"name": "read_file", "args": {"path": p}} for p in dict.fromkeys(found)]
            return FakeReply(tool_calls=calls[:2])
        text = prompt_text(body)
        return f"The model layer: hub, profile, errors ({len(text)} chars seen)."

    return respond


def workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (ws / "README.md").write_text((readme * (README_CHARS // len(readme) + 1))[:README_CHARS])
    for name, source in SOURCES.items():
        shutil.copy(REPO / source, ws / name)
    return ws


async def run_route(route: Route, num_ctx: int, root: Path) -> dict[str, Any]:
    from tests.fakes import FakeOllamaServer

    from soothe.engine.config import load_settings
    from soothe.engine.session import Session

    root.mkdir(parents=True)
    ws = workspace(root)
    with FakeOllamaServer(responder=responder(route.label), hang_limit=5) as fake:
        settings = load_settings(
            None,
            {
                "model": {
                    "provider": "ollama",
                    "name": "llama3.2",
                    "base_url": fake.url,
                    "num_ctx": num_ctx,
                },
                "storage": {"data_dir": str(root / "data")},
                "tools": {"workspace": str(ws), "approval": "auto", "clarify": "auto"},
            },
        )
        session = Session(settings, db_path=":memory:", checkpoint_path=":memory:")
        await session.start()
        started = time.perf_counter()
        outcome = "?"
        try:
            if route.prelude:
                await asyncio.wait_for(session.run(route.prelude), RUN_LIMIT_S)
            skip = len(fake.chat_log)
            started = time.perf_counter()
            result = await asyncio.wait_for(
                session.run(
                    REQUEST if not route.prelude else FOLLOW_UP, autonomous=route.autonomous
                ),
                RUN_LIMIT_S,
            )
            outcome = "ok" if result.ok else f"failed: {result.error}"
        except TimeoutError:
            skip = locals().get("skip", 0)
            outcome = f"no end in {RUN_LIMIT_S:.0f} s"
        finally:
            await session.close()
        elapsed = time.perf_counter() - started
        log = fake.chat_log[skip:]
    from tests.fakes.brain import route as kind_of

    sent = [r.sent_tokens for r in log]
    kinds = [f"{kind_of(r.sent)[0]}:{r.sent_tokens}{'!' if r.truncated else ''}" for r in log]
    return {
        "kinds": kinds,
        "requests": len(log),
        "largest": max(sent, default=0),
        "over": sum(r.truncated for r in log),
        "window": log[0].window if log else num_ctx,
        "outcome": " ".join(outcome.split())[:110],
        "seconds": elapsed,
    }


async def _run() -> dict[str, float]:
    figures: dict[str, float] = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="soothe-bench-window-") as tmp:
        for num_ctx in WINDOWS:
            for route in ROUTES:
                r = await run_route(route, num_ctx, Path(tmp) / f"{route.key}-{num_ctx}")
                rows.append((route, num_ctx, r))
                key = f"{route.key.replace('-', '_')}_{num_ctx}"
                figures[f"{key}_largest_prompt_tokens"] = r["largest"]
                figures[f"{key}_requests_over_window"] = r["over"]
                figures[f"{key}_requests"] = r["requests"]
    print(
        f"{'route':11} {'num_ctx':>7} {'requests':>8} {'largest':>8} {'over':>5} {'s':>6}  outcome"
    )
    for route, num_ctx, r in rows:
        print(
            f"{route.key:11} {num_ctx:>7} {r['requests']:>8} {r['largest']:>8,} "
            f"{r['over']:>5} {r['seconds']:>6.1f}  {r['outcome']}"
        )
    print(
        "largest = the biggest prompt sent, in tokens (chars/4, messages + tool specs); "
        "over = requests the server cut to its window"
    )
    print("requests (kind:tokens sent, ! = cut by the server):")
    for route, num_ctx, r in rows:
        print(f"  {route.key} {num_ctx}: {' '.join(r['kinds'])}")
    return figures


def run() -> dict[str, float]:
    return asyncio.run(_run())


def main() -> int:
    run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
