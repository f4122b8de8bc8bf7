"""Events published on the bus vs events delivered to the app for one demo request.

The app reads the bus (one ``*`` subscription in its EventHandler); whatever the run call
hands back on top of that is a second copy. Prints the counts; not a timed test.

    .venv/bin/python bench/bench_events.py
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import tempfile
from pathlib import Path
from typing import Any

REQUEST = "list the files in this folder and summarise README.md"


async def measure(root: Path) -> dict[str, int]:
    from soothe.engine.config import load_settings
    from soothe.engine.session import Session

    ws = root / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# demo\nA small project.\n", encoding="utf-8")
    settings = load_settings(
        None,
        {
            "model": {"provider": "demo"},
            "storage": {"data_dir": str(root / "data")},
            "tools": {"workspace": str(ws), "approval": "auto", "clarify": "auto"},
        },
    )
    session = Session(settings, db_path=":memory:", checkpoint_path=":memory:")
    await session.start()
    app_sub = session.bus.subscribe("*", maxsize=1_000_000)  # as the app's EventHandler
    before = session.bus.published
    returned = 0
    try:
        result: Any = session.run(REQUEST)
        if inspect.isasyncgen(result):  # the old API: every event yielded again
            async for _ in result:
                returned += 1
        else:
            await result
    finally:
        published = session.bus.published - before
        from_bus = len(app_sub.drain())
        app_sub.close()
        await session.close()
    return {
        "published": published,
        "delivered_by_bus": from_bus,
        "delivered_by_run_call": returned,
        "delivered_total": from_bus + returned,
    }


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        figures = asyncio.run(measure(Path(tmp)))
    width = max(map(len, figures))
    for key, value in figures.items():
        print(f"{key:{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
