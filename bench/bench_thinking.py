"""Model calls per request with a thinking model, through a fake Ollama that thinks as a
current Ollama does: unless the request says ``think: false``, a thinking model (its
/api/show lists "thinking") writes a trace first (700 tokens here) and the trace counts
toward ``num_predict``.

Runs the multi-step request of `bench_window` (a 3-step plan reading a README and four
source files; num_ctx 8192) through the real Session against the fake, once with a plain
model and once with a thinking one, and prints: model requests, how many requests sent
``think`` (and which values and num_predict limits), the outcome and the time.

No assertions. Run: ``.venv/bin/python bench/bench_thinking.py``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
for path in (str(REPO), str(BENCH)):
    if path not in sys.path:
        sys.path.insert(0, path)

import bench_window  # noqa: E402

TRACE_TOKENS = 700
NUM_CTX = 8192


async def run_model(thinking: bool, root: Path) -> dict[str, Any]:
    from tests.fakes import FakeOllamaModel, FakeOllamaServer

    from soothe.engine.config import load_settings
    from soothe.engine.session import Session

    root.mkdir(parents=True)
    ws = bench_window.workspace(root)
    model = FakeOllamaModel(
        "qwen3:8b", thinking=thinking, default_thinking_tokens=TRACE_TOKENS, parameter_size="8.2B"
    )
    fake = FakeOllamaServer(
        responder=bench_window.responder("complex"), models=[model], hang_limit=5
    )
    with fake:
        settings = load_settings(
            None,
            {
                "model": {
                    "provider": "ollama",
                    "name": "qwen3:8b",
                    "base_url": fake.url,
                    "num_ctx": NUM_CTX,
                },
                "storage": {"data_dir": str(root / "data")},
                "tools": {"workspace": str(ws), "approval": "auto", "clarify": "auto"},
            },
        )
        session = Session(settings, db_path=":memory:", checkpoint_path=":memory:")
        await session.start()
        started = time.perf_counter()
        try:
            result = await asyncio.wait_for(
                session.run(bench_window.REQUEST), bench_window.RUN_LIMIT_S
            )
            outcome = "ok" if result.ok else f"failed: {result.error}"
            if result.ok and "iteration limit" in (result.answer or ""):
                outcome = "ok (answer: stopped at the iteration limit)"
        except TimeoutError:
            outcome = f"no end in {bench_window.RUN_LIMIT_S:.0f} s"
        finally:
            await session.close()
        elapsed = time.perf_counter() - started
        chats = fake.chat_requests()
    sent_think = [b.get("think") for b in chats if "think" in b]
    return {
        "requests": len(chats),
        "think_sent": len(sent_think),
        "think_values": sorted({str(v) for v in sent_think}),
        "num_predict": sorted({int(b.get("options", {}).get("num_predict") or 0) for b in chats}),
        "outcome": " ".join(outcome.split())[:120],
        "seconds": elapsed,
    }


async def _run() -> dict[str, float]:
    figures: dict[str, float] = {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="soothe-bench-thinking-") as tmp:
        for thinking in (False, True):
            r = await run_model(thinking, Path(tmp) / ("thinking" if thinking else "plain"))
            name = f"thinking ({TRACE_TOKENS}-token trace)" if thinking else "plain"
            rows.append((name, r))
            key = "thinking" if thinking else "plain"
            figures[f"{key}_requests"] = r["requests"]
            figures[f"{key}_seconds"] = r["seconds"]
    print(f"{'model':28} {'requests':>8} {'think sent':>10} {'s':>6}  outcome")
    for name, r in rows:
        print(
            f"{name:28} {r['requests']:>8} {r['think_sent']:>10} {r['seconds']:>6.1f}  "
            f"{r['outcome']}"
        )
    for name, r in rows:
        print(f"  {name}: think values {r['think_values']}, num_predict sent {r['num_predict']}")
    return figures


def run() -> dict[str, float]:
    return asyncio.run(_run())


def main() -> int:
    run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
