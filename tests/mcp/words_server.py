"""A real MCP server (FastMCP, stdio) for the tests. ``--name`` changes its name;
``--crash`` makes it fail at start with a line on stderr."""

from __future__ import annotations

import os
import sys
from typing import Annotated

from mcp.server.fastmcp import FastMCP
from pydantic import Field

if "--crash" in sys.argv:
    print("words: cannot open the dictionary /nonexistent/dict.txt", file=sys.stderr)
    sys.exit(3)

app = FastMCP("words")


@app.tool()
def count_words(text: Annotated[str, Field(max_length=5000)]) -> str:
    """Count the words in a text."""
    return f"{len(text.split())} words"


@app.tool()
def read_file(path: Annotated[str, Field(max_length=200)]) -> str:
    """A tool whose name collides with a built-in one."""
    return f"words server saw {path}"


@app.tool()
def die() -> str:
    """Exit the server process at once (a server that dies under a call)."""
    print("words: fatal: segfault in the dictionary", file=sys.stderr, flush=True)
    os._exit(7)


if __name__ == "__main__":
    app.run()
