"""Scripted event streams for the app tests, snapshots and the UI bench."""

from __future__ import annotations

from datetime import datetime

from soothe.app.session_api import EvidenceView, GoalView, StepView, ThreadSnapshot
from soothe.engine import events as ev
from soothe.engine.events import PlannedStep
from tests.app.fake_session import FakeSession, Gate, ScriptItem


def plan(goal_id: str, *steps: tuple[str, str, list[str]], reasoning: str = "") -> ev.PlanCreated:
    return ev.PlanCreated(
        goal_id=goal_id,
        iteration=1,
        reasoning=reasoning,
        steps=[
            PlannedStep(id=sid, description=desc, dependencies=deps) for sid, desc, deps in steps
        ],
    )


def words(goal_id: str, step_id: str, text: str) -> list[ScriptItem]:
    """Stream ``text`` word by word, as a model would."""
    out: list[ScriptItem] = []
    for index, word in enumerate(text.split(" ")):
        out.append(
            ev.StepToken(goal_id=goal_id, step_id=step_id, text=("" if index == 0 else " ") + word)
        )
    return out


def agentic_script(gate: Gate | None = None) -> list[ScriptItem]:
    """One request that becomes goal G1: plan, two steps (one with a tool), answer."""
    items: list[ScriptItem] = [
        ev.Classified(label="simple", reason="needs to read a file"),
        ev.GoalCreated(goal_id="G1", description="Summarise the README"),
        ev.GoalStatusChanged(goal_id="G1", from_status="pending", to_status="active"),
        ev.IterationStarted(goal_id="G1", iteration=1, max_iterations=8),
        ev.PlanAssessed(
            goal_id="G1", status="replan", goal_progress="none", reasoning="nothing read yet"
        ),
        plan(
            "G1",
            ("S1", "Read README.md", []),
            ("S2", "Write the summary", ["S1"]),
            reasoning="Read the file first, then summarise it.",
        ),
        ev.StepStarted(goal_id="G1", step_id="S1", description="Read README.md"),
        ev.ToolCalled(
            goal_id="G1", step_id="S1", call_id="c1", tool="read_file", args={"path": "README.md"}
        ),
        ev.ToolResult(
            goal_id="G1",
            step_id="S1",
            call_id="c1",
            tool="read_file",
            output="# Soothe\nA terminal workbench for goal-driven agents.",
        ),
        ev.EvidenceAdded(
            goal_id="G1",
            step_id="S1",
            evidence_id="E1",
            kind="tool",
            summary="read_file README.md: 2 lines",
            content="# Soothe\nA terminal workbench for goal-driven agents.",
        ),
        ev.StepCompleted(goal_id="G1", step_id="S1", summary="read 2 lines", duration_s=0.2),
        ev.StepStarted(goal_id="G1", step_id="S2", description="Write the summary"),
    ]
    if gate is not None:
        items.append(gate)
    items += words("G1", "S2", "Soothe is a terminal workbench for goal-driven agents.")
    items += [
        ev.StepCompleted(goal_id="G1", step_id="S2", duration_s=0.5),
        ev.Usage(model="fake-model", input_tokens=1800, output_tokens=240),
        ev.GoalStatusChanged(
            goal_id="G1", from_status="active", to_status="completed", findings="summary written"
        ),
        ev.FinalAnswer(
            goal_id="G1", text="**Soothe** is a terminal workbench for goal-driven agents."
        ),
        ev.RunFinished(duration_s=1.7, model_calls=3),
    ]
    return items


def busy_board(session: FakeSession) -> list[ScriptItem]:
    """Several goals in different states, G3 streaming: for the 'run in progress' views."""
    items: list[ScriptItem] = [
        ev.Classified(label="complex", reason="several goals"),
        ev.GoalCreated(goal_id="G1", description="Collect the release notes", priority=70),
        ev.GoalCreated(goal_id="G2", description="Check the changelog links", priority=50),
        ev.GoalCreated(
            goal_id="G3", description="Draft the announcement post", priority=60, depends_on=["G1"]
        ),
        ev.GoalCreated(goal_id="G4", description="Pick a headline", parent_id="G3"),
        ev.GoalCreated(goal_id="G5", description="Publish the post", depends_on=["G3"]),
        ev.GoalStatusChanged(goal_id="G1", from_status="pending", to_status="active"),
        plan("G1", ("S1", "List merged pull requests", []), ("S2", "Group them by area", ["S1"])),
        ev.StepStarted(goal_id="G1", step_id="S1", description="List merged pull requests"),
        ev.ToolCalled(
            goal_id="G1",
            step_id="S1",
            call_id="c1",
            tool="shell",
            args={"command": "git log --merges --oneline v1.1..HEAD"},
        ),
        ev.ToolResult(
            goal_id="G1",
            step_id="S1",
            call_id="c1",
            tool="shell",
            output="a1b2c3 Merge #41 faster tree\nd4e5f6 Merge #42 themes",
        ),
        ev.EvidenceAdded(
            goal_id="G1",
            step_id="S1",
            evidence_id="E1",
            kind="tool",
            summary="git log: 2 merges since v1.1",
            content="a1b2c3 Merge #41\nd4e5f6 Merge #42",
        ),
        ev.StepCompleted(goal_id="G1", step_id="S1", duration_s=0.4),
        ev.StepStarted(goal_id="G1", step_id="S2", description="Group them by area"),
        *words("G1", "S2", "Two areas: the goal tree got faster, and themes arrived."),
        ev.StepCompleted(goal_id="G1", step_id="S2", duration_s=0.9),
        ev.GoalStatusChanged(
            goal_id="G1",
            from_status="active",
            to_status="completed",
            findings="2 merges: tree speed, themes",
        ),
        ev.FinalAnswer(goal_id="G1", text="Release notes: **faster goal tree**, **themes**."),
        ev.GoalStatusChanged(goal_id="G2", from_status="pending", to_status="active"),
        plan("G2", ("S1", "Fetch every link", [])),
        ev.StepStarted(goal_id="G2", step_id="S1", description="Fetch every link"),
        ev.StepFailed(goal_id="G2", step_id="S1", error="tool http_get is not available"),
        ev.GoalStatusChanged(
            goal_id="G2", from_status="active", to_status="failed", error="no tool can fetch links"
        ),
        ev.GoalStatusChanged(goal_id="G3", from_status="pending", to_status="active"),
        ev.IterationStarted(goal_id="G3", iteration=2, max_iterations=8),
        ev.PlanAssessed(
            goal_id="G3",
            status="continue",
            goal_progress="medium",
            reasoning="outline exists, body missing",
        ),
        plan(
            "G3",
            ("S1", "Outline the post", []),
            ("S2", "Write the body", ["S1"]),
            ("S3", "Proofread", ["S2"]),
        ),
        ev.StepStarted(goal_id="G3", step_id="S1", description="Outline the post"),
        ev.StepCompleted(goal_id="G3", step_id="S1", duration_s=0.6),
        ev.StepStarted(goal_id="G3", step_id="S2", description="Write the body"),
        *words(
            "G3",
            "S2",
            "Soothe 1.2 is out. The goal tree now updates in place, so a "
            "board of fifty goals stays smooth, and four themes ship with it",
        ),
        ev.Usage(model="fake-model", input_tokens=5400, output_tokens=812),
    ]
    return items


def stored_threads(session: FakeSession) -> None:
    """Three stored threads with fixed times (no clocks on screen)."""
    trip = ThreadSnapshot(
        thread_id="t-trip",
        title="Plan a weekend in Lisbon",
        goals=[
            GoalView(
                id="G1",
                description="Find flights",
                status="completed",
                steps=[StepView(id="S1", description="Search flights", status="completed")],
            ),
            GoalView(
                id="G2",
                description="Book a hotel near Alfama",
                status="failed",
                error="no hotel tool",
                depends_on=["G1"],
            ),
        ],
        evidence=[
            EvidenceView(
                evidence_id="E1",
                kind="tool",
                summary="3 flights under 200 EUR",
                content="TP1351 09:05 ...",
                goal_id="G1",
                step_id="S1",
            )
        ],
        answers={"G1": "Cheapest: **TP1351** on Friday morning, 142 EUR.", "": "Hello again."},
    )
    readme = ThreadSnapshot(
        thread_id="t-readme",
        title="Summarise the README",
        goals=[GoalView(id="G1", description="Summarise the README", status="completed")],
        answers={"G1": "Soothe is a terminal workbench."},
    )
    empty = ThreadSnapshot(thread_id="t-0001", title="Current thread")
    session.add_thread(
        trip, created=datetime(2025, 3, 1, 9, 30), last_active=datetime(2025, 3, 2, 18, 5)
    )
    session.add_thread(
        readme, created=datetime(2025, 2, 20, 14, 0), last_active=datetime(2025, 2, 20, 14, 12)
    )
    session.add_thread(
        empty, created=datetime(2025, 3, 3, 8, 0), last_active=datetime(2025, 3, 3, 8, 0)
    )
