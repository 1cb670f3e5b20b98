"""SubmitQueuedTasks: order the queue, fit it to the cluster, hand what fits to Ray.

Each submission is load → act → apply (ARCHITECTURE §5.4–5): (1) a committed
transaction stores attempt n+1 and its derived ``submission_id``; (2) Ray is called with
no transaction open; (3) a guarded ``switch_task_status`` moves QUEUED → SUBMITTED.
A crash after (1) leaves an unconfirmed attempt that the next pass repairs by asking
Ray for that id (:func:`confirm_unconfirmed`). Only what fits is
submitted — Ray's own queue fails a PENDING job after 900 s and cannot say why it waits.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, or_, select, update
from sqlalchemy.orm import Session

from argus.cluster.types import ClusterUnavailable, JobAlreadyExists, JobInfo, WorkerNode
from argus.core import messages
from argus.core.messages import Message
from argus.core.resources import RESOURCES_KEY, NodeNeed
from argus.core.states import ACTIVE, TaskStatus, TerminationReason
from argus.db.models import SweepModel, TaskAttemptModel, TaskModel, TeamModel, UserModel, utcnow
from argus.errors import Conflict
from argus.launcher import attempt_record
from argus.scheduler import policy
from argus.scheduler.autoresume import resume_on_retry
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
    node_need,
    owner_teams,
    runtime_env,
    submission_id,
    task_node_need,
    user_of,
)
from argus.scheduler.fairshare import HELD_CHARGE_S, Usage, rate
from argus.scheduler.gpu_holds import GpuHolds
from argus.scheduler.usage import UsageLedger
from argus.services import telemetry
from argus.services.tasks import switch_task_status

FOREIGN_SLACK_S = 60.0  # clock slack between this server and the Ray head


@dataclass(frozen=True)
class Snapshot:
    queued: list[policy.QueuedTask]
    held: list[policy.HeldTask]
    reasons: dict[str, tuple[str | None, str | None]]  # task id → its stored (pending_reason, pending_reason_code)
    user_limits: dict[str, policy.UserLimits] = field(default_factory=dict)


def load_snapshot(ctx: LoopContext) -> Snapshot:
    """The queue and the ledger in one short read transaction."""
    with ctx.db.session() as s:
        queued, reasons = load_queue(s)
        held, user_limits = load_held(s)
    return Snapshot(queued, held, reasons, user_limits)


def queue_fingerprint(s: Session) -> tuple[Any, ...]:
    """(count, newest created_at, sum of priorities) of the QUEUED tasks: read from the index alone.

    Changes whenever the queue's membership does, given the held set alongside (see
    :meth:`SubmitQueuedTasks.run_once`): a task enters QUEUED either new (the newest
    ``created_at``) or back from a held state (the held set changes), and leaves it either held
    (the held set changes) or ended (the count drops). A queued task's plan inputs
    (priority, size, owner) never change while it waits.
    """
    row = s.connection().execute(
        select(func.count(), func.max(TaskModel.created_at), func.sum(TaskModel.priority))
        .where(TaskModel.status == TaskStatus.QUEUED.value)).one()
    return tuple(row)


def load_queue(s: Session) -> tuple[list[policy.QueuedTask], dict[str, tuple[str | None, str | None]]]:
    """Every QUEUED task, only the columns the policy needs (Core rows: no ORM objects for 10 000 rows)."""
    rows = s.connection().execute(
        select(TaskModel.id, TaskModel.user_id, TaskModel.priority, TaskModel.created_at,
               TaskModel.nnodes, TaskModel.n_gpus_per_node, TaskModel.pending_reason, *NEED_COLUMNS, TaskModel.team,
               TaskModel.class_value, TaskModel.priority_class, TaskModel.pending_reason_code, TaskModel.sweep_id)
        .where(TaskModel.status == TaskStatus.QUEUED.value)
    ).all()
    queued = [policy.QueuedTask(tid, str(uid), prio, created, nnodes, gpus,
                                *node_need(entry, nnodes, gpus, cpus, memory), team=team, class_value=value,
                                priority_class=klass, sweep=sweep)
              for tid, uid, prio, created, nnodes, gpus, _, entry, cpus, memory, team, value, klass, _, sweep in rows]
    return queued, {r[0]: (r[6], r[-2]) for r in rows}


# A task's CPUs and memory per node (issue 15), read from its resolved spec without loading the whole JSON.
NEED_COLUMNS = (TaskModel.entry_module, TaskModel.spec_resolved[(RESOURCES_KEY, "cpus")].as_float(),
                TaskModel.spec_resolved[(RESOURCES_KEY, "memory")].as_float())


def load_held(s: Session) -> tuple[list[policy.HeldTask], dict[str, policy.UserLimits]]:
    """The tasks holding resources, and the users with limits of their own (both small)."""
    held_rows = s.execute(
        select(TaskModel.id, TaskModel.user_id, TaskModel.nnodes, TaskModel.n_gpus_per_node,
               TaskAttemptModel.gpus, TaskAttemptModel.node_id, *NEED_COLUMNS, TaskModel.team, TaskModel.sweep_id)
        .outerjoin(TaskAttemptModel, (TaskAttemptModel.task_id == TaskModel.id)
                   & (TaskAttemptModel.attempt == TaskModel.attempts))
        .where(TaskModel.status.in_([st.value for st in ACTIVE]))
    ).all()
    own_limits = s.execute(  # the few users an admin gave limits of their own
        select(UserModel.id, UserModel.max_gpus, UserModel.max_running_tasks)
        .where(or_(UserModel.max_gpus.is_not(None), UserModel.max_running_tasks.is_not(None)))
    ).all()
    held = []
    for r in held_rows:
        nodes = (r.gpus or {}).get("nodes") if isinstance(r.gpus, dict) else None
        placed = tuple(nodes) if isinstance(nodes, list) and len(nodes) == r.nnodes else None
        if r.n_gpus_per_node == 0:
            placed = (r.node_id,) if r.node_id else ()  # a CPU job's CPUs sit on its driver's node, once known
        cpus, memory = node_need(r[6], r.nnodes, r.n_gpus_per_node, r[7], r[8])
        held.append(policy.HeldTask(r.id, str(r.user_id), r.nnodes, r.n_gpus_per_node, placed, cpus, memory,
                                    r.team, r.sweep_id))
    user_limits = {str(r.id): policy.UserLimits(r.max_gpus, r.max_running_tasks) for r in own_limits}
    return held, user_limits


def load_team_limits(s: Session) -> dict[str, policy.TeamLimits]:
    """Every team's weight and limits (issue 26; a handful of rows)."""
    return {r.name: policy.TeamLimits(r.weight, r.max_gpus, r.max_running_tasks)
            for r in s.execute(select(TeamModel.name, TeamModel.weight, TeamModel.max_gpus,
                                      TeamModel.max_running_tasks))}


def load_sweep_limits(s: Session) -> dict[str, int]:
    """Each running sweep's max_concurrent (issue 38; a handful of rows)."""
    rows = s.execute(select(SweepModel.id, SweepModel.max_concurrent).where(SweepModel.status == "RUNNING"))
    return {r.id: r.max_concurrent for r in rows}


def node_states(nodes: list[WorkerNode], held_back: Mapping[str, int] | None = None) -> list[policy.NodeState]:
    """The policy's view of the nodes; CPUs/memory a node does not advertise (a fake, an old Ray) do not limit.
    ``held_back``: GPUs per node its agent found still in use after their task ended (scheduler/gpu_holds.py)."""
    back = held_back or {}
    return [policy.NodeState(n.node_id, n.alive, n.gpus_total, n.gpus_free,
                             n.cpus_total if "CPU" in n.resources or n.cpus_free is not None else None, n.cpus_free,
                             n.memory_total if "memory" in n.resources or n.memory_free is not None else None,
                             n.memory_free, back.get(n.node_id, 0)) for n in nodes]


def fair_order(usage: dict[str, Usage], held: list[policy.HeldTask], team_usage: dict[str, Usage] | None = None,
               teams: dict[str, policy.TeamLimits] | None = None) -> tuple[tuple[str, bool, bool], ...]:
    """The order of the users' (and teams') fair-share values as :func:`policy.plan` sees them (ties marked).

    The plan depends on usage only through this order, so two passes with the same order (and
    the same other inputs) make the same plan, however the values themselves drifted. Teams are
    compared by usage over weight, and listed apart from users (``team:`` prefix).
    """
    def charge(into: dict[str, Usage], key: str, t: policy.HeldTask) -> None:
        into[key] = into.get(key, Usage()).plus(t.gpus_per_node, rate(t.nnodes, t.gpus_per_node) * HELD_CHARGE_S)

    charged: dict[str, Usage] = dict(usage)
    team_charged: dict[str, Usage] = dict(team_usage or {})
    for t in held:
        charge(charged, t.user, t)
        charge(team_charged, t.team or policy.NO_TEAM, t)
    weights = {name: lim.weight for name, lim in (teams or {}).items()}
    values = sorted((v, user, gpu) for user, u in charged.items() for gpu, v in ((True, u.gpu_s), (False, u.cpu_s)))
    values += sorted((v / weights.get(team, 1.0), f"team:{team}", gpu) for team, u in team_charged.items()
                     for gpu, v in ((True, u.gpu_s), (False, u.cpu_s)))
    return tuple((who, gpu, i > 0 and v == values[i - 1][0]) for i, (v, who, gpu) in enumerate(values))


class SubmitQueuedTasks:
    """The submit loop. A steady pass (nothing changed since the last one) costs O(running tasks).

    Planning 10 000 queued tasks means reading them all and ordering them; doing it every
    tick when nothing changed would redo the same work and get the same answer. So each pass
    first reads what the plan depends on and is cheap to read — the queue's fingerprint (from
    its index), the held tasks, the nodes, the users' own limits and the users' fair-share
    order — and plans only when one of them changed since the last pass that started nothing,
    or at least every ``REPLAN_S`` seconds anyway (a safety net for a change the fingerprint
    could miss). Pending reasons are written only when they change.
    """

    REPLAN_S = 30.0

    def __init__(self, ctx: LoopContext) -> None:
        self.ctx = ctx
        self.usage = UsageLedger(ctx.settings.fairshare_half_life_s)  # rebuilt from the DB after a restart
        self._unchanged: tuple[Any, ...] | None = None  # the inputs of the last pass that started nothing
        self._planned_at = 0.0
        self.plans = 0  # passes that planned (the rest found nothing changed)
        # Unconfirmed attempts (id stored, Ray's answer not seen) come only from a crash (this is a new
        # process: True at start) or from this loop's own submissions; looked for only then.
        self._maybe_unconfirmed = True
        self.gpu_holds = GpuHolds(ctx.settings.root)

    def run_once(self) -> int:
        """One pass; returns how many tasks were handed to Ray."""
        ctx = self.ctx
        error: str | None = None
        nodes: list[WorkerNode] = []
        try:
            if self._maybe_unconfirmed:
                left: list[str] = []
                confirm_unconfirmed(ctx, left=left)
                self._maybe_unconfirmed = bool(left)
            nodes = ctx.inventory.worker_nodes()
        except ClusterUnavailable as exc:
            error = str(exc) or type(exc).__name__
        with ctx.db.session() as s:
            held_back = self.gpu_holds.look(s)  # issue 36: GPUs left busy by an ended task (and their events)
            fingerprint = queue_fingerprint(s)
            if not fingerprint[0]:
                self._unchanged = None
                return 0
            held, user_limits = load_held(s)
            teams = load_team_limits(s)
            sweeps = load_sweep_limits(s)
            usage = self.usage.read(s, ctx.now())
            team_usage = self.usage.teams
            states = node_states(nodes, held_back)
            inputs = (fingerprint, sorted((t.task_id, t.nodes) for t in held), states, sorted(user_limits.items()),
                      sorted(teams.items()), sorted(sweeps.items()), fair_order(usage, held, team_usage, teams), error)
            if inputs == self._unchanged and time.monotonic() - self._planned_at < self.REPLAN_S:
                return 0
            queued, reasons = load_queue(s)
        limits = policy.Limits(ctx.settings.max_running_tasks, ctx.settings.max_running_tasks_per_user,
                               ctx.settings.max_gpus_per_user, user_limits, teams, sweeps)
        plan = policy.plan(queued, held, states, limits, usage=usage, team_usage=team_usage, cluster_error=error)
        self.plans += 1
        self._planned_at = time.monotonic()
        self._unchanged = None if plan.placements else inputs
        self._record_reasons(plan.reasons, reasons)
        submitted = 0
        self._maybe_unconfirmed = self._maybe_unconfirmed or bool(plan.placements)
        for placement in plan.placements:
            outcome = self._submit_one(placement)
            if outcome == "unavailable":
                break
            submitted += outcome == "submitted"
        return submitted

    def wait_all(self, reason: str | Message) -> None:
        """Record one reason for every queued task (Ray down before recovery could run); a plain text has no code."""
        why = reason if isinstance(reason, Message) else Message("", {}, reason)
        snap = load_snapshot(self.ctx)
        self._record_reasons({t.task_id: why for t in snap.queued}, snap.reasons)

    def _record_reasons(self, pending: dict[str, Message],
                        current: dict[str, tuple[str | None, str | None]]) -> None:
        """Write only reasons that changed (a 10 000-task queue must not rewrite every row per tick): the English
        text and, beside it, the message's code and parameters (issue 37; a reason stored before them gets them)."""
        changed = [(tid, why) for tid, why in pending.items() if current.get(tid) != (why.text, why.code or None)]
        if not changed:
            return
        table = TaskModel.__table__
        stmt = (update(table)
                .where(table.c.id == bindparam("tid"), table.c.status == TaskStatus.QUEUED.value)
                .values(pending_reason=bindparam("why"), pending_reason_code=bindparam("code"),
                        pending_reason_params=bindparam("params")))
        with self.ctx.db.session() as s:  # one executemany: Core, no ORM bookkeeping per row
            s.connection().execute(stmt, [{"tid": tid, "why": why.text, "code": why.code or None,
                                           "params": why.params if why.code else None} for tid, why in changed])

    def _set_reason(self, task_id: str, why: Message) -> None:
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
                still = self._previous_attempt_runs(task.id, task.attempts) if task.attempts else None
                if still is not None:
                    if task.pending_reason != still.text:  # once, not on every planning pass
                        log.warning("%s: %s", task.id, still.text)
                    task.pending_reason = still.text
                    task.pending_reason_code, task.pending_reason_params = still.code, still.params
                    return "waiting"
                n = task.attempts + 1
                sid = submission_id(task.id, n)
                res = s.execute(update(TaskModel)
                                .where(TaskModel.id == task.id, TaskModel.status == TaskStatus.QUEUED.value,
                                       TaskModel.attempts == n - 1)
                                .values(attempts=n, submission_id=sid, **_reason(messages.msg("queue.submitting"))))
                if res.rowcount != 1:
                    return "skipped"
                att = TaskAttemptModel(task_id=task.id, attempt=n, submission_id=sid, status=UNCONFIRMED,
                                       gpus=gpus, created_at=ctx.now())
                s.add(att)
                task.attempts = n
                resume_on_retry(ctx, s, task, user_of(s, task), n)  # same transaction: same argv on resubmit
            user = user_of(s, task)
            sid, attempt, created_at = att.submission_id, att.attempt, att.created_at
            argv = driver_argv(ctx, user, task, attempt, owner_teams(s, task))
            task_argv, n_gpus, need = list(task.argv), task.n_gpus_per_node, task_node_need(task)
        # 2. act: no transaction open across the Ray call
        adopted = False
        try:
            ray_submit(ctx, sid, placement.task_id, user, attempt, argv, task_argv, n_gpus, need)
        except JobAlreadyExists:
            adopted = True  # an earlier call reached Ray: adopt that job, never submit twice
            foreign = foreign_job(ctx.jobs.get(sid), created_at)
            if foreign:
                log.warning("%s: %s; the next pass uses a new attempt id", placement.task_id, foreign)
                _abandon(ctx, sid)
                return "skipped"
        except ClusterUnavailable as exc:
            self._set_reason(placement.task_id, messages.msg("queue.ray_unreachable", error=str(exc)))
            return "unavailable"
        except Exception as exc:  # noqa: BLE001 - Ray refused this job: the task cannot run as written
            log.warning("submitting %s failed: %s", sid, exc)
            self._fail(placement.task_id, sid, messages.msg("status.ray_refused", error=str(exc)))
            return "failed"
        # 3. apply with a guarded transition
        said = messages.msg("status.adopted" if adopted else "status.submitted", sid=sid)
        return "submitted" if mark_submitted(ctx, placement.task_id, sid, said) else "lost-race"

    def _previous_attempt_runs(self, task_id: str, previous: int) -> Message | None:
        """Never two live attempts of one task (issue 36): why a retry waits while the previous attempt's driver
        still reports through its record (launcher/attempt_record) — a node Ray called lost but that still runs
        (a network partition), a job Ray forgot — after asking it to stop there; None: nothing runs."""
        record = attempt_record.ask_to_stop(self.ctx.settings.root, task_id, previous, self.ctx.now())
        if not record:
            return None
        return messages.msg("queue.previous_attempt", attempt=previous, host=str(record.get("hostname") or "?"))

    def _fail(self, task_id: str, sid: str, message: Message) -> None:
        with self.ctx.db.session() as s:
            task = s.get(TaskModel, task_id)
            att = attempt_by_sid(s, sid)
            if att is not None:
                att.status, att.termination_reason = "FAILED", TerminationReason.SUBMIT_ERROR
                att.message = message.text
                close_attempt(s, att, self.ctx.now())
            if task is not None and task.status == TaskStatus.QUEUED.value:
                try:
                    switch_task_status(s, task, TaskStatus.FAILED, actor=ACTOR,
                                       reason=TerminationReason.SUBMIT_ERROR, message=message)
                except Conflict:
                    pass


def ray_submit(ctx: LoopContext, sid: str, task_id: str, user: str, attempt: int, argv: list[str],
               task_argv: list[str], n_gpus_per_node: int, need: NodeNeed | None = None) -> None:
    """The one place a Ray job is created: the task's launcher on a worker node, holding the task's share.

    The launcher (``argus.launcher.driver``) reserves the task's whole per-node need in the
    platform's Ray — its GPUs, CPUs and memory (issue 15's ``core.resources``) — so Ray starts
    it only on a node with them free, the node the policy found room on or another with as much,
    and counts them as used for everyone after. Inside its sandbox the task then has exactly
    that share: its GPU device files, and a private Ray cluster of that size (issue 21).
    """
    held = need or NodeNeed()
    ctx.jobs.submit(sid, entrypoint(argv), entrypoint_resources={"worker_node": 1},
                    entrypoint_num_gpus=n_gpus_per_node, entrypoint_num_cpus=held.cpus,
                    entrypoint_memory=held.memory, runtime_env=runtime_env(ctx, user),
                    metadata={"argus_task_id": task_id, "argus_user": user, "argus_attempt": str(attempt)})


def mark_submitted(ctx: LoopContext, task_id: str, sid: str, message: str | Message) -> bool:
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


def confirm_unconfirmed(ctx: LoopContext, *, left: list[str] | None = None) -> int:
    """Adopt unconfirmed attempts that Ray knows; returns how many. Raises ClusterUnavailable.

    ``left`` (when given) receives the ids still unconfirmed: Ray does not know them, and the task's
    next placement submits them under the same id.
    """
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
            adopted += mark_submitted(ctx, task_id, sid, messages.msg("status.adopted_after_restart", sid=sid))
        elif left is not None:
            left.append(sid)
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
        argv = driver_argv(ctx, user, task, att.attempt, owner_teams(s, task))
        task_argv, n_gpus, need = list(task.argv), task.n_gpus_per_node, task_node_need(task)
    log.info("Ray does not know %s of SUBMITTED task %s; submitting it again with the same id", sid, task_id)
    try:
        ray_submit(ctx, sid, task_id, user, att.attempt, argv, task_argv, n_gpus, need)
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


def _reason(why: Message) -> dict[str, Any]:
    """The columns of a pending reason (issue 37): its English text, code and parameters."""
    return {"pending_reason": why.text, "pending_reason_code": why.code, "pending_reason_params": why.params}
