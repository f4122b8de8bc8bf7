"""Type while it runs (issue 32 item 4), on the real Session against the fake Ollama.

Enter during a run queues the request (shown above the prompt, in order; e takes one back
into the prompt, d removes one), and the queue is sent one by one when the run ends; an
interrupted run holds the queue. ``/steer TEXT`` (or enter on the running goal in the
tree) is a note to the goal: in its ledger, in the next assessment's prompt, in the
conversation, and still there when the thread is reopened.
"""

from __future__ import annotations

from soothe.app.screens.dialogs import ConfirmDialog
from soothe.app.screens.goals import GoalInputDialog
from soothe.app.view_state import CONVERSATION
from soothe.engine.loop.planner import STEERING_TITLE
from soothe.widgets.goal_tree import NodeRef
from tests.app.real_harness import (
    Pause,
    Rig,
    assess,
    classify,
    plan,
    ready,
    screen_text,
    send,
    settle,
    step,
    until,
    wait_event,
)
from tests.fakes.brain import Brain


def tree_ref(goal_id: str) -> NodeRef:
    return NodeRef("goal", goal_id)


def held_goal(brain: Brain, text: str = "a long answer that is still coming") -> Pause:
    """One goal, one step whose reply stops after its first chunk until released."""
    held = Pause(text=text, after=1)
    brain.add("Classification", classify("simple"))
    brain.add("PlanGeneration", plan(step("S-01", "Think it over")))
    brain.step("S-01", held)
    brain.add("StatusAssessment", assess("done", progress="complete"))
    brain.add("complete", "Thought over.")
    return held


def user_lines(app: object) -> list[str]:
    blocks = app.handler.state.blocks(CONVERSATION)  # type: ignore[attr-defined]
    return [b["note"] for b in blocks if b.get("kind") == "user"]


async def test_enter_during_a_run_queues_and_the_queue_is_sent_in_order(rig: Rig) -> None:
    held = held_goal(rig.brain)
    rig.brain.add("Classification", classify("quiz", "Answer two."))
    rig.brain.add("Classification", classify("quiz", "Answer three."))
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "First request")
        await wait_event(held.reached, pilot)
        for text in ("Second request", "Third request", "Fourth request"):
            await send(app, pilot, text)
        await pilot.pause()
        # queued, shown in order above the prompt; nothing refused, the prompt free
        assert app.queued == ["Second request", "Third request", "Fourth request"]
        assert app.prompt.value == ""
        shown = str(app.main.queued.render())
        assert "queued (3)" in shown and shown.index("Second") < shown.index("Fourth")
        assert not [n for n in app._notifications if "in progress" in n.message]
        # shift+tab from the prompt reaches the queue: d removes, e takes one back
        await pilot.press("shift+tab")
        assert app.focused is app.main.queued
        await pilot.press("down", "down", "d")
        assert app.queued == ["Second request", "Third request"]
        await pilot.press("e")  # the cursor is on the new last one
        assert app.queued == ["Second request"]
        assert app.focused is app.prompt and app.prompt.value == "Third request"
        await pilot.press(*" now", "enter")  # edited, and queued again (at the end)
        await pilot.pause()
        assert app.queued == ["Second request", "Third request now"]
        held.release.set()
        await until(lambda: rig.brain.count("Classification") == 3 and not app.queued, pilot)
        await until(lambda: not app.running and not app._run_going(), pilot)
        await settle(app, pilot)
        assert user_lines(app) == ["First request", "Second request", "Third request now"]
        classified = rig.brain.user_prompts("Classification")
        assert "Second request" in classified[1] and "Third request now" in classified[2]
        assert not app.main.queued.display


async def test_an_interrupted_run_holds_the_queue(rig: Rig) -> None:
    held = held_goal(rig.brain)
    rig.brain.add("Classification", classify("quiz", "Answer two."))
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "First request")
        await wait_event(held.reached, pilot)
        await send(app, pilot, "Second request")
        await pilot.press("escape")  # interrupts the run
        held.release.set()
        await until(lambda: not app._run_going(), pilot)
        await settle(app, pilot)
        assert app.queued == ["Second request"] and app.queue_held
        assert "held" in str(app.main.queued.render())
        assert rig.brain.count("Classification") == 1
        # e puts it back in the prompt; enter sends it (nothing runs now)
        await pilot.press("shift+tab", "e", "enter")
        await until(lambda: rig.brain.count("Classification") == 2, pilot)
        await settle(app, pilot)
        assert user_lines(app)[-1] == "Second request" and app.queued == []


async def test_quitting_with_a_queue_asks_first(rig: Rig) -> None:
    """ctrl+q with requests still queued (held after an interrupt) asks first and says
    they will not be sent; no keeps the app and the queue; yes quits."""
    held = held_goal(rig.brain)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "First request")
        await wait_event(held.reached, pilot)
        await send(app, pilot, "Second request")
        await pilot.press("escape")
        held.release.set()
        await until(lambda: not app._run_going(), pilot)
        await settle(app, pilot)
        await pilot.press("ctrl+q")
        await until(lambda: isinstance(app.screen, ConfirmDialog), pilot)
        assert "1 queued request will not be sent" in screen_text(app)
        assert "Second request" in app.prompt.past  # up brings it back
        await pilot.press("n")
        assert app.is_running and app.queued == ["Second request"]
        await pilot.press("ctrl+q")
        await until(lambda: isinstance(app.screen, ConfirmDialog), pilot)
        await pilot.press("y")
        await until(lambda: not app.is_running, pilot)


async def test_steer_reaches_the_next_assessment_and_stays_on_reopen(rig: Rig) -> None:
    held = held_goal(rig.brain)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Think about the README")
        await wait_event(held.reached, pilot)
        await send(app, pilot, "/steer Use British spelling")
        await until(lambda: any("Use British" in n for n in user_lines(app)), pilot)
        assert app.queued == []  # a note is sent at once, not queued
        goal_id = next(iter(app.handler.goals))
        held.release.set()
        await until(lambda: not app._run_going(), pilot)
        await settle(app, pilot)
        thread_id = app.require_session().thread_id
        note = f"{goal_id} · your note: Use British spelling"
        assert note in user_lines(app)
        assert note in [b.get("note") for b in app.handler.state.blocks(goal_id)]
    # the next assessment's prompt (what the model received) carries the note
    (assessment,) = rig.brain.user_prompts("StatusAssessment")
    assert STEERING_TITLE in assessment and "- Use British spelling" in assessment
    assert assessment.count("Use British spelling") == 1, "once: not again in the ledger"
    reopened = rig.app(thread_id)
    async with reopened.run_test(size=(120, 40)) as pilot:
        await ready(reopened, pilot)
        assert note in user_lines(reopened)
        session = reopened.require_session()
        assert session.context.steering(goal_id) == ["Use British spelling"]  # type: ignore[attr-defined]


async def test_enter_on_the_running_goal_in_the_tree_writes_it_a_note(rig: Rig) -> None:
    held = held_goal(rig.brain)
    app = rig.app()
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "Think about the README")
        await wait_event(held.reached, pilot)
        await settle_goals(app, pilot)
        goal_id = next(iter(app.handler.goals))
        tree = app.main.goal_tree
        tree.focus()
        node = tree.node_for(tree_ref(goal_id))
        assert node is not None
        tree.move_cursor(node)
        await pilot.pause()
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, GoalInputDialog), pilot)
        await pilot.press(*"Skip tests", "enter")
        await until(lambda: f"{goal_id} · your note: Skip tests" in user_lines(app), pilot)
        held.release.set()
        await until(lambda: not app._run_going(), pilot)
        await settle(app, pilot)
    (assessment,) = rig.brain.user_prompts("StatusAssessment")
    assert "- Skip tests" in assessment


async def settle_goals(app: object, pilot: object) -> None:
    await until(
        lambda: any(g.status == "active" for g in app.handler.goals.values()),  # type: ignore[attr-defined]
        pilot,  # type: ignore[arg-type]
    )
