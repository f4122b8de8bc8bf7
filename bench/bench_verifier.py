"""What the done-when verifier costs per goal, through the real Session against the fake
Ollama: the multi-step request of `bench_window` (a 3-step plan reading a README and four
source files; num_ctx 8192) run without criteria, with 1 and with 3 criteria (every one
met at the first check), and with 3 criteria the verifier finds unmet once (one
send-back, then met). Prints, per run: model requests, tokens (prompt + reply, as the
server counts them), the verifier's requests and tokens, the extra against the run without
criteria, the outcome; then the criteria section of the verifier's prompt as the model
sees it.

No assertions. Run: ``.venv/bin/python bench/bench_verifier.py``.
"""

from __future__ import annotations

import asyncio
import re
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

NUM_CTX = 8192
CRITERIA = (
    "the answer names src/hub.py",
    "the answer says what src/errors.py is for",
    "every file named in the request was read",
)
NUMBER = re.compile(r"^(\d+)\. ", re.M)
EVIDENCE_ID = re.compile(r"\[(E-G\d+-\d+)\]")


def verifier(unmet_first: int) -> Any:
    """The verifier's replies: each listed criterion met, resting on the newest evidence
    id; the first ``unmet_first`` replies say criterion 1 is unmet."""
    from tests.fakes.brain import prompt_text

    calls = {"n": 0}

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        calls["n"] += 1
        text = prompt_text(body)
        section = text.split("## Done when", 1)[1].split("##", 1)[0]
        numbers = [int(n) for n in NUMBER.findall(section)]
        ids = EVIDENCE_ID.findall(text)[-1:]
        out = []
        for n in numbers:
            unmet = n == 1 and calls["n"] <= unmet_first
            out.append(
                {
                    "number": n,
                    "verdict": "unmet" if unmet else "met",
                    "reason": "not shown yet" if unmet else "the evidence shows it",
                    "evidence": [] if unmet else ids,
                }
            )
        return {"criteria": out}

    return reply


async def run_case(criteria: tuple[str, ...], unmet_first: int, root: Path) -> dict[str, Any]:
    from tests.fakes import FakeOllamaServer
    from tests.fakes.brain import schema_title

    from soothe.engine.config import load_settings
    from soothe.engine.session import Session

    root.mkdir(parents=True)
    ws = bench_window.workspace(root)
    base = bench_window.responder("complex")
    judge = verifier(unmet_first)

    def respond(body: dict[str, Any]) -> Any:
        return judge(body) if schema_title(body) == "Verification" else base(body)

    fake = FakeOllamaServer(responder=respond, hang_limit=5)
    with fake:
        settings = load_settings(
            None,
            {
                "model": {
                    "provider": "ollama",
                    "name": "llama3.2",
                    "base_url": fake.url,
                    "num_ctx": NUM_CTX,
                },
                "storage": {"data_dir": str(root / "data")},
                "tools": {"workspace": str(ws), "approval": "auto", "clarify": "auto"},
                "memory": {"max_recall": 0},
            },
        )
        session = Session(settings, db_path=":memory:", checkpoint_path=":memory:")
        await session.start()
        started = time.perf_counter()
        try:
            result = await asyncio.wait_for(
                session.run(bench_window.REQUEST, criteria=criteria), bench_window.RUN_LIMIT_S
            )
            outcome = "ok" if result.ok else f"failed: {result.error}"
        except TimeoutError:
            outcome = f"no end in {bench_window.RUN_LIMIT_S:.0f} s"
        finally:
            await session.close()
        elapsed = time.perf_counter() - started
        chats = fake.chat_requests()
        counted = fake.counted
    from tests.fakes.brain import prompt_text

    kinds = [schema_title(b) for b in chats]
    tokens = [p + o for p, o in counted]
    verify = [i for i, k in enumerate(kinds) if k == "Verification"]
    prompt = prompt_text(chats[verify[0]]) if verify else ""
    return {
        "requests": len(chats),
        "tokens": sum(tokens),
        "verifier_requests": len(verify),
        "verifier_tokens": sum(tokens[i] for i in verify if i < len(tokens)),
        "outcome": outcome,
        "elapsed": elapsed,
        "prompt": prompt,
    }


async def main() -> None:
    cases = [
        ("no criteria", (), 0),
        ("1 criterion, met", CRITERIA[:1], 0),
        ("3 criteria, met", CRITERIA, 0),
        ("3 criteria, unmet once", CRITERIA, 1),
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (name, criteria, unmet) in enumerate(cases):
            rows.append((name, await run_case(criteria, unmet, Path(tmp) / str(n))))
    base = rows[0][1]
    print(
        f"{'run':24} {'requests':>8} {'tokens':>8} {'verifier':>8} {'its tokens':>10} "
        f"{'extra req':>9} {'extra tok':>9}  outcome"
    )
    for name, r in rows:
        print(
            f"{name:24} {r['requests']:>8} {r['tokens']:>8} {r['verifier_requests']:>8} "
            f"{r['verifier_tokens']:>10} {r['requests'] - base['requests']:>+9} "
            f"{r['tokens'] - base['tokens']:>+9}  {r['outcome']} ({r['elapsed']:.1f} s)"
        )
    prompt = rows[2][1]["prompt"]
    if prompt:
        section = prompt.split("## Done when", 1)[1].split("\n## ", 1)[0]
        rules = prompt[prompt.rindex("For each numbered") :]
        print("\nThe verifier's prompt, criteria section:\n## Done when" + section.rstrip())
        print("\nIts rules:\n" + rules.rstrip())


if __name__ == "__main__":
    asyncio.run(main())
