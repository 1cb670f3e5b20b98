"""A fake Ray at the JobsBackend/NodeInventory boundary (unit tests of the loops only)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from argus.cluster.types import ClusterUnavailable, JobAlreadyExists, JobInfo, RayJobStatus, WorkerNode
from argus.core.states import TaskStatus
from argus.db.models import TaskEventModel, TaskModel, UserModel, utcnow
from argus.db.session import Database
from argus.scheduler.common import LoopContext
from argus.settings import Settings


@dataclass
class Submission:
    submission_id: str
    entrypoint: str
    entrypoint_resources: dict[str, float]
    runtime_env: dict[str, Any]
    metadata: dict[str, str]
    entrypoint_num_gpus: float = 0
    entrypoint_num_cpus: float = 0
    entrypoint_memory: int = 0


@dataclass
class FakeRay:
    """Jobs and nodes held in dicts; ``down`` makes every call raise ClusterUnavailable."""

    nodes: list[WorkerNode] = field(default_factory=list)
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    submissions: list[Submission] = field(default_factory=list)
    stops: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    down: bool = False
    on_submit: Callable[[str], None] | None = None
    submit_error: Exception | None = None
    invalidations: int = 0
    driver_logs: dict[str, str] = field(default_factory=dict)  # Ray's job-driver-<id>.log, by submission id
    log_requests: list[str] = field(default_factory=list)
    log_error: Exception | None = None

    def _check(self) -> None:
        if self.down:
            raise ClusterUnavailable("connection refused")

    # JobsBackend
    def submit(self, submission_id: str, entrypoint: str, *, entrypoint_resources: dict[str, float],
               entrypoint_num_gpus: float = 0, entrypoint_num_cpus: float = 0, entrypoint_memory: int = 0,
               runtime_env: dict[str, Any], metadata: dict[str, str]) -> None:
        self._check()
        if self.on_submit:
            self.on_submit(submission_id)
        if self.submit_error:
            raise self.submit_error
        if submission_id in self.jobs:
            raise JobAlreadyExists(submission_id)
        self.submissions.append(Submission(submission_id, entrypoint, entrypoint_resources, runtime_env, metadata,
                                          entrypoint_num_gpus, entrypoint_num_cpus, entrypoint_memory))
        self.jobs[submission_id] = JobInfo(submission_id, RayJobStatus.PENDING, metadata=metadata)

    def get(self, submission_id: str) -> JobInfo | None:
        self._check()
        return self.jobs.get(submission_id)

    def stop(self, submission_id: str) -> bool:
        self._check()
        self.stops.append(submission_id)
        return submission_id in self.jobs

    def delete(self, submission_id: str) -> bool:
        self._check()
        self.deleted.append(submission_id)
        return self.jobs.pop(submission_id, None) is not None

    def list(self) -> list[JobInfo]:
        self._check()
        return list(self.jobs.values())

    def driver_log_tail(self, submission_id: str, max_bytes: int, *, timeout_s: float = 5.0) -> str | None:
        self._check()
        self.log_requests.append(submission_id)
        if self.log_error:
            raise self.log_error
        text = self.driver_logs.get(submission_id)
        return None if text is None else text.encode()[-max_bytes:].decode(errors="ignore")

    # NodeInventory
    def worker_nodes(self) -> list[WorkerNode]:
        self._check()
        return list(self.nodes)

    def invalidate(self) -> None:
        self.invalidations += 1

    # test controls
    def set(self, sid: str, status: RayJobStatus, **kw: Any) -> None:
        self.jobs[sid] = replace(self.jobs[sid], status=status, **kw)

    def add_node(self, node_id: str, gpus: int, free: int | None = None, alive: bool = True, *,
                 cpus: float | None = None, memory: int | None = None) -> None:
        """``cpus``/``memory``: advertise (and report free) that many; None: Ray says nothing (unlimited)."""
        self.nodes.append(WorkerNode(node_id, f"host-{node_id}", "127.0.0.1", alive, gpus,
                                     gpus if free is None else free, 4.0 if cpus is None else cpus,
                                     {"worker_node": 1000.0, **({"CPU": cpus} if cpus is not None else {}),
                                      **({"memory": float(memory)} if memory is not None else {})},
                                     cpus_free=cpus, memory_total=memory or 0,
                                     memory_free=memory))

    def kill_node(self, node_id: str) -> None:
        self.nodes = [replace(n, alive=False) if n.node_id == node_id else n for n in self.nodes]


class InlineExecutor(Executor):
    """Runs each call at once in the caller's thread (a loop's pool in unit tests: no timing to wait out)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - the future carries it, as a pool's would
            future.set_exception(exc)
        return future


class Clock:
    def __init__(self) -> None:
        self.t = utcnow()

    def __call__(self):
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += timedelta(seconds=seconds)


_ids = itertools.count(1)


def make_ctx(settings: Settings, ray: FakeRay, clock: Clock | None = None) -> LoopContext:
    db = Database(settings.db_url)
    db.migrate()
    return LoopContext(db=db, settings=settings, jobs=ray, inventory=ray, ray_address="127.0.0.1:6380",
                       now=clock or utcnow)


def add_user(ctx: LoopContext, name: str) -> int:
    with ctx.db.session() as s:
        u = UserModel(name=name)
        s.add(u)
        s.flush()
        return u.id


def add_task(ctx: LoopContext, user_id: int, *, gpus: int = 0, nnodes: int = 1, priority: int = 0,
             argv: list[str] | None = None, created_offset_s: float = 0.0, cpus: float | None = None,
             memory: int | None = None, entry_module: str = "argus.jobs.sleep") -> str:
    """A QUEUED task; ``cpus``/``memory`` per node as admission resolves them (unset: the module's default)."""
    tid = f"job-t{next(_ids):05d}"
    now = utcnow() + timedelta(seconds=created_offset_s)
    argv = argv or ["bash", "-lc", "python3 -m argus.jobs.sleep 1"]
    resolved = {} if cpus is None and memory is None else {
        "resources_per_node": {"gpus": gpus, "cpus": cpus or 0.0, "memory": memory or 0}}
    with ctx.db.session() as s:
        s.add(TaskModel(id=tid, user_id=user_id, kind="advanced", workload="job", status=TaskStatus.QUEUED.value,
                        priority=priority, nnodes=nnodes, n_gpus_per_node=gpus, spec_raw="", spec_resolved=resolved,
                        command_raw=argv[-1], command_expanded=argv[-1], argv=argv, entry_module=entry_module,
                        warnings=[], attempts=0, created_at=now, updated_at=now))
        s.flush()
        s.add(TaskEventModel(task_id=tid, at=now, to_status="QUEUED", actor="test"))
    return tid


def task(ctx: LoopContext, tid: str) -> TaskModel:
    with ctx.db.session() as s:
        t = s.get(TaskModel, tid)
        assert t is not None
        return t
