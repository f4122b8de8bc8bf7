"""tests/context/test_events_callbacks.py on PostgreSQL."""

from tests.context.test_events_callbacks import *  # noqa: F403
