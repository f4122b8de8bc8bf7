"""Done-when criteria in the app (issue 33 item 1), on the real Session against the fake
Ollama: set with ``/goal TEXT --done-when "…" --budget …`` (a bad flag is one warning and
nothing is added), in the new-goal dialog (``n``: one criterion per line), and edited
with ``e`` on a goal; judged by the verifier when the goal is assessed done, each verdict
shown with ✓ / ✗ / ? and its evidence ids in the conversation, the goal's view and its
details, and again when the thread is reopened."""

from __future__ import annotations

from textual.widgets import Input

from soothe.app.screens.criteria import CriteriaDialog
from soothe.app.screens.goals import GoalDetailDialog, GoalInputDialog
from soothe.app.view_state import CONVERSATION
from soothe.engine import events as ev
from soothe.engine.goal_contract import GoalBudget
from soothe.widgets.criteria import CriteriaArea
from soothe.widgets.goal_tree import NodeRef
from tests.app.real_harness import (
    Rig,
    assess,
    plan,
    ready,
    send,
    settle,
    step,
    until,
)

CRITERION = "the README names Soothe"


def notes(app: object, key: str = CONVERSATION) -> list[str]:
    blocks = app.handler.state.blocks(key)  # type: ignore[attr-defined]
    return [b["note"] for b in blocks if "note" in b]


async def test_goal_flags_the_new_goal_dialog_and_e_set_the_criteria(rig: Rig) -> None:
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        session = app.require_session()
        # a bad flag: one warning line, nothing added
        await send(app, pilot, "/goal Tidy up --frob")
        await settle(app, pilot)
        assert session.goals() == []
        (warning,) = [n.message for n in app._notifications if n.message.startswith("/goal")]
        assert warning == "/goal: unknown flag --frob: /goal takes --done-when and --budget"
        # /goal with criteria and a budget: both on the goal
        await send(
            app,
            pilot,
            f'/goal Read the README --done-when "{CRITERION}" --done-when "it is short"'
            " --budget calls=40,tokens=200k",
        )
        await until(lambda: len(session.goals()) == 1, pilot)
        goal = session.context.get_goal("G1")
        assert [c.text for c in goal.criteria] == [CRITERION, "it is short"]
        assert goal.budget == GoalBudget(calls=40, tokens=200_000)
        await settle(app, pilot)
        assert f"G1 done when:\n  · {CRITERION}\n  · it is short" in notes(app)
        # n: the new-goal dialog takes criteria, one per line; ctrl+s adds from there
        await pilot.press("ctrl+g")
        await pilot.press("n")
        await until(lambda: isinstance(app.screen, GoalInputDialog), pilot)
        app.screen.query_one(Input).value = "Write the summary"
        await pilot.press("tab")
        assert isinstance(app.focused, CriteriaArea)
        await pilot.press(*"names three files", "enter", "enter", *"under 100 words")
        await pilot.press("ctrl+s")
        await until(lambda: len(session.goals()) == 2, pilot)
        assert [c.text for c in session.context.get_goal("G2").criteria] == [
            "names three files",
            "under 100 words",
        ]
        # e on G1: its criteria prefilled; saved through the engine, one event
        events = session.bus.subscribe("*", maxsize=100)
        tree = app.main.goal_tree
        tree.focus()
        tree.show_ref(NodeRef("goal", "G1"))
        await settle(app, pilot)
        await pilot.press("e")
        await until(lambda: isinstance(app.screen, CriteriaDialog), pilot)
        area = app.screen.query_one(CriteriaArea)
        assert area.text == f"{CRITERION}\nit is short"
        area.text = f"{CRITERION}\nit fits on one screen"
        await pilot.press("ctrl+s")
        await until(
            lambda: (
                [c.text for c in session.context.get_goal("G1").criteria]
                == [CRITERION, "it fits on one screen"]
            ),
            pilot,
        )
        await settle(app, pilot)
        changed = [e for e in events.drain() if isinstance(e, ev.GoalCriteriaSet)]
        events.close()
        assert len(changed) == 1 and changed[0].goal_id == "G1"
        assert [c.text for c in app.handler.goals["G1"].criteria] == [
            CRITERION,
            "it fits on one screen",
        ]
        assert f"G1 done when:\n  · {CRITERION}\n  · it fits on one screen" in notes(app, "G1")


async def test_the_verifier_s_verdicts_show_in_the_goal_view_and_on_reopen(rig: Rig) -> None:
    brain = rig.brain
    brain.add("PlanGeneration", plan(step("S-01", "Read README.md")))
    brain.step("S-01", "Soothe is a terminal workbench.")
    brain.always["StatusAssessment"] = assess("done", progress="complete")
    brain.always["complete"] = "Soothe is a terminal workbench."
    brain.add(
        "Verification",
        {"criteria": [{"number": 1, "verdict": "unmet", "reason": "not shown yet"}]},
        {
            "criteria": [
                {
                    "number": 1,
                    "verdict": "met",
                    "reason": "the README's title",
                    "evidence": ["E-G1-1", "E-G4-4"],
                }
            ]
        },
    )
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        session = app.require_session()
        await session.add_goal("Say what the README is about", criteria=[CRITERION])
        await settle(app, pilot)
        await pilot.press("ctrl+r")
        await until(lambda: session.context.get_goal("G1").status == "completed", pilot)
        await settle(app, pilot)
        goal = session.context.get_goal("G1")
        assert goal.send_back_count == 1
        ids = {e.id for e in session.context.evidence("G1")}
        assert "E-G1-1" in ids
        shown = notes(app, "G1")
        unmet = f"G1 verified: 0 of 1 done-when criterion met\n  ✗ {CRITERION} — not shown yet"
        met = (
            f"G1 verified: 1 of 1 done-when criterion met\n"
            f"  ✓ {CRITERION} — the README's title (E-G1-1)"
        )
        assert unmet in shown and met in shown
        assert shown.index(unmet) < shown.index(met)
        assert met in notes(app)
        # the goal's details: the Done when block, ✓ with its evidence id
        tree = app.main.goal_tree
        tree.focus()
        tree.show_ref(NodeRef("goal", "G1"))
        await settle(app, pilot)
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, GoalDetailDialog), pilot)
        text = str(app.screen.query("Static").first().render())
        assert "done when  1 of 1 done-when criterion met" in text
        assert f"✓ {CRITERION} — the README's title (E-G1-1)" in text
        thread_id = session.thread_id
    reopened = rig.app(thread_id)
    async with reopened.run_test(size=(120, 40)) as pilot:
        await ready(reopened, pilot)
        assert met in notes(reopened, CONVERSATION)
        (view,) = [g for g in reopened.handler.goals.values() if g.id == "G1"]
        assert [(c.verdict, c.evidence) for c in view.criteria] == [("met", ("E-G1-1",))]
