"""Task statuses, termination reasons and the executable transition table.

The table is the single source of truth for which status changes are legal;
``services.tasks.switch_task_status`` refuses anything not listed here, so a
terminal status can never change and a bug shows up as an error, not as a
task silently resurrected.
"""

from __future__ import annotations

from enum import StrEnum


class TaskStatus(StrEnum):
    QUEUED = "QUEUED"
    SUBMITTED = "SUBMITTED"
    RUNNING = "RUNNING"
    CANCELING = "CANCELING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"


class TerminationReason(StrEnum):
    """Why a task ended (or went back to the queue); separate from the status."""

    SUCCEEDED = "SUCCEEDED"
    USER_CANCELED = "USER_CANCELED"
    EXIT_NONZERO = "EXIT_NONZERO"
    NODE_LOST = "NODE_LOST"
    START_TIMEOUT = "START_TIMEOUT"
    SUBMIT_ERROR = "SUBMIT_ERROR"
    RAY_JOB_LOST = "RAY_JOB_LOST"
    SERVER_ERROR = "SERVER_ERROR"
    LOG_WRITE_FAILED = "LOG_WRITE_FAILED"  # the job folder refused the log (full, read-only): task stopped
    STALLED = "STALLED"  # no step and no output past its stall limit, stopped by its on_stall (core/stall.py)
    SWEEP_STOPPED = "SWEEP_STOPPED"  # stopped by its sweep (issue 38): early-stopped at a rung, or over its budget


TERMINAL: frozenset[TaskStatus] = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELED})
ACTIVE: frozenset[TaskStatus] = frozenset({TaskStatus.SUBMITTED, TaskStatus.RUNNING, TaskStatus.CANCELING})

# from-status -> the statuses it may move to. SUBMITTED/RUNNING -> QUEUED is a retry
# (new attempt) after an infrastructure failure such as NODE_LOST.
TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.QUEUED: frozenset({TaskStatus.SUBMITTED, TaskStatus.CANCELED, TaskStatus.FAILED}),
    TaskStatus.SUBMITTED: frozenset(
        {
            TaskStatus.RUNNING,
            TaskStatus.SUCCEEDED,
            TaskStatus.FAILED,
            TaskStatus.CANCELING,
            TaskStatus.QUEUED,
        }
    ),
    TaskStatus.RUNNING: frozenset(
        {TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELING, TaskStatus.QUEUED}
    ),
    TaskStatus.CANCELING: frozenset({TaskStatus.CANCELED, TaskStatus.SUCCEEDED, TaskStatus.FAILED}),
    TaskStatus.SUCCEEDED: frozenset(),
    TaskStatus.FAILED: frozenset(),
    TaskStatus.CANCELED: frozenset(),
}


# Attempt rows use the task vocabulary; QUEUED there means "id stored, Ray not yet confirmed".
LIVE_ATTEMPT: tuple[str, ...] = (TaskStatus.QUEUED.value, TaskStatus.SUBMITTED.value, TaskStatus.RUNNING.value)


def is_terminal(status: TaskStatus | str) -> bool:
    return TaskStatus(status) in TERMINAL


def can_transition(old: TaskStatus | str, new: TaskStatus | str) -> bool:
    return TaskStatus(new) in TRANSITIONS[TaskStatus(old)]
