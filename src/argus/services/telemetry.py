"""Prometheus metrics (issue 14): what ``GET /metrics`` exposes, through ``prometheus_client``.

Two kinds of numbers:

* **Events**, observed where they happen and kept in this process: queue wait (observed when the
  scheduler submits a task), admission latency and rejections (the submit endpoint), scheduler pass
  duration, log-follow streams open. They start from zero when the server restarts, as Prometheus
  counters and histograms are meant to (``rate()`` handles resets).
* **State**, read at scrape time by ``PlatformCollector``: tasks by status and workload from the
  database, GPUs per node from the scheduler's node view, whether the verl validator and the SFTP
  process are up and how often they were restarted.

Scrape cost at 100 000 tasks (``bench/metrics_scrape.py``): the task gauges never read the big
columns. ``argus_tasks{status}`` and ``argus_tasks_by_workload{workload}`` are GROUP BYs that the
covering indexes ``ix_tasks_status_*`` / ``ix_tasks_workload_created`` answer alone; the joint
``argus_tasks_active{status, workload}`` reads only the non-terminal rows (the queue and what runs),
through the status index. A joint count over *all* tasks would scan the table (240 ms at 100 000
rows): finished tasks are counted per status and per workload, not per pair.

Label sets are bounded: statuses, workloads (a fixed enumeration), rejection stages
(``services.tasks.REJECTION_STAGES`` + ``other``), node ids (the cluster's), component names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from argus.core.states import TERMINAL, TaskStatus
from argus.db.models import TaskModel

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
NOT_TERMINAL = tuple(s.value for s in TaskStatus if s not in TERMINAL)
REJECTION_REASONS = ("size", "syntax", "schema", "admission", "verl", "other")

QUEUE_WAIT = Histogram(
    "argus_task_queue_wait_seconds", "Time from a task's creation to its (first) submission to Ray",
    ["workload"], registry=None,
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 259200))
ADMISSION = Histogram(
    "argus_admission_seconds", "Time to admit a submitted spec (parse, checks, verl validation, queue)",
    ["verl_validation"], registry=None,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
REJECTIONS = Counter(
    "argus_admission_rejections", "Specs refused with 400, by the stage that refused them", ["reason"],
    registry=None)
SCHEDULER_PASS = Histogram(
    "argus_scheduler_pass_seconds", "Duration of one scheduler pass (cancel, monitor, submit loops)",
    registry=None, buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
LOG_STREAMS = Gauge("argus_log_follow_streams", "Log-follow (SSE) streams open now", registry=None)
RAY_JOBS_DELETED = Counter(
    "argus_ray_jobs_deleted", "Ray job records of ended Argus tasks deleted by the retention setting",
    registry=None)

for _reason in REJECTION_REASONS:  # every series exists from the start: rate() works on the first rejection
    REJECTIONS.labels(_reason)


def observe_rejection(exc: BaseException) -> None:
    """Count a refused spec by its stage (``services.tasks._rejected`` sets it); anything else is ``other``."""
    stage = getattr(exc, "stage", None)
    REJECTIONS.labels(stage if stage in REJECTION_REASONS else "other").inc()


def observe_admission(seconds: float, info: dict[str, Any]) -> None:
    """``info`` is the accepted task's: ``verl_validation_s`` is there when verl's validation ran."""
    ADMISSION.labels("yes" if "verl_validation_s" in info else "no").observe(seconds)


def observe_queue_wait(workload: str, seconds: float) -> None:
    QUEUE_WAIT.labels(workload).observe(max(0.0, seconds))


class Probe(Protocol):
    """A background part whose health is exposed: the verl validator, the SFTP process."""

    restarts: int

    def alive(self) -> bool: ...


def task_counts(session: Session) -> tuple[dict[str, int], dict[str, int], dict[tuple[str, str], int]]:
    """(by status, by workload, active by (status, workload)): index-only for the first two (docstring)."""
    by_status = {s: n for s, n in session.execute(select(TaskModel.status, func.count()).group_by(TaskModel.status))}
    by_workload = {w: n for w, n in session.execute(
        select(TaskModel.workload, func.count()).group_by(TaskModel.workload))}
    active: dict[tuple[str, str], int] = {}
    if any(by_status.get(s) for s in NOT_TERMINAL):
        active = {(s, w): n for s, w, n in session.execute(
            select(TaskModel.status, TaskModel.workload, func.count())
            .where(TaskModel.status.in_(NOT_TERMINAL)).group_by(TaskModel.status, TaskModel.workload))}
    return by_status, by_workload, active


class PlatformCollector(Collector):
    """State read at scrape time (see the module docstring)."""

    def __init__(self, open_session: Callable[[], Any], *, nodes: Callable[[], dict[str, Any] | None],
                 probes: Callable[[], dict[str, Probe | None]]) -> None:
        self.open_session = open_session
        self.nodes = nodes
        self.probes = probes

    def collect(self) -> Iterator[Metric]:
        yield from self._tasks()
        yield from self._gpus()
        yield from self._components()

    def _tasks(self) -> Iterable[Metric]:
        with self.open_session() as session:
            by_status, by_workload, active = task_counts(session)
        status = GaugeMetricFamily("argus_tasks", "Tasks by status (all time: task rows are never deleted)",
                                   labels=["status"])
        for s in TaskStatus:
            status.add_metric([s.value], by_status.get(s.value, 0))
        workload = GaugeMetricFamily("argus_tasks_by_workload", "Tasks by workload (all statuses)", labels=["workload"])
        for w, n in sorted(by_workload.items()):
            workload.add_metric([w], n)
        pairs = GaugeMetricFamily("argus_tasks_active", "Queued, starting, running and canceling tasks by workload",
                                  labels=["status", "workload"])
        for s in NOT_TERMINAL:
            for w in sorted(by_workload):
                pairs.add_metric([s, w], active.get((s, w), 0))
        return status, workload, pairs

    def _gpus(self) -> Iterable[Metric]:
        view = self.nodes()
        up = GaugeMetricFamily("argus_cluster_up", "1 when the scheduler's view of the Ray cluster is current")
        up.add_metric([], 1 if view and view.get("available", True) and not view.get("error") else 0)
        gpus = GaugeMetricFamily("argus_node_gpus", "GPUs of each worker node: total, allocated by Argus, free",
                                 labels=["node", "hostname", "state"])
        for node in (view or {}).get("nodes", []):
            total, allocated = node.get("gpus_total", 0), node.get("gpus_allocated", 0)
            if not node.get("alive", True):
                continue
            key = [str(node.get("node_id", "")), str(node.get("hostname") or node.get("ip") or "")]
            for state, value in (("total", total), ("allocated", allocated), ("free", max(0, total - allocated))):
                gpus.add_metric([*key, state], value)
        return up, gpus

    def _components(self) -> Iterable[Metric]:
        up = GaugeMetricFamily("argus_component_up", "1 when a background process of the server is running",
                               labels=["component"])
        restarts = CounterMetricFamily("argus_component_restarts", "Restarts of a background process after it "
                                       "died or hung", labels=["component"])
        for name, probe in sorted(self.probes().items()):
            if probe is None:
                continue
            up.add_metric([name], 1 if probe.alive() else 0)
            restarts.add_metric([name], probe.restarts)
        return up, restarts


def build_registry(collector: PlatformCollector) -> CollectorRegistry:
    """One registry per app: this process's event metrics plus the app's state collector."""
    registry = CollectorRegistry(auto_describe=False)
    for metric in (QUEUE_WAIT, ADMISSION, REJECTIONS, SCHEDULER_PASS, LOG_STREAMS, RAY_JOBS_DELETED):
        registry.register(metric)
    registry.register(collector)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
