"""The contract between the scheduler and the Ray adapter.

The scheduler depends on these types and the ``JobsBackend``/``NodeInventory``
protocols only; ``cluster.jobs`` implements them against Ray's Jobs REST API
(the dashboard), and unit tests of the loops may use a fake at this boundary.
Nothing here makes the server a Ray driver (``ray.init`` is never called).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class RayJobStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


@dataclass(frozen=True)
class JobInfo:
    submission_id: str
    status: RayJobStatus
    message: str | None = None
    error_type: str | None = None  # e.g. JOB_SUPERVISOR_ACTOR_DIED when the node died
    driver_exit_code: int | None = None
    driver_node_id: str | None = None
    start_time_ms: int | None = None
    end_time_ms: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkerNode:
    """A Ray node advertising the ``worker_node`` resource (the head never does)."""

    node_id: str
    hostname: str
    ip: str
    alive: bool
    gpus_total: int
    gpus_free: int  # as Ray reports it; the scheduler also keeps its own ledger
    cpus_total: float
    resources: dict[str, float] = field(default_factory=dict)
    # issue 15: CPUs and memory (bytes) free as Ray counts them (total − reserved by running jobs, actors
    # and placement groups); None: Ray did not say, and only the scheduler's own ledger limits them
    cpus_free: float | None = None
    memory_total: int = 0
    memory_free: int | None = None


class ClusterUnavailable(Exception):
    """Ray (its dashboard / Jobs API) cannot be reached; callers keep state and retry."""


class JobAlreadyExists(Exception):
    """A job with this submission id already exists in Ray (adopt it, never resubmit)."""


class JobsBackend(Protocol):
    def submit(
        self,
        submission_id: str,
        entrypoint: str,
        *,
        entrypoint_resources: dict[str, float],
        entrypoint_num_gpus: float = 0,
        entrypoint_num_cpus: float = 0,
        entrypoint_memory: int = 0,
        runtime_env: dict[str, Any],
        metadata: dict[str, str],
    ) -> None: ...

    def get(self, submission_id: str) -> JobInfo | None:
        """The job, or None if Ray does not know this submission id."""

    def stop(self, submission_id: str) -> bool: ...

    def delete(self, submission_id: str) -> bool: ...

    def list(self) -> list[JobInfo]: ...

    def driver_log_tail(self, submission_id: str, max_bytes: int, *, timeout_s: float = 5.0) -> str | None:
        """The last ``max_bytes`` of Ray's driver log for the job, or None when Ray has none."""


class NodeInventory(Protocol):
    def worker_nodes(self) -> list[WorkerNode]:
        """Alive and dead worker nodes (cached briefly); raises ClusterUnavailable."""

    def invalidate(self) -> None:
        """Forget the cached view (a node was just found dead: do not place work on it)."""
