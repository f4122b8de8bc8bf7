"""The done-when criteria in a tight window (issue 33 item 1): the planner's and the
verifier's prompts keep the criteria (REQUEST priority, with a floor) while the evidence,
history and context are clipped or dropped; the verifier's reply is read strictly
(invented evidence ids dropped, a criterion left out unknown, bad numbers re-asked)."""

from __future__ import annotations

from soothe.engine.context.models import EvidenceEntry
from soothe.engine.goal_contract import Criterion
from soothe.engine.llm.packer import pack_parts
from soothe.engine.loop import prompts
from soothe.engine.loop.planner import PlanningContext
from soothe.engine.loop.schemas import CriterionCheck, Verification
from soothe.engine.loop.verifier import numbered, problems, unmet_text, verdicts, verifier_parts

CRITERIA = (Criterion(text="the README names Soothe"), Criterion(text="no test fails"))


def entry(n: int, text: str) -> EvidenceEntry:
    return EvidenceEntry(id=f"E-G1-{n}", n=n, goal_id="G1", kind="tool", summary=text, content=text)


def test_the_criteria_survive_a_window_the_evidence_does_not() -> None:
    ctx = PlanningContext(
        goal="Check the project",
        evidence="x" * 20_000,
        history="y" * 20_000,
        projection="z" * 20_000,
        criteria=numbered(CRITERIA),
    )
    packed = pack_parts(ctx.parts(), 1_500)
    assert (
        f"## {prompts.CRITERIA_TITLE}\n1. the README names Soothe\n2. no test fails" in packed.text
    )
    assert "Evidence" in packed.clipped + packed.dropped
    parts = verifier_parts(
        "Check the project", CRITERIA, "done", [entry(n, "w" * 900) for n in range(1, 40)]
    )
    packed = pack_parts(parts, 1_500)
    assert "1. the README names Soothe\n2. no test fails" in packed.text
    assert "[E-G1-39]" in packed.text and "[E-G1-1]" not in packed.text  # newest kept
    assert "For each numbered done-when criterion" in packed.text  # the rules, whole


def test_verdicts_keep_only_the_goal_s_evidence_and_fill_the_gaps() -> None:
    got = Verification(
        criteria=[
            CriterionCheck(number=1, verdict="met", reason="ok", evidence=["E-G1-2", "E-G9-9"])
        ]
    )
    judged = verdicts(CRITERIA, got, {"E-G1-2"})
    assert judged[0] == Criterion(
        text="the README names Soothe", verdict="met", reason="ok", evidence=("E-G1-2",)
    )
    assert judged[1].verdict == "unknown" and judged[1].reason
    assert unmet_text(judged) == (
        'done-when not met: "no test fails" (unknown: the verifier gave no verdict for it)'
    )
    assert problems(got, 2) == ["give a verdict for every criterion; missing: 2"]
    bad = Verification(criteria=[CriterionCheck(number=3, verdict="met")])
    assert problems(bad, 2)[0] == "there is no criterion 3 (they are 1-2)"
    assert "[last check: unmet: no]" in numbered(
        [Criterion(text="a", verdict="unmet", reason="no")]
    )
