"""tests/context/test_threads_ledger.py on PostgreSQL."""

from tests.context.test_threads_ledger import *  # noqa: F403
