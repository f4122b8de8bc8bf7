"""What routing knows of the tools (engine/classify.py): one bounded line per offered
tool, and which requests match an MCP tool (those are never a quiz)."""

from __future__ import annotations

from soothe.engine.agent.tools import tool_summaries
from soothe.engine.classify import (
    MAX_TOOL_LINES,
    TOOL_LIST_CHARS,
    OfferedTool,
    first_sentence,
    mcp_match,
    tool_lines,
)

OURS = [OfferedTool(name, description) for name, description in tool_summaries()]
GLOSSARY = OfferedTool(
    "lookup_word",
    "[glossary] Look up what a word means in the project glossary. Returns the entry.",
    mcp=True,
    server="glossary",
)
WEATHER = OfferedTool("get_weather", "[wx] Get the forecast for a city.", mcp=True, server="wx")


def test_a_line_is_the_name_and_the_first_sentence_clipped() -> None:
    assert (
        first_sentence(GLOSSARY.description) == "Look up what a word means in the project glossary."
    )
    long = "x " * 200
    assert len(first_sentence(long)) == 80 and first_sentence(long).endswith("…")
    assert first_sentence("Line one\nline two") == "Line one"
    lines = tool_lines([*OURS, GLOSSARY], "anything")
    assert (
        lines[0]
        == "- read_file: Read a text file in the workspace; long files come in parts (use offset)."
    )
    assert "- lookup_word: Look up what a word means in the project glossary." in lines
    assert len(lines) == len(OURS) + 1


def test_the_list_is_bounded_and_the_matching_mcp_tool_comes_first() -> None:
    many = [
        OfferedTool(f"tool_{i}", f"[srv] Does thing number {i} with some care. More.", mcp=True)
        for i in range(40)
    ]
    lines = tool_lines([*OURS, *many, GLOSSARY], "What does zephyr mean in our glossary?")
    assert lines[0].startswith("- lookup_word: ")  # kept, however long the list
    assert len(lines) == MAX_TOOL_LINES + 1
    assert lines[-1] == f"- ... and {len(OURS) + 41 - MAX_TOOL_LINES} more"
    assert sum(len(line) + 1 for line in lines[:-1]) <= TOOL_LIST_CHARS
    hostile = OfferedTool("big", "y" * 5000, mcp=True)
    assert all(len(line) <= 120 for line in tool_lines([hostile]))


def test_a_request_matches_an_mcp_tool_by_its_subject_words() -> None:
    tools = [*OURS, GLOSSARY, WEATHER]
    assert mcp_match("What does the word zephyr mean in our glossary?", tools) is GLOSSARY
    assert mcp_match("look up zephyr in the glossary please", tools) is GLOSSARY  # server name
    assert mcp_match("What's the weather in Lisbon tomorrow?", tools) is WEATHER  # name word
    for general in (
        "What is the capital of France?",
        "What is 2+2?",
        "Explain what a regular expression is",  # grep's words: ours never count
        "Summarize the project plan",  # one description word ("project") is not enough
    ):
        assert mcp_match(general, tools) is None, general
    assert mcp_match("What does the word zephyr mean in our glossary?", OURS) is None
