"""tests/context/test_graph.py on PostgreSQL."""

from tests.context.test_graph import *  # noqa: F403
