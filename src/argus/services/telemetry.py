"""Prometheus metrics (issue 14): what ``GET /metrics`` exposes, through ``prometheus_client``.

Two kinds of numbers:

* **Events**, observed where they happen and kept in this process: queue wait (observed when the
  scheduler submits a task), admission latency and rejections (the submit endpoint), scheduler pass
  duration, log-follow streams open. They start from zero when the server restarts, as Prometheus
  counters and histograms are meant to (``rate()`` handles resets).
* **State**, read at scrape time by ``PlatformCollector``: tasks by status and workload from the
  database, GPUs per node from the scheduler's node view, whether the verl validator and the SFTP
  process are up and how often they were restarted, and the SFTP process's session and byte counters
  (it reports them to the server over its stdout pipe, ``sftp/stats.py``).

Scrape cost at 100 000 tasks (``bench/metrics_scrape.py``): ``argus_tasks{status, workload}`` is
kept from the task timeline (``TaskCounts``): the first scrape of a server process counts the table
once, every later one reads only the events since the last (a primary-key range), so a scrape is
O(changes), not O(tasks).

Label sets are bounded: statuses, workloads (a fixed enumeration), rejection stages
(``services.tasks.REJECTION_STAGES`` + ``other``), node ids (the cluster's), component names.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from argus.core.states import TaskStatus
from argus.db.models import TaskEventModel, TaskModel, utcnow
from argus.services.task_usage import running_usage
from argus.services.teams import team_figures

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
WORKLOADS = ("ppo", "grpo", "sft", "job")  # every series exists from the start (core.taskspec's workloads)
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


_BASELINE = text(
    "SELECT status, workload, COUNT(*) AS n, CAST(NULL AS INTEGER) AS event_id FROM tasks GROUP BY status, workload "
    "UNION ALL SELECT CAST(NULL AS VARCHAR(16)), CAST(NULL AS VARCHAR(16)), 0, id FROM task_events "
    "WHERE id > (SELECT COALESCE(MAX(id), 0) FROM task_events) - :window")


_epoch = [0]  # bumped when events are deleted (retention.apply_prune): every TaskCounts counts afresh


def invalidate_task_counts() -> None:
    """Events were deleted: ids may be reused (SQLite) and marks are stale; the next scrape counts the table."""
    _epoch[0] += 1


class TaskCounts:
    """Tasks by (status, workload), kept from the task timeline so that a scrape costs O(changes).

    Why not ``GROUP BY status, workload`` per scrape: no index holds both columns, so that reads every
    task row (240 ms at 100 000 tasks on SQLite). Every status change writes a ``task_events`` row
    (``switch_task_status``; a new task writes one from NULL to QUEUED), task rows are never deleted,
    and a task's workload never changes, so the counts follow from the events: the first scrape counts
    the table once, later ones apply the events with an id above the last one applied (primary-key
    range, joined with the task for its workload).

    PostgreSQL assigns ids before commit, so an event can become visible after a higher id was read:
    ids of the last ``SETTLE_S`` seconds are read again each time and applied once (``_seen``). SQLite
    writers are serialized, so its ids appear in order. A prune (which deletes events, and after which
    SQLite may reuse ids) calls ``invalidate_task_counts``; that, counts that would go negative, or an
    event table whose ids went back below the mark make the next scrape count afresh.
    """

    SETTLE_S = 120.0
    WINDOW_IDS = 10_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Tally[tuple[str, str]] | None = None
        self._floor = 0  # every event with an id <= this is in the counts
        self._seen: set[int] = set()  # ids above the floor already applied
        self._epoch = _epoch[0]

    def get(self, session: Session) -> dict[tuple[str, str], int]:
        with self._lock:
            if self._counts is not None and self._epoch != _epoch[0]:
                self._counts = None
            if self._counts is not None:
                top = session.scalar(select(func.max(TaskEventModel.id))) or 0
                if top < self._floor:  # events deleted behind our back: ids went back
                    self._counts = None
            if self._counts is None:
                self._baseline(session)
            self._catch_up(session)
            assert self._counts is not None
            if any(n < 0 for n in self._counts.values()):
                log.warning("task counts went negative (a status written without its event?); recounting")
                self._baseline(session)
            return {k: n for k, n in self._counts.items() if n}

    def _baseline(self, session: Session) -> None:
        """One statement (one snapshot): the table's counts, and the recent event ids they already include."""
        self._epoch = _epoch[0]
        counts: Tally[tuple[str, str]] = Tally()
        ids: list[int] = []
        for status, workload, n, event_id in session.execute(_BASELINE, {"window": self.WINDOW_IDS}):
            if event_id is None:
                counts[(status, workload)] = n
            else:
                ids.append(event_id)
        self._counts = counts
        self._floor = max(0, max(ids) - self.WINDOW_IDS) if ids else 0
        self._seen = {i for i in ids if i > self._floor}

    def _catch_up(self, session: Session) -> None:
        assert self._counts is not None
        rows = session.execute(
            select(TaskEventModel.id, TaskEventModel.from_status, TaskEventModel.to_status, TaskEventModel.at,
                   TaskModel.workload)
            .join(TaskModel, TaskModel.id == TaskEventModel.task_id)
            .where(TaskEventModel.id > self._floor).order_by(TaskEventModel.id)).all()
        sqlite = session.get_bind().dialect.name == "sqlite"
        settled = utcnow() - timedelta(seconds=0 if sqlite else self.SETTLE_S)
        for r in rows:
            if r.id not in self._seen:
                self._seen.add(r.id)
                if r.from_status != r.to_status:
                    if r.from_status is not None:
                        self._counts[(r.from_status, r.workload)] -= 1
                    self._counts[(r.to_status, r.workload)] += 1
        floor = self._floor
        for r in rows:  # the mark moves over settled events only: a later one may still have an earlier id
            if r.at > settled:
                break
            floor = r.id
        self._floor = floor
        self._seen = {i for i in self._seen if i > floor}


class PlatformCollector(Collector):
    """State read at scrape time (see the module docstring)."""

    def __init__(self, open_session: Callable[[], Any], *, nodes: Callable[[], dict[str, Any] | None],
                 probes: Callable[[], dict[str, Probe | None]], root: Path | None = None) -> None:
        self.open_session = open_session
        self.nodes = nodes
        self.probes = probes
        self.root = root  # the data root: running tasks' resource samples (None: not exported)
        self.counts = TaskCounts()

    def collect(self) -> Iterator[Metric]:
        yield from self._tasks()
        yield from self._teams()
        yield from self._gpus()
        yield from self._components()
        yield from self._task_resources()

    def _task_resources(self) -> Iterable[Metric]:
        """Each RUNNING task's newest resource sample (launcher/telemetry.py) and whether it holds idle GPUs.

        Labelled by task, user and team ("" for none): the label set is the running tasks, bounded by the
        cluster's GPUs."""
        if self.root is None:
            return ()
        with self.open_session() as session:
            rows = running_usage(session, self.root)
        labels = ["task", "user", "team"]
        cpus = GaugeMetricFamily("argus_task_cpus", "CPUs a running task's processes keep busy (1 = one core)",
                                 labels=labels)
        memory = GaugeMetricFamily("argus_task_memory_bytes", "Resident memory of a running task's processes",
                                   labels=labels)
        util = GaugeMetricFamily("argus_task_gpu_utilization_percent", "Utilisation of each of a running task's "
                                 "GPUs (NVML)", labels=[*labels, "gpu"])
        gmem = GaugeMetricFamily("argus_task_gpu_memory_bytes", "Memory used on each of a running task's GPUs",
                                 labels=[*labels, "gpu"])
        power = GaugeMetricFamily("argus_task_gpu_power_watts", "Power drawn by each of a running task's GPUs",
                                  labels=[*labels, "gpu"])
        idle = GaugeMetricFamily("argus_task_idle_gpus", "1 when every GPU of a running task has been below 5 % "
                                 "for 10 minutes", labels=labels)
        for task_id, user, team, sample, since in rows:
            key = [task_id, user, team]
            cpus.add_metric(key, float(sample.get("cpu") or 0))
            memory.add_metric(key, float(sample.get("rss") or 0))
            gpus = sample.get("gpu") or []
            for i, (u, m, w) in enumerate(gpus):
                for family, value in ((util, u), (gmem, None if m is None else m * 2**20), (power, w)):
                    if value is not None:
                        family.add_metric([*key, str(i)], float(value))
            if gpus:
                idle.add_metric(key, 1 if since is not None else 0)
        return cpus, memory, util, gmem, power, idle

    def _teams(self) -> Iterable[Metric]:
        """Per team (issue 26): GPUs its tasks hold now, GPU-hours used this month and the month's budget."""
        with self.open_session() as session:
            rows = team_figures(session, utcnow())
        held = GaugeMetricFamily("argus_team_gpus_held", "GPUs held by the tasks charged to each team",
                                 labels=["team"])
        used = GaugeMetricFamily("argus_team_gpu_hours_month", "GPU-hours charged to each team this calendar "
                                 "month (UTC)", labels=["team"])
        budget = GaugeMetricFamily("argus_team_gpu_hours_budget", "Each team's monthly GPU-hour budget (teams "
                                   "with one)", labels=["team"])
        for r in rows:
            held.add_metric([r.name], float(r.gpus_held))
            used.add_metric([r.name], r.gpu_hours_month)
            if r.budget is not None:
                budget.add_metric([r.name], float(r.budget))
        return held, used, budget

    def _tasks(self) -> Iterable[Metric]:
        with self.open_session() as session:
            counts = self.counts.get(session)
        family = GaugeMetricFamily("argus_tasks", "Tasks by status and workload (all time: task rows are never "
                                   "deleted)", labels=["status", "workload"])
        for workload in sorted({w for _, w in counts} | set(WORKLOADS)):
            for s in TaskStatus:
                family.add_metric([s.value, workload], counts.get((s.value, workload), 0))
        return (family,)

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
        sessions = GaugeMetricFamily("argus_sftp_sessions", "SFTP sessions open now")
        started = CounterMetricFamily("argus_sftp_sessions_started", "SFTP sessions started")
        transferred = CounterMetricFamily("argus_sftp_bytes", "Bytes transferred over SFTP (download: read by "
                                          "clients, upload: written by them)", labels=["direction"])
        for name, probe in sorted(self.probes().items()):
            if probe is None:
                continue
            up.add_metric([name], 1 if probe.alive() else 0)
            restarts.add_metric([name], probe.restarts)
            stats = getattr(probe, "stats", None)  # the SFTP process's counters (sftp/stats.py)
            if name == "sftp" and stats is not None:
                sessions.add_metric([], stats.sessions_open)
                started.add_metric([], stats.sessions_total)
                transferred.add_metric(["download"], stats.bytes_read)
                transferred.add_metric(["upload"], stats.bytes_written)
        return up, restarts, sessions, started, transferred


def build_registry(collector: PlatformCollector) -> CollectorRegistry:
    """One registry per app: this process's event metrics plus the app's state collector."""
    registry = CollectorRegistry(auto_describe=False)
    for metric in (QUEUE_WAIT, ADMISSION, REJECTIONS, SCHEDULER_PASS, LOG_STREAMS, RAY_JOBS_DELETED):
        registry.register(metric)
    registry.register(collector)
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
