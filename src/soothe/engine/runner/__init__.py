"""The runner, by route: ``route`` (classify and dispatch), ``agentic`` (observe-act-verify
and the direct subagent), ``autonomous`` (decomposition + the engine's scheduler),
``resume``; ``base`` holds the plumbing they share. ``SootheRunner`` is the entry point."""

from soothe.engine.runner.base import MAX_HISTORY_CHARS
from soothe.engine.runner.route import SootheRunner

__all__ = ["MAX_HISTORY_CHARS", "SootheRunner"]
