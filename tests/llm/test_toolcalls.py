"""Tool calls normalised against the offered tools before anything runs them."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from soothe.engine.llm.toolcalls import coerce_args, normalize_tool_calls


@tool
def write_file(path: str, content: str) -> str:
    """Write text to a file."""
    return "ok"


@tool
def run_query(filters: dict, limit: int, columns: list[str], verbose: bool = False) -> str:
    """Run a query."""
    return "ok"


def call(name: str, args: dict, call_id: str = "c1") -> dict:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def test_object_where_a_string_is_declared_goes_back_to_json_text() -> None:
    # ChatOllama parses any JSON-looking argument string; file content must stay text.
    msg = AIMessage(
        content="", tool_calls=[call("write_file", {"path": "a.json", "content": {"x": 1}})]
    )
    out = normalize_tool_calls(msg, [write_file])
    assert out.tool_calls[0]["args"] == {"path": "a.json", "content": '{"x": 1}'}


def test_json_strings_inside_values_are_parsed_when_declared_structured() -> None:
    args = {"filters": '{"year": 2024}', "limit": "5", "columns": '["a", "b"]', "verbose": "true"}
    msg = AIMessage(content="", tool_calls=[call("run_query", args)])
    out = normalize_tool_calls(msg, [run_query])
    assert out.tool_calls[0]["args"] == {
        "filters": {"year": 2024},
        "limit": 5,
        "columns": ["a", "b"],
        "verbose": True,
    }


def test_unparseable_values_are_left_for_the_tool_to_reject() -> None:
    msg = AIMessage(
        content="", tool_calls=[call("run_query", {"filters": "{oops", "limit": "many"})]
    )
    out = normalize_tool_calls(msg, [run_query])
    assert out.tool_calls[0]["args"] == {"filters": "{oops", "limit": "many"}


def test_unknown_tool_moves_to_invalid_calls() -> None:
    msg = AIMessage(
        content="",
        tool_calls=[
            call("delete_all", {}),
            call("write_file", {"path": "p", "content": "c"}, "c2"),
        ],
    )
    out = normalize_tool_calls(msg, [write_file])
    assert [tc["name"] for tc in out.tool_calls] == ["write_file"]
    assert out.invalid_tool_calls[0]["name"] == "delete_all"
    assert "unknown tool 'delete_all'" in out.invalid_tool_calls[0]["error"]
    assert "write_file" in out.invalid_tool_calls[0]["error"]


def test_without_tools_calls_pass_through() -> None:
    msg = AIMessage(content="hi")
    assert normalize_tool_calls(msg, None) is msg


# --- the one rule: coerce_args -----------------------------------------------------------

PARAMS = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "content": {"type": "string"},
        "limit": {"type": "integer"},
        "timeout": {"type": "number"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "flags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object", "properties": {"depth": {"type": "integer"}}},
    },
}


def test_declared_text_fields_get_json_text_other_strings_keep_the_wrong_type() -> None:
    args = {"path": ["a", "b"], "content": {"k": [1]}, "note": {"x": 1}}
    out = coerce_args(args, PARAMS, text_fields={"content"})
    assert out == {"path": ["a", "b"], "content": '{"k": [1]}', "note": {"x": 1}}
    # A list written as a string where a path is declared is given back as the list, so
    # validation refuses it instead of the text being used as a path.
    out = coerce_args(
        {"path": '["rm", "-rf"]', "content": '["kept"]'}, PARAMS, text_fields={"content"}
    )
    assert out == {"path": ["rm", "-rf"], "content": '["kept"]'}
    # Without text_fields every string parameter is text.
    assert coerce_args({"path": ["a"]}, PARAMS) == {"path": '["a"]'}


def test_numbers_lists_and_nested_objects_from_strings() -> None:
    args = {"limit": " 7 ", "timeout": "2.5", "flags": '["-v"]', "opts": {"depth": "3"}}
    assert coerce_args(args, PARAMS, text_fields=()) == {
        "limit": 7,
        "timeout": 2.5,
        "flags": ["-v"],
        "opts": {"depth": 3},
    }
    assert coerce_args({"limit": "2.5", "flags": "{}", "x": "1"}, PARAMS) == {
        "limit": "2.5",  # not an integer: left for validation to refuse
        "flags": "{}",  # an object where a list is declared: left as it came
        "x": "1",  # not a declared parameter: untouched
    }
    assert coerce_args({"path": "[not json", "limit": "null"}, PARAMS, text_fields=()) == {
        "path": "[not json",
        "limit": "null",
    }


def test_coerce_false_leaves_values_for_the_caller() -> None:
    msg = AIMessage(
        content="", tool_calls=[call("run_query", {"filters": '{"y": 1}', "limit": "5"})]
    )
    out = normalize_tool_calls(msg, [run_query], coerce=False)
    assert out.tool_calls[0]["args"] == {"filters": '{"y": 1}', "limit": "5"}
    bad = AIMessage(content="", tool_calls=[call("nope", {})])
    assert normalize_tool_calls(bad, [run_query], coerce=False).invalid_tool_calls
