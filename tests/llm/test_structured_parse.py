"""parse_structured: strict first, then local repair, then validation problems."""

from __future__ import annotations

from soothe.engine.llm.schema import bounded_json_schema
from soothe.engine.llm.structured import feedback_text, parse_structured, schema_hint
from tests.llm.conftest import Answer


def test_strict_json_is_not_marked_repaired() -> None:
    out = parse_structured('{"answer": "4", "kind": "fact"}', Answer)
    assert out.value == Answer(answer="4", kind="fact")
    assert not out.repaired


def test_near_miss_is_repaired() -> None:
    out = parse_structured("```json\n{'answer': '4', 'kind': 'fact',}\n```", Answer)
    assert out.value == Answer(answer="4", kind="fact")
    assert out.repaired


def test_valid_json_with_wrong_fields_reports_problems_without_repair_flag() -> None:
    out = parse_structured('{"answer": "4", "kind": "guess"}', Answer)
    assert out.value is None
    assert not out.repaired
    assert any(p.startswith("kind:") for p in out.problems)


def test_too_long_string_asks_for_shorter() -> None:
    out = parse_structured('{"answer": "' + "x" * 200 + '", "kind": "fact"}', Answer)
    assert out.value is None
    assert "keep it shorter" in out.problems[0]


def test_truncated_by_token_limit_is_refused_even_if_closable() -> None:
    raw = '{"answer": "4", "kind": "fact", "tags": ["a", "b'
    assert parse_structured(raw, Answer).value is not None  # stopped early: closed and valid
    out = parse_structured(raw, Answer, truncated=True)
    assert out.value is None
    assert out.truncated
    assert "token limit" in out.problems[0]


def test_complete_reply_at_token_limit_is_accepted() -> None:
    out = parse_structured('{"answer": "4", "kind": "fact"}', Answer, truncated=True)
    assert out.value is not None


def test_no_object_at_all() -> None:
    assert parse_structured("I think it is 4.", Answer).problems == [
        "the reply is not a JSON object"
    ]
    assert parse_structured("", Answer).problems == ["the reply was empty"]


def test_feedback_names_the_problems() -> None:
    out = parse_structured('{"answer": "4"}', Answer)
    text = feedback_text(out, "Answer")
    assert "not a valid Answer object" in text
    assert "kind: Field required" in text
    assert "only the corrected JSON object" in text


def test_schema_hint_is_compact_and_untitled() -> None:
    hint = schema_hint(bounded_json_schema(Answer))
    assert '"maxLength":80' in hint
    assert '"title"' not in hint
