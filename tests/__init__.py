"""Soothe's test suite (a package so that `tests.fakes` is importable)."""
