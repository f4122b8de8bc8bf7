"""tests/context/test_lifecycle.py on PostgreSQL."""

from tests.context.test_lifecycle import *  # noqa: F403
