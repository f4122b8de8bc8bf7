"""Fixtures of the fault tests (defined in tests/faults/harness.py)."""

from tests.faults.harness import brain, env, fake, quick_retries, soothe

__all__ = ["brain", "env", "fake", "quick_retries", "soothe"]
