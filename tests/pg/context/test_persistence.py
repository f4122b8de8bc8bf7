"""tests/context/test_persistence.py on PostgreSQL, less what is SQLite's own: the file,
WAL and ``PRAGMA user_version``, run_in_transaction's sqlite3 connection, a crash in a
child process opening the file (tests/pg/test_workers.py kills workers on PostgreSQL)."""

import tests.context.test_persistence as _sqlite_suite
from tests.context.test_persistence import *  # noqa: F403

_SQLITE_ONLY = {
    "test_round_trip_restores_everything",  # asserts the file exists
    "test_schema_version_and_wal",
    "test_newer_schema_is_refused",
    "test_forward_migration_keeps_data",
    "test_module_migrations_and_shared_transactions",
    "test_memory_database_only_on_request",
    "test_crash_recovery",  # the child process opens a file
}
for _name in _SQLITE_ONLY:
    globals().pop(_name, None)
del _sqlite_suite
