"""tests/context/test_projection.py on PostgreSQL."""

from tests.context.test_projection import *  # noqa: F403
