"""DeleteFinishedRayJobs: remove Ray's record of an Argus job once it is safe to.

Ray keeps every finished job (and its log) forever in the head's memory and KV store.
Argus's own copy of what matters is the attempt row plus the driver's log file on the
shared filesystem, so a finished job's Ray record is deleted once that log file exists —
or, for a job whose driver never started (so no log will ever appear), after a grace
period. Only jobs that carry Argus metadata AND match a finished attempt row are
touched; other users of the same Ray cluster are left alone. Ids are never reused after
deletion (each attempt has its own), which Ray requires.
"""

from __future__ import annotations

import time

from argus.cluster.types import RayJobStatus
from argus.db.models import TaskModel
from argus.scheduler.common import ATTEMPT_LIVE, LoopContext, attempt_by_sid, log, log_path, user_of

FINISHED = (RayJobStatus.SUCCEEDED, RayJobStatus.FAILED, RayJobStatus.STOPPED)


class DeleteFinishedRayJobs:
    def __init__(self, ctx: LoopContext, *, interval_s: float = 5.0, grace_s: float = 300.0) -> None:
        self.ctx = ctx
        self.interval_s = interval_s
        self.grace_s = grace_s
        self._last = float("-inf")

    def run_once(self, *, force: bool = False) -> int:
        """Delete what is safe; rate-limited to one Ray listing per ``interval_s``."""
        if not force and time.monotonic() - self._last < self.interval_s:
            return 0
        self._last = time.monotonic()
        ctx = self.ctx
        jobs = [j for j in ctx.jobs.list() if j.status in FINISHED and "argus_task_id" in (j.metadata or {})]
        if not jobs:
            return 0
        deleted = 0
        now = ctx.now()
        with ctx.db.session() as s:
            safe: list[str] = []
            for job in jobs:
                att = attempt_by_sid(s, job.submission_id)
                if att is None or att.status in ATTEMPT_LIVE:
                    continue  # not ours, or the monitor has not recorded the end yet
                task = s.get(TaskModel, att.task_id)
                if task is None:
                    continue
                logged = log_path(ctx, user_of(s, task), task.id, att.attempt).exists()
                ended = att.finished_at or task.finished_at
                old = ended is not None and (now - ended).total_seconds() > self.grace_s
                if logged or old:
                    safe.append(job.submission_id)
        for sid in safe:
            try:
                deleted += bool(ctx.jobs.delete(sid))
            except Exception as exc:  # noqa: BLE001 - ClusterUnavailable included: try again later
                log.warning("deleting Ray job %s failed: %s", sid, exc)
                break
        if deleted:
            log.info("deleted %d finished Ray job record(s)", deleted)
        return deleted
