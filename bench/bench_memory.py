"""Memory figure: RSS of one app session after 30 and after 100 demo requests.

python bench/bench_memory.py [--requests 30,100]

The real app on the real Session with the built-in demo model (no server), headless
(Textual's run_test), one request after another in one thread, like a user typing; the
figure is the process's resident set size (VmRSS) at start and after each checkpoint,
with what the screen and the view model hold then. Target: < 150 MB after 100 requests.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REQUESTS = ["Summarise README.md in one line", "What is 2+2?", "List the files here"]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def main(checkpoints: list[int]) -> None:
    from soothe.app.main import SootheApp
    from soothe.engine.config import Settings
    from soothe.engine.session import Session

    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        (workspace / "README.md").write_text("# Kettle\nA tool that boils water.\n")
        settings = Settings(
            model={"provider": "demo"},
            tools={"workspace": workspace},
            storage={"data_dir": Path(tmp) / "data"},
        )
        session = Session(settings)
        app = SootheApp(settings, session=session, animate=False)  # type: ignore[arg-type]
        async with app.run_test(size=(120, 40)) as pilot:
            await app._engine_ready.wait()
            await pilot.pause()
            print(f"start: {rss_mb():.0f} MB", flush=True)
            done = 0
            began = time.perf_counter()
            for target in sorted(checkpoints):
                while done < target:
                    app.start_run(REQUESTS[done % len(REQUESTS)])
                    await app.workers.wait_for_complete()
                    await app.handler.wait_idle()
                    done += 1
                await pilot.pause()
                gc.collect()
                mounted = len(app.main.stream.children)
                widgets = len(list(app.screen.walk_children()))
                state = app.handler.state
                held = sum(len(view) for view in state.views.values())
                per = (time.perf_counter() - began) / done
                print(
                    f"after {done} requests: {rss_mb():.0f} MB ({mounted} blocks mounted in "
                    f"the stream, {widgets} widgets on the screen; {len(state.views)} views "
                    f"holding {held} blocks, {len(state.released)} released; "
                    f"{per:.2f} s per request)",
                    flush=True,
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", default="30,100")
    args = parser.parse_args()
    asyncio.run(main([int(n) for n in args.requests.split(",")]))
