"""Tool calls normalised against the offered tools before anything runs them."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from soothe.engine.llm.toolcalls import normalize_tool_calls


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
