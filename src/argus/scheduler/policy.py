"""The pure scheduling policy, now in :mod:`argus.core.scheduling.policy` (the queue estimates of
:mod:`argus.core.eta` simulate the queue with the same ``plan``); re-exported here under the
scheduler's old name for the loops, tests and benchmarks."""

from __future__ import annotations

from argus.core.scheduling.policy import (
    NO_TEAM,
    FairQueue,
    HeldTask,
    Limits,
    NodeState,
    Placement,
    Plan,
    QueuedTask,
    TeamLimits,
    UserLimits,
    describe_free,
    fair_order,
    free_gpus,
    gang,
    plan,
    plural,
    slots,
    take,
)

__all__ = ["NO_TEAM", "FairQueue", "HeldTask", "Limits", "NodeState", "Placement", "Plan", "QueuedTask", "TeamLimits",
           "UserLimits",
           "describe_free", "fair_order", "free_gpus", "gang", "plan", "plural", "slots", "take"]
