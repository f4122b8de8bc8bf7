"""ContextEngine: goal DAG, step DAGs, lifecycle, evidence, ledger, projection, threads.

Open one per database file with ``await ContextEngine.open(path, bus=...)``.
"""

from soothe.engine.context.engine import ContextEngine
from soothe.engine.context.errors import (
    ContextError,
    CycleError,
    DepthLimitExceeded,
    GoalInUse,
    GoalNotFound,
    GoalNotReady,
    IllegalStepTransition,
    IllegalTransition,
    InvalidGoal,
    PlanError,
    StepNotFound,
    StepNotReady,
    StoreError,
    ThreadNotFound,
    UnknownStepDependency,
)
from soothe.engine.context.graph import MAX_GOAL_DEPTH
from soothe.engine.context.lifecycle import GOAL_TRANSITIONS, STEP_TRANSITIONS
from soothe.engine.context.models import (
    PAUSED_STATES,
    TERMINAL_STATES,
    Criterion,
    EvidenceEntry,
    GoalBudget,
    GoalNode,
    GoalSpec,
    GoalSpend,
    LedgerEntry,
    StepNode,
    StepSpec,
    ThreadMessage,
    ThreadRecord,
)
from soothe.engine.context.observers import CALLBACK_NAMES
from soothe.engine.context.planning import (
    GoalPlanning,
    GoalScheduler,
    PlanCheck,
    PlanningFacade,
    StepPlanning,
)
from soothe.engine.context.projection import ContextBundle
from soothe.engine.context.steps import StepDAG, expand_dependency_satisfaction_ids, step_number
from soothe.engine.events import GoalStatus

__all__ = [
    "CALLBACK_NAMES",
    "GOAL_TRANSITIONS",
    "MAX_GOAL_DEPTH",
    "PAUSED_STATES",
    "STEP_TRANSITIONS",
    "TERMINAL_STATES",
    "ContextBundle",
    "ContextEngine",
    "ContextError",
    "Criterion",
    "CycleError",
    "DepthLimitExceeded",
    "EvidenceEntry",
    "GoalBudget",
    "GoalInUse",
    "GoalNode",
    "GoalNotFound",
    "GoalNotReady",
    "GoalPlanning",
    "GoalScheduler",
    "GoalSpec",
    "GoalSpend",
    "GoalStatus",
    "IllegalStepTransition",
    "IllegalTransition",
    "InvalidGoal",
    "LedgerEntry",
    "PlanCheck",
    "PlanError",
    "PlanningFacade",
    "StepDAG",
    "StepNode",
    "StepNotFound",
    "StepNotReady",
    "StepPlanning",
    "StepSpec",
    "StoreError",
    "ThreadMessage",
    "ThreadNotFound",
    "ThreadRecord",
    "UnknownStepDependency",
    "expand_dependency_satisfaction_ids",
    "step_number",
]
