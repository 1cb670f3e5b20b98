"""MonitorActiveTasks: follow SUBMITTED/RUNNING tasks in Ray and record how they end.

:func:`classify` is the whole mapping from Ray's view (status, ``error_type``,
``driver_exit_code``, the driver node's liveness) plus the driver's ``status.json`` to an
Argus outcome; it is pure so every row of the table is unit-tested. The loop around it is
load → act (ask Ray) → apply (guarded ``switch_task_status``); a StaleTask means the
user (cancel) or another pass won, and the task is simply looked at again next pass.

Infrastructure failures (NODE_LOST, RAY_JOB_LOST) go back to QUEUED as a new attempt up
to ``max_retries``; user failures (non-zero exit) never retry. A non-zero exit's message names
its cause, the last exception in the attempt's log (``core.failures``), so users need not
open the log to learn that a module was missing.

A driver that dies before it writes the attempt's log (its job folder cannot be made, the
interpreter is missing) leaves its words only in Ray's driver log, on the node's local disk,
which users cannot reach. For such a failure (non-zero exit, attempt log empty or missing) the
monitor asks Ray once for the tail of that log (one bounded HTTP call, only for these failures)
and copies it into the attempt's log, marked as copied from Ray, before recording the end;
the cause is then read from it as from any log, and ``argus logs`` shows it.

A driver whose job folder refused its log exits 74 and says why (core/log_write.py):
``LOG_WRITE_FAILED`` with that reason. A lost node's message is one line (node, when, Ray's
reason); Ray's multi-line account of the dead supervisor actor goes to the event only. A RUNNING
task whose driver stops refreshing ``status.json`` gets a warning message and event
(``DRIVER_SILENCE_S``), and is left running.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.orm.attributes import set_committed_value

from argus.cluster.types import ClusterUnavailable, JobInfo, RayJobStatus
from argus.core import accounting, log_write
from argus.core.failures import (
    DIAGNOSE_BYTES,
    TAIL_BYTES,
    FailureKind,
    diagnose,
    hint_for,
    memory_limit_cause,
    node_lost_message,
    node_lost_parts,
)
from argus.core.launch import AttemptStatus, LimitHit
from argus.core.messages import Message, exit_message, msg, nested, part, text_of
from argus.core.states import TaskStatus, TerminationReason
from argus.db.models import TaskAttemptModel, TaskEventModel, TaskModel
from argus.errors import Conflict
from argus.launcher import attempt_record
from argus.scheduler.common import (
    ACTOR,
    ATTEMPT_LIVE,
    TERMINAL_VALUES,
    LoopContext,
    attempt_by_sid,
    close_attempt,
    log,
    log_path,
    read_driver_status,
    user_of,
)
from argus.scheduler.janitor import DeleteFinishedRayJobs
from argus.scheduler.progress import ProgressWatch
from argus.services.home_files import append_in_home, open_plain
from argus.services.notifications import notify
from argus.services.tasks import switch_task_status

NODE_DEATH = {"JOB_SUPERVISOR_ACTOR_DIED"}
RAY_ENDED = (RayJobStatus.FAILED, RayJobStatus.STOPPED)  # Ray's ends that need not be the launcher's (the record says)
SETUP_ERRORS = {
    "RUNTIME_ENV_SETUP_FAILURE",
    "JOB_SUPERVISOR_ACTOR_START_FAILURE",
    "JOB_SUPERVISOR_ACTOR_UNSCHEDULABLE",
    "JOB_ENTRYPOINT_COMMAND_START_ERROR",
}
# the infrastructure failures retried as a new attempt; scheduler/autoresume.AGAIN resumes each from its checkpoint
INFRA = {TerminationReason.NODE_LOST, TerminationReason.RAY_JOB_LOST}
RAY_LOG_TIMEOUT_S = 5.0  # the one HTTP call for a driver that died before writing its log
FRESH_S = 10.0  # a task that started this recently may end soon: poll it faster
SILENT = "the driver has not reported"  # how a silence warning starts (to find and clear it)
FOLLOWED_CODES = ("status.followed", "status.followed_ray_ended")  # the note on an attempt followed through its record


@dataclass(frozen=True)
class Outcome:
    status: TaskStatus | None  # None: nothing to change
    reason: TerminationReason | None = None
    message: str | None = None
    exit_code: int | None = None
    stop: bool = False  # stop the Ray job (it may still hold a node or a PENDING slot)
    resubmit: bool = False  # Ray does not know a SUBMITTED id: submit it again with the same id
    detail: str | None = None  # the full story for the task's timeline (Ray's multi-line message)
    requeue: bool = False  # run it again as a new attempt (within max_retries), like an infrastructure failure
    failure_kind: str | None = None  # core.failures.FailureKind of a non-zero exit, from its log
    failure_hint: str | None = None  # where it happened and what to change (one line)
    coded: Message | None = None  # ``message`` as a code and params (issue 37), used while its text is ``message``
    from_record: bool = False  # decided by the attempt's record, not by Ray's end of the job (its end time is not)

    def said(self) -> str | Message | None:
        """The status message to store: coded where the code still says ``message``."""
        return self.coded if self.coded is not None and self.coded.text == self.message else self.message


def saying(m: Message) -> dict[str, object]:
    """An Outcome's ``message`` and ``coded`` from one coded message."""
    return {"message": m.text, "coded": m}


NOTHING = Outcome(None)


def _pending(why: Message) -> dict[str, object]:
    """A retry's pending reason (issue 37): its English text, code and parameters."""
    return {"pending_reason": why.text, "pending_reason_code": why.code, "pending_reason_params": why.params}


def _node_lost(when: datetime, ray_message: str | None, **where: str | None) -> dict[str, object]:
    """An Outcome's ``message`` (core/failures.py's one line) and ``coded`` (status.node_lost*), which is used
    only while it says the same (a clipped or cleaned line keeps its English)."""
    who, at, reason = node_lost_parts(when, ray_message, **where)
    code = "status.node_lost" + ("" if who else "_unknown") + ("_why" if reason else "")
    coded = msg(code, at=at, **({"who": who} if who else {}), **({"reason": reason} if reason else {}))
    return {"message": node_lost_message(when, ray_message, **where), "coded": coded}


def classify(
    status: TaskStatus,
    info: JobInfo | None,
    *,
    submitted_at: datetime | None,
    now: datetime,
    start_timeout_s: float,
    dead_nodes: frozenset[str] = frozenset(),
    driver: AttemptStatus | None = None,
    record: dict | None = None,
) -> Outcome:
    """Map Ray's view of one job to what should happen to its task (pure).

    ``record`` is the attempt's record out of its owner's reach (launcher/attempt_record), read when Ray does
    not know the job: a driver that still runs it is followed, one that finished decides the end, and only a
    silent one is lost."""
    hostname = driver.hostname if driver else None
    waited = (now - submitted_at).total_seconds() if submitted_at else 0.0
    if info is None and record and attempt_record.finished(record):
        code = record["exit_code"]
        if code == 0:
            return Outcome(TaskStatus.SUCCEEDED, TerminationReason.SUCCEEDED, exit_code=0,
                           **saying(exit_message(0, None)))
        # a failure while Ray was away may be Ray's (a multi-node task's other nodes were actors of the lost
        # Ray): an infrastructure failure, retried from the checkpoint, never charged to the user's code
        return Outcome(TaskStatus.FAILED, TerminationReason.RAY_JOB_LOST, exit_code=code,
                       **saying(msg("status.ray_lost_ended", exit_code=str(code))))
    if info is None and record and attempt_record.alive(record, now):
        return Outcome(TaskStatus.RUNNING) if status == TaskStatus.SUBMITTED else NOTHING
    if info is None:
        if status == TaskStatus.SUBMITTED and waited > start_timeout_s:
            return Outcome(TaskStatus.FAILED, TerminationReason.START_TIMEOUT,
                           **saying(msg("status.start_timeout_unknown", seconds=f"{start_timeout_s:g}")))
        if status == TaskStatus.SUBMITTED:
            return Outcome(None, resubmit=True)
        return Outcome(TaskStatus.FAILED, TerminationReason.RAY_JOB_LOST, **saying(msg("status.ray_lost")))
    node_dead = info.driver_node_id is not None and info.driver_node_id in dead_nodes
    if info.status == RayJobStatus.PENDING:
        if status == TaskStatus.SUBMITTED and waited > start_timeout_s:
            return Outcome(TaskStatus.FAILED, TerminationReason.START_TIMEOUT, stop=True,
                           **saying(msg("status.start_timeout_pending", seconds=f"{start_timeout_s:g}")))
        return NOTHING
    if info.status == RayJobStatus.RUNNING:
        if node_dead:
            return Outcome(TaskStatus.FAILED, TerminationReason.NODE_LOST, stop=True,
                           **_node_lost(now, "Ray reports the node dead", node_id=info.driver_node_id,
                                        hostname=hostname))
        return Outcome(TaskStatus.RUNNING) if status == TaskStatus.SUBMITTED else NOTHING
    exit_code = info.driver_exit_code
    if exit_code is None and driver:
        exit_code = driver.exit_code
    if info.status == RayJobStatus.SUCCEEDED:
        return Outcome(TaskStatus.SUCCEEDED, TerminationReason.SUCCEEDED, exit_code=0, **saying(exit_message(0, None)))
    if info.status in RAY_ENDED and record and not node_dead:
        followed = _ended_by_ray_only(status, info, record, now)
        if followed is not None:
            return followed
    if info.status == RayJobStatus.STOPPED:
        return Outcome(TaskStatus.FAILED, TerminationReason.SERVER_ERROR, exit_code=exit_code,
                       **saying(msg("status.stopped_outside")))
    # FAILED
    said = (info.message or "").strip()
    detail = {"detail": said} if said else {}
    if info.error_type in NODE_DEATH or node_dead:
        when = datetime.fromtimestamp(info.end_time_ms / 1000, UTC) if info.end_time_ms else now
        return Outcome(TaskStatus.FAILED, TerminationReason.NODE_LOST,
                       **_node_lost(when, info.message, node_id=info.driver_node_id, hostname=hostname),
                       detail=info.message.strip() if info.message and info.message.strip() else None)
    log_failure = log_write.failure_reason(info.driver_exit_code, driver.log_error if driver else None, info.message)
    if log_failure:
        return Outcome(TaskStatus.FAILED, TerminationReason.LOG_WRITE_FAILED, exit_code=exit_code,
                       **saying(log_write.said(log_failure)))
    if exit_code is not None and exit_code != 0:
        return Outcome(TaskStatus.FAILED, TerminationReason.EXIT_NONZERO, exit_code=exit_code,
                       **saying(exit_message(exit_code, None)))
    if info.error_type == "JOB_SUPERVISOR_ACTOR_START_TIMEOUT":
        return Outcome(TaskStatus.FAILED, TerminationReason.START_TIMEOUT,
                       **saying(msg("status.ray_could_not_start" + ("_why" if said else ""), **detail)))
    if info.error_type in SETUP_ERRORS:
        return Outcome(TaskStatus.FAILED, TerminationReason.SUBMIT_ERROR,
                       **saying(msg("status.ray_could_not_start" + ("_why" if said else ""), **detail)))
    return Outcome(TaskStatus.FAILED, TerminationReason.SERVER_ERROR, exit_code=exit_code,
                   **saying(msg("status.ray_job_failed" + ("_why" if said else ""), **detail)))


def _ended_by_ray_only(status: TaskStatus, info: JobInfo, record: dict, now: datetime) -> Outcome | None:
    """Ray ended the job but not the training (issue 36): the attempt's launcher is the node agent's, so Ray's
    own memory monitor killing the JobSupervisor on a full host, or a ``ray job stop`` from outside, end only
    Ray's view of it (measured: a task marked FAILED while its launcher trained on). A launcher that still
    beats is followed; one that ended while Ray had no driver exit code to say decides the outcome by its
    record's exit code. None: the record says neither (it went silent): Ray's word stands."""
    if attempt_record.alive(record, now):
        return Outcome(TaskStatus.RUNNING) if status == TaskStatus.SUBMITTED else NOTHING
    if attempt_record.finished(record) and info.driver_exit_code is None:
        code = record["exit_code"]
        if code == 0:
            return Outcome(TaskStatus.SUCCEEDED, TerminationReason.SUCCEEDED, exit_code=0, from_record=True,
                           **saying(exit_message(0, None)))
        return Outcome(TaskStatus.FAILED, TerminationReason.EXIT_NONZERO, exit_code=code, from_record=True,
                       **saying(exit_message(code, None)))
    return None


def with_log_cause(out: Outcome, home: Path, path: Path, fallback: str | None = None) -> Outcome:
    """``exit code 1: <the cause> (on <worker>)`` and a one-line hint, typed (``failure_kind``), from the last
    DIAGNOSE_BYTES of the attempt's log (core.failures.diagnose: host/GPU OOM, NCCL timeout, rollout engine, ...).

    The log is opened without following links below the owner's ``home`` and never read if it
    is a FIFO or device (services/home_files.py). ``fallback``: Ray's driver log, used when the
    attempt's log shows no cause (copying it there failed).
    """
    tail = ""
    fh = open_plain(home, path)
    if fh is None and fallback is None:
        return out
    if fh is not None:
        with fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - DIAGNOSE_BYTES))
            tail = fh.read(DIAGNOSE_BYTES).decode("utf-8", errors="replace")
    assert out.exit_code is not None
    found = diagnose(tail, out.exit_code)
    if found is None and fallback:
        found = diagnose(fallback[-TAIL_BYTES:], out.exit_code)
    if found is None:
        return replace(out, **saying(exit_message(out.exit_code, None)))
    where = f"on {found.where}: " if found.where else ""
    return replace(out, **saying(exit_message(out.exit_code, found.cause)), failure_kind=found.kind.value,
                   failure_hint=f"{where}{found.hint}")


LIMIT_KINDS = {"memory": FailureKind.HOST_OOM, "pids": FailureKind.PIDS_LIMIT, "disk": FailureKind.DISK_FULL}


def limit_hit(out: Outcome, driver: AttemptStatus, hit: LimitHit) -> Outcome:
    """A task its launcher stopped because it hit one of its bounds (launcher/task_bounds.py): that bound, for
    certain, with its kind and hint."""
    kind = LIMIT_KINDS.get(hit.kind, FailureKind.HOST_OOM)
    assert out.exit_code is not None
    return replace(out, **saying(exit_message(out.exit_code, (hit.message or kind.value)[:500])),
                   failure_kind=kind.value,
                   failure_hint=f"on {driver.hostname or 'its node'}: {hint_for(kind)}")


def oom_killed(out: Outcome, driver: AttemptStatus) -> Outcome:
    """A task the kernel's OOM killer hit inside its memory cgroup (launcher/task_bounds.py): a host OOM, for
    certain."""
    assert out.exit_code is not None
    return replace(out, **saying(exit_message(out.exit_code, memory_limit_cause(driver.oom_kills,
                                                                                driver.memory_limit))),
                   failure_kind=FailureKind.HOST_OOM.value,
                   failure_hint=f"on {driver.hostname or 'its node'}: {hint_for(FailureKind.HOST_OOM)}")


def died_before_logging(info: JobInfo | None, dead: frozenset[str]) -> bool:
    """Could this be a driver that never wrote its log? A non-zero exit Ray saw (not a lost node)."""
    return (info is not None and info.status == RayJobStatus.FAILED and info.driver_exit_code not in (None, 0)
            and info.error_type not in NODE_DEATH and info.driver_node_id not in dead
            # the driver said its job folder refuses writes: Ray's message has the reason, copying cannot work
            and log_write.failure_reason(info.driver_exit_code, None, info.message) is None)


def log_is_empty(home: Path, path: Path) -> bool:
    """Does the attempt's log offer nothing to read (missing, empty, or not a plain file reached without links)?"""
    f = open_plain(home, path)
    if f is None:
        return True
    with f:
        return os.fstat(f.fileno()).st_size == 0


class MonitorActiveTasks:
    def __init__(self, ctx: LoopContext) -> None:
        self.ctx = ctx
        self.janitor = DeleteFinishedRayJobs(ctx)
        # SUBMITTED tasks, and tasks that started in the last FRESH_S, seen by the last pass: the runner
        # polls faster while > 0 (starts and short tasks' ends show at once; long runs cost no extra polls)
        self.starting = 0
        # RUNNING task id -> (the driver's last ``alive_at``, when this server first saw that value):
        # measured on the server's clock, so a worker's clock skew cannot fake a silence
        self.heard: dict[str, tuple[object, datetime]] = {}
        self.progress = ProgressWatch(ctx)  # stalls and resumed runs' first step (scheduler/progress.py)

    def run_once(self) -> int:
        """One pass over SUBMITTED/RUNNING tasks; returns how many changed."""
        ctx = self.ctx
        with ctx.db.session() as s:
            rows = s.execute(
                select(TaskModel.id, TaskModel.status, TaskModel.submission_id, TaskModel.attempts,
                       TaskModel.started_at)
                .where(TaskModel.status.in_([TaskStatus.SUBMITTED.value, TaskStatus.RUNNING.value]))
            ).all()
        now = ctx.now()
        self.starting = sum(1 for r in rows if r.status == TaskStatus.SUBMITTED.value
                            or (r.started_at is not None and (now - r.started_at).total_seconds() < FRESH_S))
        changed = 0
        try:
            dead = self._dead_nodes() if rows else frozenset()
            for row in rows:
                if not row.submission_id:
                    continue
                try:
                    changed += self._check(row.id, TaskStatus(row.status), row.submission_id, dead)
                except ClusterUnavailable:
                    raise
                except Exception:  # noqa: BLE001 - one odd job must not stall every other task
                    log.exception("monitor: checking %s failed", row.submission_id)
            running = {r.id for r in rows if r.status == TaskStatus.RUNNING.value}
            self.heard = {k: v for k, v in self.heard.items() if k in running}
            self.progress.forget_except(running)
            self._sweep_orphans()
            self.janitor.run_once()
        except ClusterUnavailable as exc:
            log.debug("monitor: Ray unreachable (%s); will retry", exc)
        return changed

    def _dead_nodes(self) -> frozenset[str]:
        return frozenset(n.node_id for n in self.ctx.inventory.worker_nodes() if not n.alive)

    def _check(self, task_id: str, status: TaskStatus, sid: str, dead: frozenset[str]) -> int:
        ctx = self.ctx
        info = ctx.jobs.get(sid)  # act: no transaction open
        ray_log = self._copy_ray_log(task_id, sid) if died_before_logging(info, dead) else None
        with ctx.db.session() as s:
            task = s.get(TaskModel, task_id)
            if task is None or task.status != status.value or task.submission_id != sid:
                return 0  # someone else moved it; next pass
            user = user_of(s, task)
            driver = read_driver_status(ctx, user, task_id, task.attempts)
            record = (attempt_record.read(ctx.settings.root, task_id, task.attempts)
                      if info is None or info.status in RAY_ENDED else None)
            out = classify(status, info, submitted_at=task.submitted_at, now=ctx.now(),
                           start_timeout_s=ctx.settings.start_timeout_s, dead_nodes=dead, driver=driver,
                           record=record)
            if out.reason == TerminationReason.EXIT_NONZERO and out.exit_code is not None:
                if driver and driver.limit_hit:
                    out = limit_hit(out, driver, driver.limit_hit)
                elif driver and driver.oom_kills > 0:
                    out = oom_killed(out, driver)
                elif driver and driver.error:
                    # the driver refused to start the task (no jail, missing rollout engine): its words
                    out = replace(out, **saying(exit_message(out.exit_code, driver.error[:500])))
                else:
                    out = with_log_cause(out, ctx.layout_home(user),
                                         log_path(ctx, user, task_id, task.attempts), ray_log)
            if out.resubmit:
                pass
            elif out.status is None:
                self._update_attempt(s, sid, info, driver, None)
                if record:  # Ray lost or ended it; its driver still runs it
                    self._followed(s, task, record, info)
                if status == TaskStatus.RUNNING and info is not None and info.status == RayJobStatus.RUNNING:
                    self._watch_heartbeat(s, task, driver)
                    return self._watch_progress(s, task, user, sid, info, driver)
                return 0
            else:
                return self._apply(s, task, sid, info, driver, out)
        # Ray lost (or never got) this SUBMITTED id: the same id is safe to submit again.
        from argus.scheduler.submit import resubmit_same_id

        resubmit_same_id(ctx, task_id, sid)
        return 0

    def _followed(self, s, task: TaskModel, record: dict, info: JobInfo | None) -> None:
        """Say once (message + timeline) that Ray lost (or ended) the job and the attempt is followed through
        its record."""
        if task.status_message_code in FOLLOWED_CODES:
            return
        where = f"{log_write.one_line(str(record.get('hostname') or '?'))[:80]} (pid {record.get('driver_pid')})"
        if info is None:
            said = msg("status.followed", where=where)
        else:
            why = log_write.one_line(f"{info.status.value}: {info.error_type or info.message or '?'}")[:200]
            said = msg("status.followed_ray_ended", where=where, ray=why)
        if self._note(s, task, said, said):
            log.warning("task %s: %s", task.id, said.text)

    def _watch_heartbeat(self, s, task: TaskModel, driver: AttemptStatus | None) -> None:
        """Say so (message + timeline event, once) when a RUNNING task's driver stops refreshing ``status.json``.

        The driver rewrites ``alive_at`` every 15 s; when it stays the same for ``DRIVER_SILENCE_S``
        while Ray says RUNNING, the driver is hung (a dead NFS mount, a frozen node Ray has not
        noticed) or cannot write its job folder. The task is not stopped: a hung mount may recover,
        and only a person can tell. A driver that reports again replaces the warning with "the
        driver reports again" (message and timeline). Drivers from before the heartbeat (no
        ``heartbeat_s`` in their status.json) are not judged.
        """
        limit = self.ctx.settings.driver_silence_s
        if limit <= 0 or (driver and driver.heartbeat_s is None):
            return
        mark, now = (driver.alive_at if driver else None), self.ctx.now()
        seen = self.heard.get(task.id)
        if seen is None or seen[0] != mark:
            self.heard[task.id] = (mark, now)
            if seen is not None and (task.status_message or "").startswith(SILENT):
                again = msg("status.driver_reports_again")
                self._note(s, task, again, again)
            return
        if (now - seen[1]).total_seconds() < limit or (task.status_message or "").startswith(SILENT):
            return
        last = (part("status.driver_silent_last", at=log_write.one_line(mark)[:40]) if isinstance(mark, str)
                else part("status.driver_silent_never"))
        said = msg("status.driver_silent", limit=f"{limit:g}", last=last)
        if self._note(s, task, said, said):
            log.warning("task %s: %s", task.id, said.text)

    def _watch_progress(self, s, task: TaskModel, user: str, sid: str, info: JobInfo,
                        driver: AttemptStatus | None) -> int:
        """Stalls and resume checks (scheduler/progress.py): notes, notifications, and on_stall's action."""
        for found in self.progress.observe(task, user, driver.usage if driver else None):
            if found.notify:
                notify(s, task, found.notify, found.message)
            if found.action:
                out = Outcome(TaskStatus.FAILED, TerminationReason.STALLED, found.message, coded=found.coded, stop=True,
                              requeue=found.action == "requeue")
                return self._apply(s, task, sid, info, driver, out)
            if found.clears and not (task.status_message or "").startswith(("STALLED", "idle GPUs")):
                continue  # a newer message (a silent driver) is not ours to replace
            self._note(s, task, None if found.event_only else (found.coded or found.message),
                       found.coded_event or found.event)
        return 0

    def _note(self, s, task: TaskModel, message: str | Message | None, event: str | Message) -> bool:
        """Set a RUNNING task's message (None: keep it) without a status change, plus a timeline event; False if it
        moved on. A coded :class:`Message` keeps its code and parameters beside its text (issue 37)."""
        now = self.ctx.now()
        if message is not None:
            coded = message if isinstance(message, Message) else None
            values = {"status_message": text_of(message), "status_message_code": coded and coded.code,
                      "status_message_params": coded and coded.params}
            done = s.execute(update(TaskModel).where(TaskModel.id == task.id,
                                                     TaskModel.status == TaskStatus.RUNNING.value)
                             .values(**values, updated_at=now))
            if done.rowcount != 1:
                return False
            for key, value in values.items():
                set_committed_value(task, key, value)
        said = event if isinstance(event, Message) else None
        s.add(TaskEventModel(task_id=task.id, at=now, from_status=TaskStatus.RUNNING.value,
                             to_status=TaskStatus.RUNNING.value, reason=None, message=text_of(event),
                             message_code=said and said.code, message_params=said and said.params, actor=ACTOR))
        return True

    def _copy_ray_log(self, task_id: str, sid: str) -> str | None:
        """Ray's driver log, copied into the attempt's log when the driver left that empty; or None.

        Load (short read), act (one bounded call to Ray, no transaction open), write the file; the
        caller records the outcome afterwards. Any failure here only loses the copy, never the pass.
        """
        ctx = self.ctx
        with ctx.db.session() as s:
            task = s.get(TaskModel, task_id)
            if task is None or task.submission_id != sid or not task.attempts:
                return None
            user, attempt = user_of(s, task), task.attempts
        status = read_driver_status(ctx, user, task_id, attempt)
        if status and status.error:
            return None  # the driver started and said why it refused: its log has it
        path, home = log_path(ctx, user, task_id, attempt), ctx.layout_home(user)
        if not log_is_empty(home, path):
            return None
        try:
            text = ctx.jobs.driver_log_tail(sid, TAIL_BYTES, timeout_s=RAY_LOG_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - ClusterUnavailable, a timeout: the exit code must do
            log.warning("monitor: no driver log from Ray for %s (%s)", sid, exc)
            return None
        if not text or not text.strip():
            return None
        body = text if text.endswith("\n") else text + "\n"
        data = (f"[argus] the driver wrote nothing to this log; below, copied from Ray by the server: the "
                f"end (at most {TAIL_BYTES // 1024} KiB) of Ray's driver log for job {sid}\n{body}"
                "[argus] end of the copy of Ray's driver log\n").encode("utf-8", errors="replace")
        try:
            append_in_home(home, tuple(path.relative_to(home).parts), data)
        except (OSError, ValueError) as exc:
            log.warning("monitor: cannot copy Ray's driver log for %s into %s (%s)", sid, path, exc)
        else:
            log.info("task %s: the driver wrote no log; copied Ray's driver log (%d bytes)", task_id, len(data))
        return text

    def _apply(self, s, task: TaskModel, sid: str, info: JobInfo | None, driver: dict, out: Outcome) -> int:
        ctx = self.ctx
        new, message = out.status, out.said()
        assert new is not None
        again = out.reason in INFRA or out.requeue
        retry = again and task.attempts <= ctx.settings.max_retries
        if again:
            message = (msg("status.retrying", message=nested(message), attempt=task.attempts + 1) if retry
                       else msg("status.no_retries", message=nested(message), max=ctx.settings.max_retries))
        target = TaskStatus.QUEUED if retry else new
        if out.reason == TerminationReason.NODE_LOST:
            ctx.inventory.invalidate()  # the submit loop must not place the retry on the dead node
        if out.stop:
            try:
                ctx.jobs.stop(sid)
            except ClusterUnavailable:
                return 0  # cannot stop it now: decide again next pass rather than leave it running
            except Exception as exc:  # noqa: BLE001 - e.g. its node is gone: nothing left to stop
                log.warning("stopping %s failed (%s); recording the outcome anyway", sid, exc)
        for found in self.progress.at_end(task, user_of(s, task)) if new != TaskStatus.RUNNING else []:
            said = found.coded_event
            s.add(TaskEventModel(task_id=task.id, at=ctx.now(), from_status=task.status, to_status=task.status,
                                 reason=None, message=found.event, message_code=said and said.code,
                                 message_params=said and said.params, actor=ACTOR))
            if found.notify:
                notify(s, task, found.notify, found.message)
        try:
            switch_task_status(s, task, target, actor=ACTOR, reason=out.reason, message=message,
                               event_message=msg("status.ray_said", message=nested(message), detail=out.detail)
                               if out.detail else msg("status.hinted", message=nested(message), hint=out.failure_hint)
                               if out.failure_hint else None,
                               **(_pending(msg("queue.requeued_after_stall" if out.requeue else
                                               "queue.retrying_after_failure")) if retry else {}),
                               **({"failure_kind": out.failure_kind, "failure_hint": out.failure_hint}
                                  if out.failure_kind else {}))
        except Conflict:
            return 0
        self._update_attempt(s, sid, info, driver, out, text_of(message))
        log.info("task %s: %s (%s)", task.id, target, text_of(message))
        return 1

    def _update_attempt(self, s, sid: str, info: JobInfo | None, driver: AttemptStatus | None, out: Outcome | None,
                        message: str | None = None) -> None:
        att = attempt_by_sid(s, sid)
        if att is None:
            return
        now = self.ctx.now()
        if driver:
            att.node_id = driver.node_id or att.node_id
            att.hostname = driver.hostname or att.hostname
            if driver.cuda_visible_devices is not None:
                att.gpus = {**(att.gpus or {}), "visible": driver.cuda_visible_devices}
        if info is not None and info.driver_node_id and not att.node_id:
            att.node_id = info.driver_node_id
        # when it started: the driver's own start when the server saw it late (it was down), else now
        started = att.started_at or accounting.start_time(driver, created=att.created_at, now=now)
        if info is not None and info.status == RayJobStatus.RUNNING and att.status != TaskStatus.RUNNING.value:
            att.status = TaskStatus.RUNNING.value
            att.started_at = started
        if out is not None and out.status is not None:
            ended = out.status != TaskStatus.RUNNING
            att.status = out.status.value if ended else TaskStatus.RUNNING.value
            if out.status == TaskStatus.RUNNING:
                att.started_at = started
            if ended:
                if att.started_at is None and driver and driver.started_at:
                    att.started_at = started  # it ran and ended while the server was not looking
                ray_end = info.end_time_ms if info is not None and not out.from_record else None
                close_attempt(s, att, accounting.end_time(ray_end, driver, started=att.started_at, now=now))
                att.exit_code = out.exit_code
                att.termination_reason = out.reason.value if out.reason else None
                att.message = message or out.message

    def _sweep_orphans(self) -> None:
        """Attempts still live in Ray whose task already ended (e.g. canceled mid-submit): stop them."""
        ctx = self.ctx
        with ctx.db.session() as s:
            rows = s.execute(
                select(TaskAttemptModel.submission_id)
                .join(TaskModel, TaskModel.id == TaskAttemptModel.task_id)
                .where(TaskAttemptModel.status.in_(ATTEMPT_LIVE), TaskModel.status.in_(TERMINAL_VALUES))
            ).scalars().all()
        for sid in rows:
            info = ctx.jobs.get(sid)
            if info is not None and info.status in (RayJobStatus.PENDING, RayJobStatus.RUNNING):
                try:
                    ctx.jobs.stop(sid)
                except ClusterUnavailable:
                    raise
                except Exception as exc:  # noqa: BLE001 - one stubborn orphan must not stall the pass
                    log.warning("stopping orphan %s failed: %s", sid, exc)
                continue
            with ctx.db.session() as s:
                att = attempt_by_sid(s, sid)
                if att is not None:
                    att.status = TaskStatus.CANCELED.value if info is None or info.status == RayJobStatus.STOPPED \
                        else info.status.value
                    close_attempt(s, att, accounting.end_time(info.end_time_ms if info is not None else None, None,
                                                              started=att.started_at, now=ctx.now()))
                    att.termination_reason = att.termination_reason or TerminationReason.USER_CANCELED.value
