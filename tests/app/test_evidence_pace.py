"""EvidencePace, without Textual: evidence is shown at once when nothing streams, and held
(at most HOLD_S, then shown together) while a step streams."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from soothe.app import evidence_pace
from soothe.app.evidence_pace import HOLD_S, EvidencePace
from soothe.app.session_api import EvidenceView
from tests.app.real_harness import (
    Pause,
    assess,
    classify,
    plan,
    ready,
    send,
    settle,
    step,
    until,
    wait_event,
)
from tests.app.real_harness import Rig as Rig_
from tests.fakes import FakeReply


def _entry(n: int) -> EvidenceView:
    return EvidenceView(evidence_id=f"E{n}", kind="tool", summary=f"fact {n}", goal_id="G1")


class Rig:
    def __init__(self) -> None:
        self.shown: list[list[str]] = []
        self.streaming = False
        self.timers: list[tuple[float, Callable[[], None]]] = []
        self.pace = EvidencePace(
            show=lambda entries: self.shown.append([e.evidence_id for e in entries]),
            streaming=lambda: self.streaming,
            later=self.later,
        )

    def later(self, delay: float, callback: Callable[[], None]) -> Any:
        self.timers.append((delay, callback))

    def fire(self) -> None:
        timers, self.timers = self.timers, []
        for _, callback in timers:
            callback()


def test_shown_at_once_when_nothing_streams() -> None:
    rig = Rig()
    rig.pace.add([_entry(1)])
    rig.pace.add([_entry(2)])
    assert rig.shown == [["E1"], ["E2"]] and not rig.timers


def test_held_while_streaming_then_shown_together_when_the_hold_ends() -> None:
    rig = Rig()
    rig.streaming = True
    rig.pace.add([_entry(1)])
    rig.pace.add([_entry(2), _entry(3)])
    assert rig.shown == [] and rig.pace.held == 3
    assert [delay for delay, _ in rig.timers] == [HOLD_S]  # one timer for the batch
    rig.fire()
    assert rig.shown == [["E1", "E2", "E3"]] and rig.pace.held == 0
    rig.fire()  # nothing more
    assert rig.shown == [["E1", "E2", "E3"]]


def test_what_is_held_comes_first_once_streaming_stops() -> None:
    rig = Rig()
    rig.streaming = True
    rig.pace.add([_entry(1)])
    rig.streaming = False
    rig.pace.add([_entry(2)])
    assert rig.shown == [["E1", "E2"]]
    rig.fire()  # the timer finds nothing held
    assert rig.shown == [["E1", "E2"]]


def test_a_refill_drops_what_is_held() -> None:
    rig = Rig()
    rig.streaming = True
    rig.pace.add([_entry(1)])
    rig.pace.drop()
    rig.fire()
    assert rig.shown == []


# --- on the real Session: a step's evidence while another step streams ------------------


async def test_evidence_of_a_step_that_ends_waits_for_the_stream_then_shows(
    rig: Rig_, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S-01 reads a file (evidence) and ends while S-02 is still streaming: the panel gets
    the entry when the hold ends (or S-02 does), and the view model has it at once."""
    rig.brain.add("Classification", classify("simple"))
    rig.brain.add("PlanGeneration", plan(step("S-01", "Read README.md"), step("S-02", "Write")))
    rig.brain.step(
        "S-01",
        FakeReply(tool_calls=[{"name": "read_file", "args": {"path": "README.md"}}]),
        "README.md says Soothe is a terminal workbench.",
    )
    lines = [f"row {i:03d}\n" for i in range(6)]
    writing = Pause(text="".join(lines), stream_chunks=lines, after=2)
    rig.brain.step("S-02", writing)
    rig.brain.on("step:S-01", lambda: writing.reached.wait(10))  # S-01 reads once S-02 streams
    rig.brain.add("StatusAssessment", assess("done", progress="complete"))
    rig.brain.add("complete", "Soothe is a terminal workbench.")
    monkeypatch.setattr(evidence_pace, "HOLD_S", 3.0)  # a loaded machine: still held below
    app = rig.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Read README.md and write")
        await wait_event(writing.reached, pilot)
        evidence, panel, pace = app.handler.evidence, app.main.evidence, app.handler.port.evidence

        def read() -> list[str]:  # the evidence of S-01's read_file
            return [k for k, e in evidence.items() if e.step_id == "S-01" and e.kind == "tool"]

        await until(lambda: bool(read()), pilot)
        assert app.main.stream.streaming  # S-02 streams
        assert pace.held and not set(read()) & set(panel.shown)  # held, not lost
        await until(lambda: set(read()) <= set(panel.shown), pilot, timeout=10)  # the hold ends
        assert app.main.stream.streaming and not pace.held
        writing.release.set()
        await settle(app, pilot)
        assert set(panel.shown) == set(app.handler.evidence)


async def test_evidence_in_the_batch_a_step_starts_in_is_held(rig: Rig_) -> None:
    """The screen mounts a step's card when the batch of events it started in is applied:
    evidence in that same batch is held all the same (a loaded machine batches a step's
    start, its first tokens and another step's evidence together)."""
    from soothe.engine import events as ev

    app = rig.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(app, pilot)
        on = {"goal_id": "G1"}
        app.handler.apply(
            [
                ev.GoalCreated(description="Read and write", **on),
                ev.StepStarted(description="Write", step_id="S-02", **on),
                ev.StepToken(text="row 000\n", step_id="S-02", **on),
                ev.EvidenceAdded(
                    evidence_id="E1", kind="tool", summary="read", step_id="S-01", **on
                ),
            ]
        )
        pace, panel = app.handler.port.evidence, app.main.evidence
        assert pace.held == 1 and "E1" not in panel.shown
        await pilot.pause()
        assert app.main.stream.streaming  # the card is on screen now, still running
