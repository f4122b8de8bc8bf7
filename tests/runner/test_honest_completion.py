"""Honest outcomes on every profile (issue 31, Deliver 7 and 8), black box through
``soothe -p`` against the fake Ollama server, reading what the server received and what
the run left in the store:

* planning that fails is answered from the loader's facts when they bear on the request
  (one facts-and-question call, else the facts marked raw), and fails as before when
  nothing does;
* a goal whose attempted edits all failed (or whose write was refused) is neither
  validated nor completed, whatever the model says;
* a follow-up about the workspace is answered without new steps only from evidence of
  the thread that bears on it; otherwise it plans;
* an answer about files the request named must rest on them, on the default profile too.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

import pytest

from soothe.engine.agent.judge import RAW_MARK
from soothe.engine.context.models import EvidenceEntry
from soothe.engine.loop.answer_check import (
    answerable_from_facts,
    facts_bear_on,
    thread_bears_on,
)
from tests.fakes._base import FakeReply
from tests.fakes.brain import Brain, prompt_text, route
from tests.fakes.cli_harness import Env

DONE = {"status": "done", "goal_progress": "complete", "require_goal_completion": True}
NOTES = "- tidy the docs\n- ship it\n"
STORE = "def load(path):\n    return open(path).read()\n"
README = "# Harbour\n\nHarbour moors boats in the bay and tracks their berths.\n"
CUT_PLAN = '{"steps": [{"id": "S-01", "desc'
"""A plan reply cut at the token limit before its first step was whole."""


def tool(name: str, **args: object) -> FakeReply:
    return FakeReply(tool_calls=[{"name": name, "args": args}])


def kinds(fake: Any, since: int = 0) -> list[str]:
    return [route(body)[0] for body in fake.chat_requests()[since:]]


def events(result: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.out.splitlines()]


def ledger(env: Env, phase: str) -> list[str]:
    with sqlite3.connect(env.db_path) as db:
        rows = db.execute("SELECT content FROM ledger WHERE phase = ? ORDER BY id", (phase,))
        return [row[0] for row in rows]


def only_thread(soothe: Any) -> str:
    (line,) = soothe("threads").out.splitlines()
    return line.split()[0]


# --- Deliver 7: planning fails, the loader's facts answer -------------------------------


def test_a_plan_cut_off_every_time_is_answered_from_the_file_the_loader_read(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    """Issue 31 item 7: "Read notes.txt and tell me the first item" failed with "could not
    get a valid PlanGeneration … cut off at the token limit", although the loader had
    read notes.txt. Now one facts-and-question call answers it, and the answer says so."""
    (env.workspace / "notes.txt").write_text(NOTES)
    brain.add("Classification", {"label": "complex"})
    brain.add("PlanGeneration", *[FakeReply(text=CUT_PLAN, done_reason="length")] * 3)
    brain.add("text", "The first item is: tidy the docs.")

    result = soothe("-p", "Read notes.txt and tell me the first item", "--json")

    assert result.code == 0, result.err
    final = events(result)[-1]
    assert final["type"] == "answer.final"
    answer, note = final["text"].split("\n\n")
    assert answer == "The first item is: tidy the docs."
    assert note.startswith("_Answered from the workspace facts alone: no plan could be made (")
    assert "could not get a valid PlanGeneration" in note and "cut off at the token limit" in note
    assert kinds(fake) == ["Classification", *["PlanGeneration"] * 3, "text"]
    facts_call = prompt_text(fake.chat_requests()[-1])
    assert "- tidy the docs\n- ship it" in facts_call
    assert "Request: Read notes.txt and tell me the first item" in facts_call
    (goal,) = stored().goals
    assert goal.status == "completed" and goal.findings == final["text"]
    shown = soothe("threads", "show", only_thread(soothe)).out
    assert "### ✓ G1 — Read notes.txt and tell me the first item" in shown
    assert "Answered from the workspace facts alone" in shown
    assert not brain.leftover() and not brain.unscripted


def test_when_the_facts_call_gives_no_answer_the_facts_are_the_answer(
    soothe, brain: Brain, env: Env, fake
) -> None:
    (env.workspace / "notes.txt").write_text(NOTES)
    brain.add("Classification", {"label": "complex"})
    brain.add("PlanGeneration", *["I'm not sure what you would like me to do here."] * 3)
    brain.add("text", '{"tool": "answer"}')

    result = soothe("-p", "Read notes.txt and tell me the first item")

    assert result.code == 0, result.err
    assert result.out.startswith(RAW_MARK)
    assert "- tidy the docs\n- ship it" in result.out
    assert "no plan could be made (could not get a valid PlanGeneration" in result.out
    assert ledger(env, "verify")[-1].startswith(
        "answered from the workspace facts: the reply was rejected (JSON instead of an answer)"
    )


@pytest.mark.parametrize(
    "request_text",
    [
        "Think about tabs versus spaces",  # notes.txt is in the workspace, not the request
        "Add a line to notes.txt",  # facts bear on it, but facts cannot make a change
    ],
)
def test_planning_that_fails_with_no_facts_bearing_on_the_request_still_fails(
    soothe, brain: Brain, env: Env, fake, request_text: str
) -> None:
    (env.workspace / "notes.txt").write_text(NOTES)
    brain.add("Classification", {"label": "complex"})
    brain.add("PlanGeneration", *["no plan, sorry"] * 3)

    result = soothe("-p", request_text)

    assert result.code == 1
    assert result.one_error() == (
        "error: the goal could not be completed: could not get a valid PlanGeneration "
        "from the model after 3 tries: the reply is not a JSON object"
    )
    assert "text" not in kinds(fake)


def test_which_facts_bear_on_a_request() -> None:
    def entry(n: int, summary: str, content: str, kind: str = "bootstrap") -> EvidenceEntry:
        return EvidenceEntry(
            id=f"E-G1-{n}", goal_id="G1", n=n, kind=kind, summary=summary, content=content
        )  # type: ignore[arg-type]

    listing = entry(1, "listing: . (2 entries)", "README.md\nnotes.txt")
    notes = entry(2, "file: notes.txt (26 chars)", NOTES)
    rules = entry(3, "instructions: AGENTS.md", "Always answer in French about bananas.")
    assert facts_bear_on("Read notes.txt and tell me the first item", [listing, notes])
    assert answerable_from_facts("Read notes.txt and tell me the first item", [listing, notes])
    assert not answerable_from_facts("Fix the typo in notes.txt", [listing, notes])
    assert facts_bear_on("List the files", [listing])  # no subject of its own
    assert facts_bear_on("Is there a README?", [listing])
    assert not facts_bear_on("What do bananas cost?", [listing, rules])
    assert not facts_bear_on("List the files", [rules])  # rules are not facts

    readme = entry(4, "file: README.md (60 chars)", README)
    read = entry(5, "read_file(path=notes.txt) -> - tidy the docs", NOTES, kind="tool")
    answer = entry(6, "S-01: the notes say tidy the docs", "tidy the docs", kind="ledger")
    own = [notes]  # the follow-up named notes.txt; the loader read it for the follow-up
    assert not thread_bears_on("read notes.txt and list the tasks", own, [listing, readme])
    assert not thread_bears_on("read notes.txt and list the tasks", own, [answer])
    assert thread_bears_on("read notes.txt and list the tasks", own, [readme, read])
    assert thread_bears_on("read notes.txt again", own, [notes])  # an earlier loader read
    assert thread_bears_on("which berths are tracked?", [], [readme])
    assert not thread_bears_on("which invoices are unpaid?", [], [readme, listing])
    assert thread_bears_on("what was the first item again?", [], [])  # about the thread


# --- Deliver 8: failed edits and refused writes ------------------------------------------


def _editing_step(body: dict[str, Any]) -> Any:
    """A step that tries two edits whose 'old' text is not in the file, then says it
    added the docstring (what a 7B model did in issue 31)."""
    tried = sum(1 for m in body["messages"] if m.get("role") == "tool")
    if tried == 0:
        return tool("edit_file", path="store.py", old="def load(path) :", new='"""S."""\n')
    if tried == 1:
        return tool("edit_file", path="store.py", old="def  load(path):", new='"""S."""\n')
    return "I added a module docstring to store.py."


def test_a_goal_whose_edits_all_failed_is_not_completed(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    """Issue 31 item 5, with the default profile and bounds: "add a docstring to
    store.py", both edit_file calls failed ("'old' text not found"), yet the goal was
    validated and completed (exit 0). Now the step fails, the model's "done" is not
    believed, the goal is planned again, and after a second refused "done" in each round
    the goal fails, saying the edit did not happen."""
    (env.workspace / "store.py").write_text(STORE)
    brain.add("Classification", {"label": "simple"})
    plan = {"steps": [{"id": "S-01", "description": "Add a docstring to store.py"}]}
    brain.always["PlanGeneration"] = plan
    brain.always["step"] = _editing_step
    brain.always["StatusAssessment"] = DONE
    brain.always["Reflection"] = {"what_failed": "the edit", "try_next": "copy the text"}
    brain.always["complete"] = "Added a docstring to store.py."

    result = soothe("-p", "add a docstring to store.py", "--yes")

    assert (result.code, result.out) == (1, "")
    line = re.sub(r"S-01(\.\d)?", "S-01", result.one_error())  # the round's step id
    assert line == (
        "error: the goal could not be completed: the model said the goal was done, but the "
        "change did not happen (S-01 failed); S-01: the change did not happen (2 tries): "
        "edit_file(store.py): 'old' text not found in store.py"
    )
    # Three rounds (the default): plan, step, a refused "done", plan, step, a second
    # refused "done"; then a reflection and the next round (which starts by assessing).
    step = ["step"] * 3
    once = [*step, "StatusAssessment", "PlanGeneration", *step, "StatusAssessment"]
    again = ["StatusAssessment", "PlanGeneration", *step, "StatusAssessment"]
    assert [k.split(":")[0] for k in kinds(fake)] == [
        "Classification",
        "PlanGeneration",
        *once,
        "Reflection",
        *again,
        "Reflection",
        *again,
    ]
    assert "complete" not in kinds(fake)  # no final answer is asked for
    assert ledger(env, "plan")[1].endswith("Not accepted: the change did not happen (S-01 failed).")
    (goal,) = stored().goals
    assert goal.status == "failed" and goal.findings == ""
    assert (env.workspace / "store.py").read_text() == STORE
    shown = soothe("threads", "show", only_thread(soothe)).out
    assert "### ✗ G1 — add a docstring to store.py" in shown
    assert "| failed | Add a docstring to store.py | the change did not happen" in shown


def test_a_read_that_worked_does_not_carry_an_edit_that_did_not(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    """The goal-level rule: one step read store.py, the edit step failed; "done" is not
    believed while no change happened, and the next plan's edit that works completes it."""
    (env.workspace / "store.py").write_text(STORE)
    brain.add("Classification", {"label": "complex"})
    brain.add(
        "PlanGeneration",
        {
            "steps": [
                {"id": "S-01", "description": "Read store.py"},
                {"id": "S-02", "description": "Add the docstring", "dependencies": ["S-01"]},
            ]
        },
        {"steps": [{"id": "S-03", "description": "Add the docstring with the exact text"}]},
    )
    brain.step("S-01", tool("read_file", path="store.py"), "store.py defines load(path).")
    brain.step("S-02", _editing_step, _editing_step, _editing_step)
    new = '"""Loading stored files."""\ndef load(path):'
    brain.step("S-03", tool("edit_file", path="store.py", old="def load(path):", new=new), "Done.")
    brain.add("StatusAssessment", DONE, DONE)
    brain.add("complete", "Added a module docstring to store.py.")

    result = soothe("-p", "add a docstring to store.py", "--yes")

    assert (result.code, result.out) == (0, "Added a module docstring to store.py.\n"), result.err
    assert (env.workspace / "store.py").read_text().startswith('"""Loading stored files."""')
    assert "Not accepted: the change did not happen (S-02 failed)." in ledger(env, "plan")[1]
    (goal,) = stored().goals
    assert goal.status == "completed"
    assert stored().step_status(goal.id)["S-03"] == "completed"
    assert not brain.leftover() and not brain.unscripted


# --- Deliver 8: a follow-up answered without new steps -----------------------------------


def _readme_then(soothe: Any, brain: Brain, env: Env) -> str:
    """A first request in the thread: summarise README.md; its thread id."""
    (env.workspace / "README.md").write_text(README)
    (env.workspace / "notes.txt").write_text(NOTES)
    brain.add("Classification", {"label": "simple"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Read README.md"}]})
    summary = "Harbour moors boats in the bay and tracks their berths."
    brain.step("S-01", tool("read_file", path="README.md"), summary)
    first = soothe("-p", "Summarize README.md")
    assert (first.code, first.out) == (0, summary + "\n"), first.err
    return only_thread(soothe)


def test_a_follow_up_about_another_file_plans_instead_of_answering_from_the_thread(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    """Issue 31 item 5: after a README task, "read notes.txt and list the tasks" completed
    with zero steps and answered with the README text. Nothing the thread found is about
    notes.txt, so the assessment's "done" is not believed and the follow-up plans."""
    thread = _readme_then(soothe, brain, env)
    before = len(fake.chat_requests())
    brain.add("Classification", {"label": "simple"})
    brain.add("StatusAssessment", DONE, DONE)
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Read notes.txt"}]})
    brain.step("S-01", tool("read_file", path="notes.txt"), "Tasks: tidy the docs; ship it.")
    brain.add("complete", "The tasks are: tidy the docs, ship it.")

    result = soothe("-p", "read notes.txt and list the tasks", "--thread", thread)

    assert (result.code, result.out) == (0, "The tasks are: tidy the docs, ship it.\n"), result.err
    assert kinds(fake, before) == [
        "Classification",
        "StatusAssessment",
        "PlanGeneration",
        *["step:S-01.2" if "step:S-01.2" in kinds(fake, before) else "step:S-01"] * 2,
        "StatusAssessment",
        "complete",
    ]
    refused = ledger(env, "plan")[-3]
    assert refused.endswith(
        "Not accepted: no new step, and nothing this thread found bears on the request."
    )
    _, second = stored().goals_of(thread)
    assert second.status == "completed" and len(stored().steps[second.id]) == 1
    assert not brain.leftover() and not brain.unscripted


def test_a_follow_up_about_a_file_the_thread_read_is_answered_without_steps(
    soothe, brain: Brain, env: Env, fake, stored
) -> None:
    thread = _readme_then(soothe, brain, env)
    before = len(fake.chat_requests())
    brain.add("Classification", {"label": "simple"})
    brain.add("StatusAssessment", DONE)
    brain.add("complete", "It moors boats and tracks their berths.")

    result = soothe("-p", "what does README.md say Harbour tracks?", "--thread", thread)

    assert (result.code, result.out) == (0, "It moors boats and tracks their berths.\n")
    assert kinds(fake, before) == ["Classification", "StatusAssessment", "complete"]
    second = stored().goals_of(thread)[1]
    assert second.status == "completed" and stored().steps[second.id] == []


# --- Deliver 8: the grounding check on the default profile -------------------------------


def test_an_answer_about_a_named_file_must_rest_on_it_on_the_default_profile(
    soothe, brain: Brain, env: Env, fake
) -> None:
    """The final-answer grounding check applied to the small profile only: on the default
    profile an answer about notes.txt that shares nothing with notes.txt was accepted."""
    (env.workspace / "notes.txt").write_text(NOTES)
    brain.add("Classification", {"label": "complex"})
    brain.add("PlanGeneration", {"steps": [{"id": "S-01", "description": "Read notes.txt"}]})
    brain.step("S-01", "I have looked at it.")
    brain.add("StatusAssessment", DONE)
    brain.add("complete", "The goal is to read notes.txt. The plan was made by the planner.")
    brain.add("text", "The first item is: tidy the docs.")

    result = soothe("-p", "Read notes.txt and tell me the first item")

    assert (result.code, result.out) == (0, "The first item is: tidy the docs.\n"), result.err
    assert kinds(fake)[-2:] == ["complete", "text"]
    assert ledger(env, "verify")[-1].startswith(
        "final answer rejected (it shares nothing with the workspace facts)"
    )
    assert not brain.leftover() and not brain.unscripted


async def test_the_direct_subagent_route_does_not_complete_on_failed_edits(tmp_path) -> None:
    from soothe.engine.config import load_settings
    from soothe.engine.session import Session

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "store.py").write_text(STORE)
    brain = Brain()
    brain.always["step"] = _editing_step
    settings = load_settings(
        None,
        {
            "model": {"provider": "ollama", "name": "scripted"},
            "storage": {"data_dir": str(tmp_path / "data")},
            "tools": {"workspace": str(ws), "approval": "auto", "clarify": "auto"},
        },
    )
    session = Session(
        settings, models={"default": brain.model()}, db_path=":memory:", checkpoint_path=":memory:"
    )
    await session.start()
    try:
        thread = await session.ensure_thread("docstring")
        outcome = await session.runner.run("add a docstring to store.py", thread, subagent="core")
        (goal,) = session.context.list_goals(thread_id=thread)
    finally:
        await session.close()

    assert not outcome.ok
    assert outcome.error.startswith("the change did not happen (2 tries): edit_file(store.py)")
    assert goal.status == "failed"
    assert (ws / "store.py").read_text() == STORE
