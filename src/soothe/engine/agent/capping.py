"""Bounding text before it enters a prompt."""

from __future__ import annotations


def truncation_marker(dropped: int) -> str:
    return f"… [truncated {dropped} chars]"


def cap_text(text: str, limit: int) -> tuple[str, bool]:
    """Keep ``text`` within ``limit`` characters, marker included; say whether it was cut."""
    if len(text) <= limit:
        return text, False
    # The marker's own length depends on the count it prints; size it for the worst case.
    room = max(0, limit - len(truncation_marker(len(text))) - 1)
    return text[:room] + "\n" + truncation_marker(len(text) - room), True


def preview(value: object, limit: int = 2000) -> object:
    """A copy of tool arguments with long strings shortened, for events and approvals."""
    if isinstance(value, str):
        return cap_text(value, limit)[0]
    if isinstance(value, dict):
        return {k: preview(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [preview(v, limit) for v in value[:50]]
    return value
