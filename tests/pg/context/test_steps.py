"""tests/context/test_steps.py on PostgreSQL."""

from tests.context.test_steps import *  # noqa: F403
