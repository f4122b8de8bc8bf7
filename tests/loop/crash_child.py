"""Child process for the crash test: runs a two-step goal on file-backed storage and
announces when step S-02 is in flight, so the parent can SIGKILL it right there.

Usage: python -m tests.loop.crash_child ROOT   (ROOT holds ws/ and data/)
Prints ``THREAD <id>``, ``GOAL <id>``, then ``S-02 IN FLIGHT`` (and then hangs).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from soothe.engine.events import EventBase
from soothe.engine.llm.scripted import ScriptedReply
from soothe.engine.session import Session
from tests.fakes.brain import Brain
from tests.loop.helpers import classify, make_settings, plan, step


def crash_brain() -> Brain:
    brain = Brain()
    brain.add("Classification", classify("complex"))
    brain.add("PlanGeneration", plan(step("S-01", "gather"), step("S-02", "use it", ["S-01"])))
    brain.add("step:S-01", "S-01 found the answer 42")
    brain.add("step:S-02", ScriptedReply(text="never sent", delay=120))
    brain.on("step:S-02", lambda: print("S-02 IN FLIGHT", flush=True))
    return brain


async def main(root: Path) -> None:
    settings = make_settings(root, root / "ws")
    session = Session(settings, models={"default": crash_brain().model()})
    await session.start()

    def report(event: EventBase) -> None:
        if event.type == "run.started":
            print(f"THREAD {event.thread_id}", flush=True)
        elif event.type == "goal.created":
            print(f"GOAL {event.goal_id}", flush=True)

    session.bus.add_listener(report)
    await session.run("crash test goal")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
