"""What an attempt costs: GPU-seconds for GPU tasks, CPU-seconds for CPU jobs (pure, no I/O).

One arithmetic for the two readers of the attempt rows: the fair-share ledger
(``scheduler/usage.py``, decayed) and accounting (``services/usage.py``, exact sums per
user, workload or day). An attempt is charged from RUNNING to its end:

* a GPU task holds ``nnodes × n_gpus_per_node`` GPUs every second it runs;
* a CPU job (``n_gpus_per_node == 0``, e.g. ``argus.jobs.doctor``) holds one CPU per node:
  its driver is placed with ``entrypoint_resources={"worker_node": 1}`` and Ray's default of
  one CPU for the entry point, and a CPU job spawns nothing else — so ``nnodes`` CPU-seconds
  per second.

When the attempt ends is the time Ray or the driver reports, not the time the server noticed:
after a restart the server may learn of an end hours later (:func:`end_time`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from argus.core.launch import AttemptStatus

GPU = "gpu"
CPU = "cpu"


def rate(nnodes: int, gpus_per_node: int) -> float:
    """What one second of this task costs in its pool: GPUs held, or CPUs (one per node) for a CPU job."""
    return float(nnodes * gpus_per_node) if gpus_per_node > 0 else float(nnodes)


def kind(gpus_per_node: int) -> str:
    return GPU if gpus_per_node > 0 else CPU


def seconds(nnodes: int, gpus_per_node: int, start: datetime | None, end: datetime | None) -> float:
    """Resource-seconds of ``[start, end]`` (0 when the attempt never ran or the times are backwards)."""
    if start is None or end is None or end <= start:
        return 0.0
    return rate(nnodes, gpus_per_node) * (end - start).total_seconds()


def clipped(start: datetime, end: datetime, lo: datetime | None, hi: datetime | None) -> tuple[datetime, datetime]:
    """``[start, end]`` cut to the window ``[lo, hi]`` (an empty interval has end <= start)."""
    return (max(start, lo) if lo else start), (min(end, hi) if hi else end)


def parse_time(value: object) -> datetime | None:
    """A ``status.json`` time (ISO 8601, written by the driver; the task can change the file): aware UTC or None."""
    if not isinstance(value, str) or not value or len(value) > 64:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def end_time(ray_end_ms: int | None, driver: AttemptStatus | None, *, started: datetime | None,
             now: datetime) -> datetime:
    """When an attempt really ended: Ray's ``end_time``, else the driver's ``finished_at``, else now.

    Bounded to ``[started, now]``: a worker's clock may be off, and a time the task wrote into
    its own ``status.json`` must not bill more than the server has seen it hold.
    """
    reported: datetime | None = None
    if isinstance(ray_end_ms, int | float) and ray_end_ms > 0:
        reported = datetime.fromtimestamp(ray_end_ms / 1000, UTC)
    if reported is None and driver:
        reported = parse_time(driver.finished_at)
    if reported is None or reported > now:
        reported = now
    if started is not None and reported < started:
        reported = started
    return reported


def start_time(driver: AttemptStatus | None, *, created: datetime | None, now: datetime) -> datetime:
    """When an attempt started RUNNING: the driver's ``started_at``, bounded to ``[created, now]``; else now.

    Used when the server first sees an attempt running (or already ended) after it was down.
    """
    reported = parse_time(driver.started_at if driver else None)
    if reported is None or reported > now:
        return now
    if created is not None and reported < created:
        return created
    return reported
