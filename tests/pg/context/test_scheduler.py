"""tests/context/test_scheduler.py on PostgreSQL."""

from tests.context.test_scheduler import *  # noqa: F403
