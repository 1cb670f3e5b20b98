"""CancelTasks: CANCELING → stop the Ray job → CANCELED once Ray confirms it is gone.

The API only records intent (QUEUED → CANCELED at once; SUBMITTED/RUNNING → CANCELING)
and wakes this loop. ``stop`` is asked once, then again only every ``STOP_RESEND_S`` until
Ray reports the job ended: a stop of a PENDING job is not immediate in Ray (it may still
start later), but the loop runs every 0.2 s while anything is CANCELING, and asking on each
pass sent 2 793 stop requests for 50 canceled tasks (issue 21).
Idempotent: a job Ray already finished, or never knew, is simply recorded as canceled.
"""

from __future__ import annotations

import time

from sqlalchemy import select

from argus.cluster.types import ClusterUnavailable, RayJobStatus
from argus.core import accounting
from argus.core.states import TaskStatus, TerminationReason
from argus.db.models import TaskModel
from argus.errors import Conflict
from argus.runtime import attempt_record
from argus.scheduler.common import (
    ACTOR,
    LoopContext,
    attempt_by_sid,
    close_attempt,
    log,
    read_driver_status,
    user_of,
)
from argus.services.tasks import switch_task_status

STOP_RESEND_S = 5.0
# a driver asked to stop through its record (Ray lost its job) ends within its kill grace and a heartbeat or two
RECORD_STOP_WAIT_S = 60.0


class CancelTasks:
    def __init__(self, ctx: LoopContext) -> None:
        self.ctx = ctx
        self.pending = 0
        self.stops_sent = 0  # Ray stop requests made (bench/overhead.py reports it)
        self._stop_asked: dict[str, float] = {}  # submission id -> when its stop was last asked (monotonic)

    def run_once(self) -> int:
        """One pass over CANCELING tasks; returns how many became CANCELED."""
        ctx = self.ctx
        with ctx.db.session() as s:
            rows = s.execute(select(TaskModel.id, TaskModel.submission_id, TaskModel.attempts)
                             .where(TaskModel.status == TaskStatus.CANCELING.value)).all()
        self.pending = len(rows)  # CANCELING tasks: the runner polls faster while > 0
        live = {sid for _, sid, _ in rows}
        self._stop_asked = {sid: t for sid, t in self._stop_asked.items() if sid in live}
        done = 0
        for task_id, sid, attempt in rows:
            try:
                done += self._one(task_id, sid, attempt)
            except ClusterUnavailable as exc:
                log.debug("cancel: Ray unreachable (%s); will retry", exc)
                break
            except Exception:  # noqa: BLE001 - retried next pass; other cancels go on
                log.exception("cancel: %s failed", task_id)
        return done

    def _stopped_by_record(self, task_id: str, sid: str, attempt: int) -> bool:
        """For a job Ray does not know: whether its attempt is over. A driver that still runs it (Ray lost the
        job under it; runtime/attempt_record) is asked to stop through its record and followed until its
        record says it ended, or until ``RECORD_STOP_WAIT_S`` have passed (a driver that cannot answer)."""
        if not attempt_record.ask_to_stop(self.ctx.settings.root, task_id, attempt, self.ctx.now()):
            return True
        asked = self._stop_asked.setdefault(sid, time.monotonic())
        if time.monotonic() - asked < RECORD_STOP_WAIT_S:
            return False
        log.warning("cancel: %s did not confirm its stop within %.0f s; recorded as canceled", sid, RECORD_STOP_WAIT_S)
        return True

    def _one(self, task_id: str, sid: str | None, attempt: int) -> int:
        ctx = self.ctx
        info = ctx.jobs.get(sid) if sid else None
        if info is not None and info.status in (RayJobStatus.PENDING, RayJobStatus.RUNNING):
            asked = self._stop_asked.get(sid)  # type: ignore[arg-type]
            if asked is None or time.monotonic() - asked >= STOP_RESEND_S:
                ctx.jobs.stop(sid)  # type: ignore[arg-type]
                self._stop_asked[sid] = time.monotonic()  # type: ignore[index]
                self.stops_sent += 1
            return 0  # CANCELED once Ray confirms, on a later pass
        if info is None and sid and not self._stopped_by_record(task_id, sid, attempt):
            return 0  # its driver still runs it (Ray lost the job): asked to stop through its record; next pass
        if info is None and sid in self._stop_asked:
            note = "canceled; its driver stopped it (Ray had lost the job)"
        elif info is None:
            note = "canceled (Ray had no job for it)"
        elif info.status == RayJobStatus.STOPPED:
            note = "canceled; the Ray job stopped"
        else:
            note = f"canceled; the Ray job had already ended ({info.status})"
        with ctx.db.session() as s:
            task = s.get(TaskModel, task_id)
            if task is None or task.status != TaskStatus.CANCELING.value:
                return 0
            try:
                switch_task_status(s, task, TaskStatus.CANCELED, actor=ACTOR,
                                   reason=TerminationReason.USER_CANCELED, message=note)
            except Conflict:
                return 0
            att = attempt_by_sid(s, sid) if sid else None
            if att is not None:
                att.status = (TaskStatus.CANCELED.value if info is None or info.status == RayJobStatus.STOPPED
                              else info.status.value)
                att.exit_code = info.driver_exit_code if info is not None else None
                att.termination_reason = TerminationReason.USER_CANCELED.value
                att.message = note
                driver = read_driver_status(ctx, user_of(s, task), task_id, att.attempt) if info is not None else {}
                if att.started_at is None and driver.get("started_at"):  # it ran before the monitor saw it
                    att.started_at = accounting.start_time(driver, created=att.created_at, now=ctx.now())
                close_attempt(s, att, accounting.end_time(info.end_time_ms if info is not None else None, driver,
                                                          started=att.started_at, now=ctx.now()))
        return 1
