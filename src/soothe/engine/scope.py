"""Scope: where an event, a model call or a tool call belongs (thread, loop, goal, step).

One typed value passed down the layers instead of an ``ids: dict[str, Any]`` re-packed
at each of them. ``fields()`` is what an event takes: ``Event(..., **scope.fields())``
type-checks because it is a TypedDict.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypedDict


class ScopeFields(TypedDict, total=False):
    thread_id: str
    loop_id: str | None
    goal_id: str | None
    step_id: str | None


@dataclass(frozen=True, slots=True)
class Scope:
    thread_id: str = ""
    loop_id: str | None = None
    goal_id: str | None = None
    step_id: str | None = None

    def fields(self) -> ScopeFields:
        """The event fields of this scope (only those that are set)."""
        out: ScopeFields = {}
        if self.thread_id:
            out["thread_id"] = self.thread_id
        if self.loop_id is not None:
            out["loop_id"] = self.loop_id
        if self.goal_id is not None:
            out["goal_id"] = self.goal_id
        if self.step_id is not None:
            out["step_id"] = self.step_id
        return out

    def at(
        self,
        *,
        thread_id: str | None = None,
        loop_id: str | None = None,
        goal_id: str | None = None,
        step_id: str | None = None,
    ) -> Scope:
        """This scope narrowed (or moved): the given ids replace the current ones."""
        return replace(
            self,
            thread_id=self.thread_id if thread_id is None else thread_id,
            loop_id=self.loop_id if loop_id is None else loop_id,
            goal_id=self.goal_id if goal_id is None else goal_id,
            step_id=self.step_id if step_id is None else step_id,
        )

    @property
    def key(self) -> tuple[str, str | None, str | None, str | None]:
        """A hashable identity, e.g. for usage counts or coalescing."""
        return (self.thread_id, self.loop_id, self.goal_id, self.step_id)
