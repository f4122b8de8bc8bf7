"""tests/context/test_graph_properties.py on PostgreSQL."""

from tests.context.test_graph_properties import *  # noqa: F403
