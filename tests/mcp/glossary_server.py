"""A real MCP server (FastMCP, stdio) with the project glossary of issue 31: one tool,
``lookup_word``, whose description is all that tells a router what it is for."""

from __future__ import annotations

from typing import Annotated

from mcp.server.fastmcp import FastMCP
from pydantic import Field

GLOSSARY = {"zephyr": "zephyr: the code name of the 2.0 release (glossary entry 7)"}

app = FastMCP("glossary")


@app.tool()
def lookup_word(word: Annotated[str, Field(max_length=100)]) -> str:
    """Look up what a word means in the project glossary. Returns the entry, if any."""
    return GLOSSARY.get(word.strip().lower(), f"{word}: not in the glossary")


if __name__ == "__main__":
    app.run()
