"""CancelTasks: CANCELING → ask the attempt to stop, once per channel → CANCELED once it has ended.

The API only records intent (QUEUED → CANCELED at once; SUBMITTED/RUNNING → CANCELING) and wakes
this loop. The first time the loop sees an attempt being canceled it asks it to stop twice, once each:

* its **stop file** (launcher/attempt_record: ``<data root>/.argus/attempts/<task>.<attempt>.stop``),
  written in the pass: durable, a local write, and it works whether Ray is fast, slow, unreachable or
  has lost the job — the driver looks for it every second and SIGTERMs the task;
* **one Ray stop request**, for what the file cannot reach: a job Ray has not started yet (Ray hands
  the stop to the job's supervisor actor, which stops the driver as it starts it) and a driver without
  a record. Sent again only if Ray could not be reached (``ClusterUnavailable``: it may never have
  arrived), ``STOP_RETRY_S`` later. Asking every 5 s until Ray reported the end cost 3 205 stop
  requests and 645 s for 50 cancels at load 18: the requests loaded the dashboard that had to answer them.

The attempt is over, whichever is seen first, when its record says it finished (or its driver's
process on this machine is gone), or when Ray reports the job ended. A job Ray had not started when it
accepted the stop, and whose driver has not begun (no record), is CANCELED at once ("canceled before
it started"): under load Ray starts a storm of pending jobs one by one, and only then stops them; its
stop file stays until Ray says the job ended. A job Ray no longer knows whose driver still reports is
waited for ``RECORD_STOP_WAIT_S``, then recorded as canceled (a driver that cannot answer).
Idempotent: a job Ray already finished, or never knew, is simply recorded as canceled.

Ray's calls (the job's status at most every ``RAY_CHECK_S``, and the one stop if it is still live) run
in a small thread pool, and a pass waits at most ``PASS_WAIT_S`` for them: 50 cancels cost one round
of concurrent calls, not 50 serial ones, and a slow dashboard never holds the scheduler thread (a late
answer is used by a later pass). The record, a small local file, is read on every pass; the stop file
is written once. All of it is this process's memory: a restarted server writes the files again and
sends each live attempt one more stop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from argus.cluster.types import ClusterUnavailable, JobInfo, RayJobStatus
from argus.core import accounting
from argus.core.launch import AttemptStatus
from argus.core.messages import Message, from_stored, msg, nested, text_of
from argus.core.states import TaskStatus, TerminationReason
from argus.db.models import TaskModel
from argus.errors import Conflict
from argus.launcher import attempt_record
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

STOP_RETRY_S = 5.0  # Ray was unreachable when the stop was sent: send it once more this much later
RAY_CHECK_S = 1.0  # Ray's view of a job being canceled is asked at most this often (the record is read every pass)
PASS_WAIT_S = 0.25  # a pass waits this long at most for its Ray calls; a later answer is used by a later pass
RAY_THREADS = 8  # Ray calls at once (I/O: the dashboard answers them concurrently)
# a driver asked to stop through its record (Ray lost its job) ends within its kill grace and a heartbeat or two
RECORD_STOP_WAIT_S = 60.0
LIVE = (RayJobStatus.PENDING, RayJobStatus.RUNNING)


@dataclass
class RayAnswer:
    """What one call of the pool learned: Ray's view of the job and whether the stop request reached Ray."""

    known: bool  # Ray answered the status request (``info`` is its view; None: Ray does not know the job)
    info: JobInfo | None = None
    stop: bool | None = None  # None: none was due; True: Ray received it; False: Ray was unreachable (not sent)
    accepted: bool = False  # Ray's answer to the stop: it found the job's supervisor and gave it the stop


@dataclass
class Canceling:
    """What the loop knows of one attempt being canceled (keyed by its submission id)."""

    task_id: str
    attempt: int
    since: float  # monotonic: when this loop first saw it, and wrote its stop file
    record_at_start: bool  # its record already said it finished when first seen: it ended before the cancel
    stop_due: float | None = 0.0  # monotonic: when to send its Ray stop; None once Ray has it (or needs none)
    checked: float = float("-inf")  # monotonic: when Ray's view was last asked
    call: Future[RayAnswer] | None = None  # the call in flight
    known: bool = False  # Ray has answered once; ``info`` is its latest view
    info: JobInfo | None = None
    live_seen: bool = False  # Ray reported it PENDING/RUNNING: a later end is the stop's doing
    followed: bool = False  # Ray did not know it while its record said its driver ran (Ray lost the job)
    held: bool = False  # Ray accepted the stop while the job was PENDING: its driver is stopped as it starts
    closed: bool = False  # CANCELED before it started; followed until it ended, then its stop file is removed


class CancelTasks:
    def __init__(self, ctx: LoopContext, *, pool: Executor | None = None) -> None:
        self.ctx = ctx
        self.pending = 0
        self.stops_sent = 0  # Ray stop requests that reached Ray (bench/overhead.py, bench/cancel_storm.py)
        self._lock = threading.Lock()  # stops_sent is counted in the pool's threads
        self._pool = pool
        self._attempts: dict[str, Canceling] = {}

    def close(self) -> None:
        """Let the pool's threads go (a call in flight ends on its own timeout); a later pass makes a new pool."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    @property
    def pool(self) -> Executor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(RAY_THREADS, thread_name_prefix="argus-cancel")
        return self._pool

    def run_once(self) -> int:
        """One pass over CANCELING tasks; returns how many became CANCELED."""
        ctx = self.ctx
        with ctx.db.session() as s:
            rows = s.execute(select(TaskModel.id, TaskModel.submission_id, TaskModel.attempts)
                             .where(TaskModel.status == TaskStatus.CANCELING.value)).all()
        self.pending = len(rows)  # CANCELING tasks: the runner polls faster while > 0
        done = 0
        records = {sid: attempt_record.read(ctx.settings.root, a.task_id, a.attempt)
                   for sid, a in self._attempts.items() if a.closed}
        for task_id, sid, attempt in rows:
            if not sid:  # never sent to Ray: nothing can run it
                done += self._guarded(task_id, attempt, self._finish, task_id, attempt, None, None, None,
                                      msg("status.canceled_no_job"))
                continue
            record = records[sid] = attempt_record.read(ctx.settings.root, task_id, attempt)
            if sid not in self._attempts:
                self._attempts[sid] = self._first_sight(task_id, attempt, record)
        self._attempts = {sid: a for sid, a in self._attempts.items() if sid in records}  # CANCELING, or closed
        for sid, a in list(self._attempts.items()):  # the record first: no Ray call for what has ended
            if attempt_record.finished(records[sid]) or records[sid].get("gone"):
                done += self._guarded(a.task_id, a.attempt, self._by_record, sid, a, records[sid])
        self._ask_ray()
        for sid, a in list(self._attempts.items()):
            done += self._guarded(a.task_id, a.attempt, self._by_ray, sid, a, records[sid])
        return done

    @staticmethod
    def _guarded(task_id: str, attempt: int, settle: Callable[..., int], *args: Any) -> int:
        """``settle(*args)``; an error is logged and retried next pass, and the other cancels go on."""
        try:
            return settle(*args)
        except Exception:  # noqa: BLE001 - retried next pass; other cancels go on
            log.exception("cancel: %s attempt %d failed", task_id, attempt)
            return 0

    def _first_sight(self, task_id: str, attempt: int, record: dict[str, Any]) -> Canceling:
        """Write the attempt's stop file (the driver's channel), unless its record says it has already ended."""
        ended = attempt_record.finished(record)
        if not ended:
            try:
                attempt_record.request_stop(self.ctx.settings.root, task_id, attempt)
            except OSError as exc:  # Ray's stop still goes; the driver then stops on Ray's SIGTERM
                log.warning("cancel: cannot write the stop file of %s attempt %d: %s", task_id, attempt, exc)
        return Canceling(task_id, attempt, time.monotonic(), record_at_start=ended,
                         stop_due=None if ended else 0.0)

    # ---------------------------------------------------------------- Ray, in the pool

    def _ask_ray(self) -> None:
        """Start the Ray calls that are due (one at a time per attempt), wait ``PASS_WAIT_S`` at most, take
        in every answer that has come (also those a previous pass left)."""
        now = time.monotonic()
        started = []
        for sid, a in self._attempts.items():
            if a.call is not None:
                continue
            stop = a.stop_due is not None and now >= a.stop_due
            if stop or now - a.checked >= RAY_CHECK_S:
                a.checked = now
                a.call = self.pool.submit(self._call, sid, stop)
                started.append(a.call)
        if started:
            wait(started, timeout=PASS_WAIT_S)
        for sid, a in self._attempts.items():
            if a.call is None or not a.call.done():
                continue
            call, a.call = a.call, None
            try:
                answer = call.result()
            except Exception:  # noqa: BLE001 - asked again after RAY_CHECK_S
                log.exception("cancel: asking Ray about %s failed", sid)
                continue
            if answer.stop is not None:
                a.stop_due = None if answer.stop else time.monotonic() + STOP_RETRY_S
                a.held = a.held or (answer.accepted and answer.info is not None
                                    and answer.info.status == RayJobStatus.PENDING)
            if answer.known:
                a.known, a.info = True, answer.info
                a.live_seen = a.live_seen or (answer.info is not None and answer.info.status in LIVE)
                if answer.info is None or answer.info.status not in LIVE:
                    a.stop_due = None  # nothing left for Ray to stop

    def _call(self, sid: str, stop: bool) -> RayAnswer:
        """In a pool thread: Ray's view of the job, then, if it is due and the job is live, the one stop."""
        jobs = self.ctx.jobs
        try:
            info = jobs.get(sid)
        except ClusterUnavailable as exc:
            log.debug("cancel: Ray unreachable (%s); will ask again", exc)
            return RayAnswer(known=False, stop=False if stop else None)
        if not stop or info is None or info.status not in LIVE:
            return RayAnswer(known=True, info=info)
        accepted = False
        try:
            accepted = jobs.stop(sid)
        except ClusterUnavailable as exc:
            log.info("cancel: Ray unreachable when stopping %s (%s); sending it once more in %.0f s",
                     sid, exc, STOP_RETRY_S)
            return RayAnswer(known=True, info=info, stop=False)
        except Exception as exc:  # noqa: BLE001 - Ray answered, with a refusal: the stop file still stands
            log.warning("cancel: Ray refused to stop %s (%s); its driver stops through its stop file", sid, exc)
        with self._lock:
            self.stops_sent += 1
        return RayAnswer(known=True, info=info, stop=True, accepted=bool(accepted))

    # ---------------------------------------------------------------- deciding

    def _by_record(self, sid: str, a: Canceling, record: dict[str, Any]) -> int:
        """CANCELED: the record says the attempt ended (or its driver's process here is gone)."""
        if a.closed:
            return self._forget(sid, a)
        code = record.get("exit_code")
        code = code if isinstance(code, int) else None
        if a.record_at_start:  # it ended before the cancel could ask anything
            ended = TaskStatus.SUCCEEDED if code == 0 else TaskStatus.FAILED
            return self._finish(a.task_id, a.attempt, sid, a.info, record,
                                msg("status.canceled_task_ended", exit_code=str(code)), attempt_status=ended,
                                exit_code=code)
        note = msg("status.canceled_driver_stopped" if attempt_record.finished(record)
                   else "status.canceled_driver_gone")
        if a.followed or (a.known and a.info is None):
            note = note.then("part.ray_lost")
        return self._finish(a.task_id, a.attempt, sid, a.info, record, note, exit_code=code)

    def _by_ray(self, sid: str, a: Canceling, record: dict[str, Any]) -> int:
        """CANCELED if Ray's latest view says the attempt is over, else 0: looked at again next pass."""
        if not a.known:
            return 0  # Ray has not answered yet (slow, or unreachable): the stop file works meanwhile
        info = a.info
        if a.closed:  # CANCELED already: its stop file stays until Ray says the job ended
            return self._forget(sid, a) if info is None or info.status not in LIVE else 0
        if info is None:  # Ray does not know the job (its head restarted, or it never had it)
            if attempt_record.alive(record, self.ctx.now()):
                a.followed = True
                if time.monotonic() - a.since < RECORD_STOP_WAIT_S:
                    return 0  # its driver still runs it: asked through the stop file, waited for
                log.warning("cancel: %s did not confirm its stop within %.0f s; recorded as canceled",
                            sid, RECORD_STOP_WAIT_S)
                note = msg("status.canceled_no_confirm", seconds=f"{RECORD_STOP_WAIT_S:.0f}")
            elif a.followed:
                note = msg("status.canceled_driver_stopped").then("part.ray_lost")
            else:
                note = msg("status.canceled_no_job")
            return self._finish(a.task_id, a.attempt, sid, None, record, note)
        if info.status == RayJobStatus.PENDING and a.held and not record:
            # Ray holds the stop for a job it has not started, and no driver has begun: Ray's supervisor stops the
            # driver as it starts it, before the task (which the driver starts only after its checks); the stop
            # file stays while Ray still has the job. Waiting for Ray's STOPPED instead: 50 cancels while PENDING
            # at load 25 on 2 cores took 91 s (bench/cancel_storm.py), all of it Ray starting the jobs to stop them.
            return self._finish(a.task_id, a.attempt, sid, info, record, msg("status.canceled_before_start"),
                                follow=True)
        if info.status in LIVE:
            return 0  # asked to stop (Ray and the stop file): CANCELED once it ends
        if info.status == RayJobStatus.STOPPED or a.live_seen:  # it ended while being stopped
            return self._finish(a.task_id, a.attempt, sid, info, record, msg("status.canceled_stopped"),
                                exit_code=info.driver_exit_code)
        return self._finish(a.task_id, a.attempt, sid, info, record,
                            msg("status.canceled_job_ended", status=f"{info.status}"),
                            attempt_status=TaskStatus(info.status.value), exit_code=info.driver_exit_code)

    def _finish(self, task_id: str, attempt: int, sid: str | None, info: JobInfo | None,
                record: dict[str, Any] | None, note: str | Message, *, attempt_status: TaskStatus = TaskStatus.CANCELED,
                exit_code: int | None = None, follow: bool = False) -> int:
        """Record the task CANCELED and close its attempt (guarded: a task no longer CANCELING is left alone).
        ``follow``: its job has not ended yet: its stop file stays until it has."""
        ctx = self.ctx
        with ctx.db.session() as s:
            task = s.get(TaskModel, task_id)
            if task is None or task.status != TaskStatus.CANCELING.value:
                return 0
            # it ends with the reason its stop was asked for (services.tasks.request_stop); a stop asked for another
            # reason than a user's cancel (a sweep's early stop or budget) keeps its message first
            reason = TerminationReason(task.termination_reason or TerminationReason.USER_CANCELED)
            if reason is not TerminationReason.USER_CANCELED and task.status_message:
                first = from_stored(task.status_message_code, task.status_message_params, task.status_message)
                note = msg("status.stop_note", message=nested(first or task.status_message), note=nested(note))
            try:
                switch_task_status(s, task, TaskStatus.CANCELED, actor=ACTOR, reason=reason, message=note)
            except Conflict:
                return 0
            att = attempt_by_sid(s, sid) if sid else None
            if att is not None:
                att.status = attempt_status.value
                att.exit_code = exit_code
                att.termination_reason = reason.value
                att.message = text_of(note)
                # when it ran: the record has the driver's times; else its status.json, when Ray started it
                ran = info is not None and info.status != RayJobStatus.PENDING
                kept = AttemptStatus.parse(record, att.attempt) if record else None
                driver = kept if kept and kept.started_at else (
                    read_driver_status(ctx, user_of(s, task), task_id, att.attempt) if ran else None)
                if att.started_at is None and driver and driver.started_at:  # it ran before the monitor saw it
                    att.started_at = accounting.start_time(driver, created=att.created_at, now=ctx.now())
                close_attempt(s, att, accounting.end_time(info.end_time_ms if info is not None else None, driver,
                                                          started=att.started_at, now=ctx.now()))
        a = self._attempts.get(sid) if sid else None
        if a is not None and follow:
            a.closed = True
        elif a is not None and sid:
            self._forget(sid, a)
        return 1

    def _forget(self, sid: str, a: Canceling) -> int:
        """The attempt has ended: its stop file's work is done. 0: no task changed here."""
        attempt_record.forget(self.ctx.settings.root, a.task_id, a.attempt)
        self._attempts.pop(sid, None)
        return 0
