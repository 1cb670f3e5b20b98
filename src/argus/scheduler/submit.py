"""SubmitQueuedTasks: order the queue, fit it to the cluster, hand what fits to Ray.

Each submission is load → act → apply (ARCHITECTURE §5.4–5): (1) a committed
transaction stores attempt n+1 and its derived ``submission_id``; (2) Ray is called with
no transaction open; (3) a guarded ``switch_task_status`` moves QUEUED → SUBMITTED.
A crash after (1) leaves an unconfirmed attempt that the next pass repairs by asking
Ray for that id (:func:`confirm_unconfirmed`). Only what fits is
submitted — Ray's own queue fails a PENDING job after 900 s and cannot say why it waits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import bindparam, or_, select, update

from argus.cluster.types import ClusterUnavailable, JobAlreadyExists, JobInfo, WorkerNode
from argus.core.gpu_binding import driver_gpus
from argus.core.states import ACTIVE, TaskStatus, TerminationReason
from argus.db.models import TaskAttemptModel, TaskModel, UserModel, utcnow
from argus.errors import Conflict
from argus.scheduler import policy
from argus.scheduler.autoresume import resume_after_node_loss
from argus.scheduler.common import (
    ACTOR,
    UNCONFIRMED,
    LoopContext,
    attempt_by_sid,
    close_attempt,
    current_attempt,
    driver_argv,
    entrypoint,
    log,
    runtime_env,
    submission_id,
    user_of,
)
from argus.scheduler.usage import UsageLedger
from argus.services import telemetry
from argus.services.tasks import switch_task_status

FOREIGN_SLACK_S = 60.0  # clock slack between this server and the Ray head


@dataclass(frozen=True)
class Snapshot:
    queued: list[policy.QueuedTask]
    held: list[policy.HeldTask]
    reasons: dict[str, str | None]
    user_limits: dict[str, policy.UserLimits] = field(default_factory=dict)


def load_snapshot(ctx: LoopContext) -> Snapshot:
    """The queue and the ledger in one short read transaction."""
    with ctx.db.session() as s:
        rows = s.execute(
            select(TaskModel.id, TaskModel.user_id, TaskModel.priority, TaskModel.created_at,
                   TaskModel.nnodes, TaskModel.n_gpus_per_node, TaskModel.pending_reason)
            .where(TaskModel.status == TaskStatus.QUEUED.value)
        ).all()
        held_rows = s.execute(
            select(TaskModel.id, TaskModel.user_id, TaskModel.nnodes, TaskModel.n_gpus_per_node,
                   TaskAttemptModel.gpus)
            .outerjoin(TaskAttemptModel, (TaskAttemptModel.task_id == TaskModel.id)
                       & (TaskAttemptModel.attempt == TaskModel.attempts))
            .where(TaskModel.status.in_([st.value for st in ACTIVE]))
        ).all()
        own_limits = s.execute(  # the few users an admin gave limits of their own
            select(UserModel.id, UserModel.max_gpus, UserModel.max_running_tasks)
            .where(or_(UserModel.max_gpus.is_not(None), UserModel.max_running_tasks.is_not(None)))
        ).all()
    queued = [policy.QueuedTask(r.id, str(r.user_id), r.priority, r.created_at, r.nnodes, r.n_gpus_per_node)
              for r in rows]
    held = []
    for r in held_rows:
        nodes = (r.gpus or {}).get("nodes") if isinstance(r.gpus, dict) else None
        placed = tuple(nodes) if isinstance(nodes, list) and len(nodes) == r.nnodes else None
        if r.n_gpus_per_node == 0:
            placed = ()
        held.append(policy.HeldTask(r.id, str(r.user_id), r.nnodes, r.n_gpus_per_node, placed))
    user_limits = {str(r.id): policy.UserLimits(r.max_gpus, r.max_running_tasks) for r in own_limits}
    return Snapshot(queued, held, {r.id: r.pending_reason for r in rows}, user_limits)


def node_states(nodes: list[WorkerNode]) -> list[policy.NodeState]:
    return [policy.NodeState(n.node_id, n.alive, n.gpus_total, n.gpus_free) for n in nodes]


class SubmitQueuedTasks:
    def __init__(self, ctx: LoopContext) -> None:
        self.ctx = ctx
        self.usage = UsageLedger(ctx.settings.fairshare_half_life_s)  # rebuilt from the DB after a restart

    def run_once(self) -> int:
        """One pass; returns how many tasks were handed to Ray."""
        ctx = self.ctx
        error: str | None = None
        nodes: list[WorkerNode] = []
        try:
            confirm_unconfirmed(ctx)
            nodes = ctx.inventory.worker_nodes()
        except ClusterUnavailable as exc:
            error = str(exc) or type(exc).__name__
        snap = load_snapshot(ctx)
        if not snap.queued:
            return 0
        limits = policy.Limits(ctx.settings.max_running_tasks, ctx.settings.max_running_tasks_per_user,
                               ctx.settings.max_gpus_per_user, snap.user_limits)
        with ctx.db.session() as s:
            usage = self.usage.read(s, ctx.now())
        plan = policy.plan(snap.queued, snap.held, node_states(nodes), limits, usage=usage, cluster_error=error)
        self._record_reasons(plan.pending, snap.reasons)
        submitted = 0
        for placement in plan.placements:
            outcome = self._submit_one(placement)
            if outcome == "unavailable":
                break
            submitted += outcome == "submitted"
        return submitted

    def wait_all(self, reason: str) -> None:
        """Record one reason for every queued task (Ray down before recovery could run)."""
        snap = load_snapshot(self.ctx)
        self._record_reasons({t.task_id: reason for t in snap.queued}, snap.reasons)

    def _record_reasons(self, pending: dict[str, str], current: dict[str, str | None]) -> None:
        """Write only reasons that changed (a 10 000-task queue must not rewrite every row per tick)."""
        changed = [(tid, why) for tid, why in pending.items() if current.get(tid) != why]
        if not changed:
            return
        table = TaskModel.__table__
        stmt = (update(table)
                .where(table.c.id == bindparam("tid"), table.c.status == TaskStatus.QUEUED.value)
                .values(pending_reason=bindparam("why")))
        with self.ctx.db.session() as s:  # one executemany: Core, no ORM bookkeeping per row
            s.connection().execute(stmt, [{"tid": tid, "why": why} for tid, why in changed])

    def _set_reason(self, task_id: str, why: str) -> None:
        self._record_reasons({task_id: why}, {})

    def _submit_one(self, placement: policy.Placement) -> str:
        ctx = self.ctx
        # 1. load + store the attempt and its submission id, committed before Ray is called
        with ctx.db.session() as s:
            task = s.get(TaskModel, placement.task_id)
            if task is None or task.status != TaskStatus.QUEUED.value:
                return "skipped"
            att = current_attempt(s, task)
            gpus = {"per_node": task.n_gpus_per_node, "nodes": list(placement.nodes)}
            if att is not None and att.status == UNCONFIRMED:
                att.gpus = gpus  # Ray never confirmed this id: reuse it (safe, never a second job)
            else:
                n = task.attempts + 1
                sid = submission_id(task.id, n)
                res = s.execute(update(TaskModel)
                                .where(TaskModel.id == task.id, TaskModel.status == TaskStatus.QUEUED.value,
                                       TaskModel.attempts == n - 1)
                                .values(attempts=n, submission_id=sid, pending_reason="submitting to Ray"))
                if res.rowcount != 1:
                    return "skipped"
                att = TaskAttemptModel(task_id=task.id, attempt=n, submission_id=sid, status=UNCONFIRMED,
                                       gpus=gpus, created_at=ctx.now())
                s.add(att)
                task.attempts = n
                resume_after_node_loss(ctx, s, task, user_of(s, task), n)  # same transaction: same argv on resubmit
            user = user_of(s, task)
            sid, attempt, created_at = att.submission_id, att.attempt, att.created_at
            argv = driver_argv(ctx, user, task, attempt)
            task_argv, n_gpus = list(task.argv), task.n_gpus_per_node
        # 2. act: no transaction open across the Ray call
        adopted = False
        try:
            ray_submit(ctx, sid, placement.task_id, user, attempt, argv, task_argv, n_gpus)
        except JobAlreadyExists:
            adopted = True  # an earlier call reached Ray: adopt that job, never submit twice
            foreign = foreign_job(ctx.jobs.get(sid), created_at)
            if foreign:
                log.warning("%s: %s; the next pass uses a new attempt id", placement.task_id, foreign)
                _abandon(ctx, sid)
                return "skipped"
        except ClusterUnavailable as exc:
            self._set_reason(placement.task_id, f"Ray cluster unreachable: {exc}")
            return "unavailable"
        except Exception as exc:  # noqa: BLE001 - Ray refused this job: the task cannot run as written
            log.warning("submitting %s failed: %s", sid, exc)
            self._fail(placement.task_id, sid, f"Ray refused the job: {exc}")
            return "failed"
        # 3. apply with a guarded transition
        msg = f"{'adopted' if adopted else 'submitted'} Ray job {sid}"
        return "submitted" if mark_submitted(ctx, placement.task_id, sid, msg) else "lost-race"

    def _fail(self, task_id: str, sid: str, message: str) -> None:
        with self.ctx.db.session() as s:
            task = s.get(TaskModel, task_id)
            att = attempt_by_sid(s, sid)
            if att is not None:
                att.status, att.termination_reason, att.message = "FAILED", TerminationReason.SUBMIT_ERROR, message
                close_attempt(s, att, self.ctx.now())
            if task is not None and task.status == TaskStatus.QUEUED.value:
                try:
                    switch_task_status(s, task, TaskStatus.FAILED, actor=ACTOR,
                                       reason=TerminationReason.SUBMIT_ERROR, message=message)
                except Conflict:
                    pass


def ray_submit(ctx: LoopContext, sid: str, task_id: str, user: str, attempt: int, argv: list[str],
               task_argv: list[str], n_gpus_per_node: int) -> None:
    """The one place a Ray job is created: driver on a worker node, env for the user, and the GPUs
    reserved for the entry point when it uses them itself (core.gpu_binding)."""
    ctx.jobs.submit(sid, entrypoint(argv), entrypoint_resources={"worker_node": 1},
                    entrypoint_num_gpus=driver_gpus(task_argv, n_gpus_per_node),
                    runtime_env=runtime_env(ctx, user),
                    metadata={"argus_task_id": task_id, "argus_user": user, "argus_attempt": str(attempt)})


def mark_submitted(ctx: LoopContext, task_id: str, sid: str, message: str) -> bool:
    """QUEUED → SUBMITTED for the attempt ``sid``; if someone else won (cancel), stop the orphan job."""
    with ctx.db.session() as s:
        task = s.get(TaskModel, task_id)
        att = attempt_by_sid(s, sid)
        ok = task is not None and task.submission_id == sid and task.status == TaskStatus.QUEUED.value
        if ok:
            try:
                switch_task_status(s, task, TaskStatus.SUBMITTED, actor=ACTOR, message=message)
            except Conflict:
                ok = False
        if ok and att is not None:
            att.status = TaskStatus.SUBMITTED.value
        first_wait = (task.workload, (utcnow() - task.created_at).total_seconds()) if ok and task.attempts == 1 else None
    if first_wait is not None:  # committed: a first submission ends the queue wait (retries are not waits)
        telemetry.observe_queue_wait(*first_wait)
    if not ok:
        # Canceled (or otherwise moved) while we talked to Ray: the monitor's orphan sweep marks the
        # attempt once Ray confirms the stop; stop it now so it never runs unattended.
        log.info("task %s changed while %s was submitted; stopping that job", task_id, sid)
        try:
            ctx.jobs.stop(sid)
        except ClusterUnavailable:
            pass
    return ok


def confirm_unconfirmed(ctx: LoopContext) -> int:
    """Adopt unconfirmed attempts that Ray knows; returns how many. Raises ClusterUnavailable."""
    with ctx.db.session() as s:
        rows = s.execute(
            select(TaskModel.id, TaskAttemptModel.submission_id, TaskAttemptModel.created_at)
            .join(TaskAttemptModel, (TaskAttemptModel.task_id == TaskModel.id)
                  & (TaskAttemptModel.attempt == TaskModel.attempts))
            .where(TaskModel.status == TaskStatus.QUEUED.value, TaskAttemptModel.status == UNCONFIRMED)
        ).all()
    adopted = 0
    for task_id, sid, created_at in rows:
        info = ctx.jobs.get(sid)
        if info is not None and foreign_job(info, created_at):
            log.warning("Ray job %s predates its attempt row: not adopting it; %s will get a new attempt",
                        sid, task_id)
            _abandon(ctx, sid)
        elif info is not None:
            log.info("adopting Ray job %s for %s (stored before a crash or a lost reply)", sid, task_id)
            adopted += mark_submitted(ctx, task_id, sid, f"adopted Ray job {sid} after a restart")
    return adopted


def resubmit_same_id(ctx: LoopContext, task_id: str, sid: str) -> None:
    """Submit a SUBMITTED task's job again under the SAME id because Ray does not know it.

    Safe by construction: Ray keeps caller-chosen ids, so if an earlier call did arrive the
    answer is JobAlreadyExists and nothing runs twice.
    """
    with ctx.db.session() as s:
        task = s.get(TaskModel, task_id)
        att = attempt_by_sid(s, sid)
        if task is None or att is None or task.submission_id != sid or task.status != TaskStatus.SUBMITTED.value:
            return
        user = user_of(s, task)
        argv = driver_argv(ctx, user, task, att.attempt)
        task_argv, n_gpus = list(task.argv), task.n_gpus_per_node
    log.info("Ray does not know %s of SUBMITTED task %s; submitting it again with the same id", sid, task_id)
    try:
        ray_submit(ctx, sid, task_id, user, att.attempt, argv, task_argv, n_gpus)
    except JobAlreadyExists:
        pass


def foreign_job(info: JobInfo | None, attempt_created: datetime) -> str | None:
    """Why a Ray job with our submission id is NOT ours, or None.

    Ids are derived from readable task ids, so a second Argus database pointed at the same
    long-lived Ray cluster (or a wiped state dir) can meet an old job with the same id. A
    job Ray started well before this attempt row existed cannot be this attempt's.
    """
    if info is None or info.start_time_ms is None:
        return None
    started = info.start_time_ms / 1000
    if started < attempt_created.timestamp() - FOREIGN_SLACK_S:
        return (f"Ray already has an older job {info.submission_id} (another Argus database on this Ray "
                f"cluster?); not adopting it")
    return None


def _abandon(ctx: LoopContext, sid: str) -> None:
    """Mark an unconfirmed attempt as never run so the next pass creates a fresh attempt id."""
    with ctx.db.session() as s:
        att = attempt_by_sid(s, sid)
        if att is not None and att.status == UNCONFIRMED:
            att.status, att.termination_reason = "FAILED", TerminationReason.SUBMIT_ERROR.value
            att.message = "submission id already used by another Ray job"
            close_attempt(s, att, ctx.now())
