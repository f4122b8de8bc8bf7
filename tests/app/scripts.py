"""Scripted event streams for the app tests, snapshots and the UI bench."""

from __future__ import annotations

from soothe.engine import events as ev
from soothe.engine.events import PlannedStep
from tests.app.fake_session import FakeSession, Gate, ScriptItem


def plan(
    goal_id: str, *steps: tuple[str, str, list[str]], reasoning: str = "", iteration: int = 1
) -> ev.PlanCreated:
    return ev.PlanCreated(
        goal_id=goal_id,
        iteration=iteration,
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


def busy_board(session: FakeSession, before_g3: Gate | None = None) -> list[ScriptItem]:
    """Several goals in different states, G3 streaming: for the 'run in progress' views.
    ``before_g3`` pauses the replay once G1 and G2 have ended (a screen taken later does
    not depend on whether G1's last step ended in the batch that started G3's: a card
    that ends while another streams keeps its live box, held)."""
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
        *([before_g3] if before_g3 is not None else []),
        ev.GoalStatusChanged(goal_id="G3", from_status="pending", to_status="active"),
        ev.IterationStarted(goal_id="G3", iteration=2, max_iterations=8),
        ev.PlanAssessed(
            goal_id="G3",
            status="continue",
            goal_progress="medium",
            reasoning="the release notes are in; the post is not written yet",
        ),
        plan(
            "G3",
            ("S1", "Outline the post", []),
            ("S2", "Write the body", ["S1"]),
            ("S3", "Proofread", ["S2"]),
            iteration=2,
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
