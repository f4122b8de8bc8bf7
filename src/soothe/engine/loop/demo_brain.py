"""What the demo model says, so a new user sees the whole app work with no server.

It is deliberately simple and honest: it labels itself the demo model, plans the same
small survey of the workspace for any task (two parallel steps and one that depends on
both), really calls the tools, and summarises what they returned.
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Any

from soothe.engine.text import clip

_GREETING = re.compile(r"^\s*(hi|hello|hey|thanks|thank you|good (morning|evening))\b", re.I)
_ARITH = re.compile(r"^[\d\s+\-*/().%^]+$")
_TASKY = re.compile(
    r"\b(file|files|folder|dir|directory|workspace|readme|code|repo|project)\b", re.I
)
_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
}


def _arith(expr: str) -> float | int | None:
    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            if isinstance(node.op, ast.Pow) and abs(ev(node.right)) > 32:
                raise ValueError("too big")
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise ValueError("not arithmetic")

    try:
        value = ev(ast.parse(expr.replace("^", "**"), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, TypeError):
        return None
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _last_human(messages: list[Any]) -> str:
    for message in reversed(messages):
        if message.type == "human":
            return message.text
    return ""


def _section(text: str, title: str) -> str:
    match = re.search(rf"## {re.escape(title)}\n(.*?)(?:\n## |\Z)", text, re.S)
    return match.group(1).strip() if match else ""


def _after(text: str, marker: str) -> str:
    index = text.find(marker)
    return text[index + len(marker) :].strip() if index >= 0 else ""


def _tidy(line: str) -> str:
    return clip(
        re.sub(r"^\[E-[^\]]+\]\s*", "", line.strip()).replace("\\n", " "), 140, flatten=False
    )


def classify(messages: list[Any], schema: dict[str, Any]) -> dict[str, Any]:
    text = _last_human(messages).strip()
    if text.startswith("## "):  # the tool list and the history first, the request last
        text = text.rsplit("\n\n", 1)[-1].strip()
    question = text.rstrip("?").strip()
    for prefix in ("what is", "what's", "compute", "calculate"):
        if question.lower().startswith(prefix):
            question = question[len(prefix) :].strip()
    if question and _ARITH.match(question) and (value := _arith(question)) is not None:
        return {"label": "quiz", "answer": f"{question} = {value}", "reason": "arithmetic"}
    if _GREETING.match(text):
        return {
            "label": "trivial",
            "answer": "Hello! I am the demo model. Give me a task about this workspace and "
            "watch the plan run, or connect Ollama for real answers.",
            "reason": "greeting",
        }
    if text.endswith("?") and not _TASKY.search(text):
        return {
            "label": "quiz",
            "answer": "I am the demo model, so I cannot really answer questions. Connect a "
            "model (`soothe doctor` shows how) — or ask me to look at the workspace.",
            "reason": "general question",
        }
    return {"label": "complex", "answer": "", "reason": "a task for the workspace"}


def plan(messages: list[Any], schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "steps": [
            {
                "id": "S-01",
                "description": "List the files in the workspace",
                "expected_output": "the top-level entries",
                "dependencies": [],
                "kind": "action",
                "questions": [],
            },
            {
                "id": "S-02",
                "description": "Read the README of the workspace",
                "expected_output": "what the project says about itself",
                "dependencies": [],
                "kind": "action",
                "questions": [],
            },
            {
                "id": "S-03",
                "description": "Summarise the workspace from the file list and the README",
                "expected_output": "a short summary",
                "dependencies": ["S-01", "S-02"],
                "kind": "action",
                "questions": [],
            },
        ],
        "execution_mode": "parallel",
        "reasoning": "Survey the workspace in parallel, then summarise (demo plan).",
    }


def assess(messages: list[Any], schema: dict[str, Any]) -> dict[str, Any]:
    steps = _section(_last_human(messages), "Steps so far")
    if "[completed]" in steps and "[pending]" not in steps:
        return {
            "status": "done",
            "goal_progress": "complete",
            "reasoning": "Every planned step finished.",
            "require_goal_completion": True,
        }
    if "[pending]" in steps:
        return {"status": "continue", "goal_progress": "medium", "reasoning": "Steps remain."}
    return {"status": "replan", "goal_progress": "low", "reasoning": "A new plan is needed."}


def decompose(messages: list[Any], schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "subgoals": [
            {"key": "A", "description": "Survey the files in the workspace", "priority": 60},
            {
                "key": "B",
                "description": "Summarise what the workspace is for",
                "depends_on": ["A"],
                "informs": [],
                "priority": 50,
            },
        ],
        "reasoning": "Survey first, then summarise (demo decomposition).",
    }


def verify(messages: list[Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The verifier's call: a criterion is met when some evidence entry (or the answer)
    holds every subject word of it, resting on that entry; else unknown. Honest about
    being a word match, not a judgement."""
    from soothe.engine.loop.prompts import CRITERIA_TITLE
    from soothe.engine.words import content_words

    asked = _last_human(messages)
    entries: list[tuple[str, str]] = []
    for line in _section(asked, "Evidence").splitlines():
        if match := re.match(r"^\[([^\]]+)\]\s*(.*)$", line):
            entries.append((match.group(1), match.group(2)))
        elif entries:
            entries[-1] = (entries[-1][0], f"{entries[-1][1]}\n{line}")
    answer = _section(asked, "The answer the goal produced")
    checks = []
    for line in _section(asked, CRITERIA_TITLE).splitlines():
        match = re.match(r"^(\d+)\.\s+(.*)$", line.strip())
        if not match:
            continue
        words = content_words(match.group(2))
        found = [eid for eid, text in entries if words <= content_words(text)]
        in_answer = bool(words) and words <= content_words(answer)
        if found or in_answer:
            where = f"{found[0]} names" if found else "the answer names"
            check = {"verdict": "met", "reason": f"{where} every word of it (demo word match)"}
        else:
            check = {"verdict": "unknown", "reason": "no evidence names it (demo word match)"}
        checks.append({"number": int(match.group(1)), **check, "evidence": found[:2]})
    return {"criteria": checks or [{"number": 1, "verdict": "unknown", "reason": "none read"}]}


def chat(messages: list[Any], info: dict[str, Any]) -> Any:
    """Plain chat: tool calls for the demo plan's steps, then answers from their results."""
    from soothe.engine.llm.scripted import ScriptedReply

    tool_results = [m for m in messages if m.type == "tool"]
    asked = _last_human(messages)
    match = re.search(r"^Step [^:\n]+: (.*)$", asked, re.M)
    step = match.group(1) if match else asked
    has_tools = bool(info.get("tools"))
    if has_tools and not tool_results:
        if re.search(r"\blist the files\b", step, re.I):
            return ScriptedReply(tool_calls=[{"name": "list_dir", "args": {"path": "."}}])
        if re.search(r"\bread the readme\b", step, re.I):
            return ScriptedReply(tool_calls=[{"name": "glob", "args": {"pattern": "README*"}}])
    if has_tools and tool_results and re.search(r"\bread the readme\b", step, re.I):
        found = [ln.strip() for ln in str(tool_results[-1].content).splitlines() if ln.strip()]
        # A path, not glob's "no paths match README*; …" sentence.
        if len(tool_results) == 1 and found and re.fullmatch(r"\S*README\S*", found[0]):
            return ScriptedReply(tool_calls=[{"name": "read_file", "args": {"path": found[0]}}])
    if tool_results:
        body = str(tool_results[-1].content).strip().splitlines()
        shown = "\n".join(f"    {line}" for line in body[:12])
        more = f"\n    … {len(body) - 12} more lines" if len(body) > 12 else ""
        return f"The tool returned (demo model, no interpretation):\n\n{shown}{more}"
    evidence = _section(asked, "Evidence") or _after(asked, "Evidence so far:")
    if evidence:
        lines = [_tidy(ln) for ln in evidence.splitlines() if ln.strip()][:8]
        listing = "\n".join(f"- {ln}" for ln in lines)
        return (
            "**Summary from the demo model** — what the steps found:\n\n"
            f"{listing}\n\nConnect a real model (`soothe doctor`) for an actual summary."
        )
    return (
        "This is the demo model: no real model is connected. "
        "Set model.provider to ollama or openai (see `soothe doctor`) for real answers."
    )


def install() -> None:
    """Register the handlers with the demo provider (idempotent)."""
    from soothe.engine.llm.demo import register_demo_chat, register_demo_responder

    register_demo_responder("Classification", classify)
    register_demo_responder("PlanGeneration", plan)
    register_demo_responder("StatusAssessment", assess)
    register_demo_responder("GoalDecomposition", decompose)
    register_demo_responder("Verification", verify)
    register_demo_chat(chat)
