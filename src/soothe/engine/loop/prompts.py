"""Prompt text for the planner and the completion call. Short on purpose: local models."""

from __future__ import annotations

PLANNER_SYSTEM = """You are the planner of Soothe, an agent that works toward a goal in steps.
Tools the steps can use: read_file, list_dir, glob, grep, write_file, edit_file, run_shell
(all inside the workspace). Reply with JSON only, matching the schema."""

GENERATE_RULES = """Make a short plan (1-5 steps) for the goal.
- Step ids look like S-01, S-02. A step lists the ids it needs in "dependencies".
- Steps without dependencies on each other run in parallel.
- Use kind "ask_user" with "questions" only when the goal cannot be done without the user's
  answer; otherwise kind "action".
- One step is enough when one tool call or one answer reaches the goal.
- Do not repeat work already shown in the evidence."""

ASSESS_RULES = """Judge progress toward the goal from the evidence and step results.
status: "done" if the goal is reached, "continue" if the current plan still has useful
pending steps, "replan" if a new plan is needed (a step failed or the plan is used up).
plan_action: "keep" while the pending steps still serve, "new" when a new plan is needed.
next_action: the next thing to do, in a few words.
require_goal_completion: false when the last step's answer already answers the goal."""

REFLECT_RULES = """The attempt above did not reach the goal. In a few words each:
what_failed: what went wrong; try_next: what a new attempt should do differently;
worth_retrying: false only when no new attempt can reach the goal."""

COMPLETE_RULES = """Write the final answer to the goal for the user, using the step results and
evidence below. Be direct and concise; use Markdown where it helps."""

CLASSIFY_SYSTEM = """Classify the user's request for an agent that can use the tools listed
with it (workspace files, edits, shell commands and any tool the user added).
label: "quiz" = a question answerable from general knowledge with no tools or files
(then put the full answer in "answer"); a request one of the listed tools could answer
is not a quiz; "trivial" = a greeting or chit-chat (answer it in "answer"); "simple" =
needs one or two tool actions; "complex" = needs several steps.
Reply with JSON only."""

TOOLS_TITLE = "Tools the agent can use"
"""The title of the classification prompt's tool list (``classify.tool_lines``)."""

DECOMPOSE_RULES = """Split the goal into 1-4 sub-goals that can each be pursued on their own.
Give each a short key (A, B, C...). "depends_on" lists keys that must finish first;
"informs" lists keys whose findings help this one; "conflicts_with": keys that must not
run at the same time, e.g. both edit the same file. Reply with JSON only."""


GENERATE_RULES_SMALL = """Make a short plan (1-3 steps) for the goal.
- Give each step a short id; "dependencies" lists the ids a step needs.
- One step is enough when one tool call or one answer reaches the goal.
- Use kind "ask_user" with "questions" only when the user must answer; else "action"."""
"""The small profile's plan rules: no sample ids a small model copies into every field."""

DECOMPOSE_RULES_SMALL = """Split the goal into 1-3 sub-goals that can each be pursued alone.
Give each a short key. "depends_on" lists keys that must finish first; "informs" lists
keys whose findings help. Reply with JSON only."""


def generate_rules(small: bool = False) -> str:
    """The plan rules; ``small``: the small profile's short form without examples."""
    return GENERATE_RULES_SMALL if small else GENERATE_RULES


def decompose_rules(small: bool = False) -> str:
    return DECOMPOSE_RULES_SMALL if small else DECOMPOSE_RULES


def section(title: str, body: str) -> str:
    body = body.strip()
    return f"## {title}\n{body}\n" if body else ""


VERIFY_SYSTEM = """You are the verifier of Soothe. A goal was judged done; check each of its
done-when criteria against the evidence listed, and nothing else. Reply with JSON only,
matching the schema."""

VERIFY_RULES = """For each numbered done-when criterion give one entry:
number: the criterion's number;
verdict: "met" only when the evidence or the answer shows it holds, "unmet" when they show
it does not, "unknown" when they do not say;
reason: one short line saying why;
evidence: the ids of the evidence entries the verdict rests on, as listed (like E-G1-3)."""

CRITERIA_TITLE = "Done when (every one of these must hold)"
"""The title of a goal's done-when criteria in the planner's and the verifier's prompts."""
