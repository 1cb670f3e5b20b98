"""DeleteFinishedRayJobs: Ray job records of ended Argus attempts are deleted after a retention period.

Ray keeps every finished job (and its driver log) forever in the head's memory and KV store.
Argus's own record is the attempt row, the task's events and the driver's log file in the
owner's home, so Ray's copy is only a convenience (the Ray dashboard, ``ray job logs``) and is
deleted once the attempt ended more than ``ray_job_retention_days`` ago (0 keeps them all;
retention policy after the DI-orchestrator seed, 002: finished jobs are cleaned up by policy,
not by hand). Nothing user-visible disappears without that setting.

Only Argus's own jobs are touched: a Ray job is deleted only when its submission id is an
attempt row's, its metadata names that attempt's task, and the attempt has ended (no live
attempt, no job of anyone else sharing the cluster). Ray itself refuses to delete a job that has
not finished. Ids are never reused after deletion (each attempt has its own), which Ray requires.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from argus.cluster.types import JobInfo, RayJobStatus
from argus.launcher import attempt_record
from argus.scheduler.common import ATTEMPT_LIVE, LoopContext, attempt_by_sid, log
from argus.services import telemetry

FINISHED = (RayJobStatus.SUCCEEDED, RayJobStatus.FAILED, RayJobStatus.STOPPED)


class DeleteFinishedRayJobs:
    def __init__(self, ctx: LoopContext, *, interval_s: float = 300.0) -> None:
        """``interval_s``: one Ray job listing per this many seconds at most (retention is counted in days,
        and the listing holds every job Ray kept)."""
        self.ctx = ctx
        self.interval_s = interval_s
        self._last = float("-inf")

    def run_once(self, *, force: bool = False) -> int:
        """Delete the records past retention; returns how many were deleted. Attempt records
        (launcher/attempt_record.py) of attempts that ended a month ago go in the same pass."""
        if not force and time.monotonic() - self._last < self.interval_s:
            return 0
        self._last = time.monotonic()
        pruned = attempt_record.prune(self.ctx.settings.root)
        if pruned:
            log.info("removed %d attempt record file(s) older than %d days", pruned,
                     attempt_record.RECORD_KEEP_S // 86400)
        days = self.ctx.settings.ray_job_retention_days
        if days <= 0:
            return 0
        due = self.due(self.ctx.jobs.list(), self.ctx.now() - timedelta(days=days))
        deleted = 0
        for sid in due:
            try:
                deleted += bool(self.ctx.jobs.delete(sid))
            except Exception as exc:  # noqa: BLE001 - ClusterUnavailable included: try again later
                log.warning("deleting Ray job %s failed: %s", sid, exc)
                break
        if deleted:
            telemetry.RAY_JOBS_DELETED.inc(deleted)
            log.info("deleted %d Ray job record(s) of attempts that ended before %s", deleted,
                     (self.ctx.now() - timedelta(days=days)).isoformat(timespec="seconds"))
        return deleted

    def due(self, jobs: list[JobInfo], cutoff: datetime) -> list[str]:
        """Submission ids of Argus's ended jobs whose attempt ended before ``cutoff``."""
        candidates = [j for j in jobs if j.status in FINISHED and (j.metadata or {}).get("argus_task_id")]
        if not candidates:
            return []
        out: list[str] = []
        with self.ctx.db.session() as s:
            for job in candidates:
                att = attempt_by_sid(s, job.submission_id)
                if att is None or att.status in ATTEMPT_LIVE or job.metadata["argus_task_id"] != att.task_id:
                    continue  # not ours, or the monitor has not recorded the end yet
                ended = att.finished_at or _ray_end(job)
                if ended is not None and ended < cutoff:
                    out.append(job.submission_id)
        return out


def _ray_end(job: JobInfo) -> datetime | None:
    return datetime.fromtimestamp(job.end_time_ms / 1000, UTC) if job.end_time_ms else None
