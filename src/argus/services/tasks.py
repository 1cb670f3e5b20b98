"""Task use cases: submit (admission), read, list, cancel, and the one status writer.

The API records intent here and wakes the scheduler; nothing in this module
talks to Ray. ``switch_task_status`` is the only code that writes
``tasks.status``: it checks the transition table, fences with
``WHERE status = <expected>`` so two actors never both win, stamps times and
writes the timeline event in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, bindparam, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from argus.core import evaluate_every
from argus.core.admission import (
    AdmissionPolicy,
    Admitted,
    CheckOutcome,
    EnvChoices,
    SpecCheck,
    admit,
    resolved_view,
    scan_invalid_spec,
)
from argus.core.builders import (
    PathView,
    basic_overrides,
    build_advanced_argv,
    build_basic_argv,
    display_command,
)
from argus.core.example_paths import fold_example_paths
from argus.core.messages import Message, msg, text_of
from argus.core.problems import merge_problems, shown, shown_text
from argus.core.resources import reserved_gpus
from argus.core.spec_lines import with_lines
from argus.core.states import TERMINAL, TaskStatus, TerminationReason, can_transition
from argus.core.taskspec import AdvancedTaskSpec, BasicTaskSpec, load_spec_document, parse_taskspec
from argus.db.models import (
    IdCounterModel,
    PipelineModel,
    SweepModel,
    TaskAttemptModel,
    TaskEventModel,
    TaskModel,
    UserModel,
    utcnow,
)
from argus.errors import ClientError, Conflict, FieldError, Forbidden, NotFound
from argus.services import audit, notifications, priority_classes, task_list, teams
from argus.services.principal import Principal

VALIDATION_TASK_ID = "validation"
DRY_RUN_TASK_ID = "<task-id>"  # what a dry run's preview of a basic command shows where the id will go


class StaleTask(Conflict):
    """Another actor changed the task first; reload and decide again."""


@dataclass
class Submitted:
    task: TaskModel
    warnings: list[str]
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class DryRun:
    """What submitting would do (``POST /tasks?dry_run=true``): the same verdict, nothing stored."""

    warnings: list[str]
    info: dict[str, Any]
    resolved: dict[str, Any]
    command_expanded: str | None


@dataclass
class Checked:
    """A spec that passed every check (verl validation included) and may be queued; nothing stored yet."""

    spec: AdvancedTaskSpec | BasicTaskSpec
    verdict: Admitted
    body: str
    warnings: list[str]
    info: dict[str, Any]


@dataclass(frozen=True)
class Origin:
    """Where a task comes from: the task whose checkpoint it resumes (issue 15) or evaluates (issue 38), the
    sweep it is a trial of (issue 38). Shown on the task (and on the other task)."""

    resumed_from: str | None = None
    evaluates_task: str | None = None
    evaluates_step: int | None = None
    sweep_id: str | None = None  # a sweep's trial (issue 38): its sweep, number and parameter values
    sweep_trial: int | None = None
    sweep_params: dict[str, Any] | None = None
    pipeline_id: str | None = None  # a pipeline's step (issue 38): its pipeline and the step's name
    pipeline_step: str | None = None


def submit_task(
    session: Session,
    principal: Principal,
    body: str,
    *,
    policy: AdmissionPolicy,
    content_type: str | None = None,
    max_bytes: int = 256 * 1024,
    checks: tuple[SpecCheck, ...] = (),
    origin: Origin | None = None,
) -> Submitted:
    """Admit a spec and queue it, or raise ClientError listing every problem (with YAML lines).

    The two halves are also callable apart: ``check_spec`` (every check, verl validation included,
    no database), then ``queue_task`` — the API checks outside the database's write lock and queues
    inside it — or ``preview`` for a dry run."""
    checked = check_spec(principal, body, policy=policy, content_type=content_type, max_bytes=max_bytes,
                         checks=checks)
    return queue_task(session, principal, checked, policy=policy, origin=origin)


def policy_for(session: Session, principal: Principal, policy: AdmissionPolicy) -> AdmissionPolicy:
    """``policy`` as it applies to ``principal``: their teams' folders count as their own files (issue 26).
    Read at each submit, so joining or leaving a team takes effect at once."""
    member_of = [name for name, _role, _default in teams.teams_of(session, principal.id)]
    return replace(policy, layout=policy.layout.with_teams(member_of)) if member_of else policy


def check_spec(principal: Principal, body: str, *, policy: AdmissionPolicy, content_type: str | None = None,
               max_bytes: int = 256 * 1024, checks: tuple[SpecCheck, ...] = (),
               alternatives: EnvChoices | None = None) -> Checked:
    """Every check of a submit, no database: raise ClientError listing every problem (with YAML lines).
    ``alternatives``: the other environments a spec refused by its environment's verl is tried in."""
    try:
        return _check(principal, body, policy, content_type, max_bytes, checks, alternatives)
    except ClientError as exc:
        exc.errors = with_lines(exc.errors, body, content_type)
        raise


def _check(principal: Principal, body: str, policy: AdmissionPolicy, content_type: str | None, max_bytes: int,
           checks: tuple[SpecCheck, ...], alternatives: EnvChoices | None = None) -> Checked:
    if len(body.encode()) > max_bytes:
        raise _rejected([FieldError("(body)", None, f"must be at most {max_bytes} bytes")], "size",
                        "task spec too large")
    doc = load_spec_document(body, content_type)
    if isinstance(doc, list):
        raise _rejected(doc, "syntax", "task spec is not valid YAML/JSON")
    spec = parse_taskspec(doc)
    if isinstance(spec, list):
        raise _rejected(spec + scan_invalid_spec(doc, principal.name, policy), "schema")
    verdict = admit(spec, principal.name, policy)
    refused: list[FieldError] = []
    if not isinstance(verdict, Admitted):
        if verdict.partial is None or not checks:
            raise _rejected(shown_errors(verdict.errors, principal.name, policy), "admission")
        # the deeper checks still judge the rest, so the answer lists every problem at once
        refused, verdict = verdict.errors, verdict.partial
    warnings = list(verdict.warnings)
    info: dict[str, Any] = {}
    errors: list[FieldError] = list(refused)
    template = (
        basic_overrides(spec, PathView.real(policy.layout, principal.name, VALIDATION_TASK_ID), VALIDATION_TASK_ID)
        if isinstance(spec, BasicTaskSpec)
        else []
    )
    resolved = False
    for check in checks:
        outcome: CheckOutcome = check(verdict, principal.name, template)
        errors = merge_problems(errors, outcome.errors)
        warnings.extend(outcome.warnings)
        info.update(outcome.info)
        resolved = resolved or outcome.paths_resolved
        if outcome.command_expanded is not None:
            verdict.command_expanded = outcome.command_expanded
    if not resolved:  # no check resolved the config: interpolations into paths cannot be judged
        errors.extend(verdict.unresolved)
    if errors and not refused and alternatives is not None and isinstance(spec, AdvancedTaskSpec):
        elsewhere = accepted_elsewhere(spec, principal.name, policy, checks, alternatives)
        errors = [elsewhere, *errors] if elsewhere is not None else errors
    if errors:
        exc = _rejected(fold_example_paths(shown_errors(errors, principal.name, policy)),
                        "admission" if refused or not checks else "verl")
        exc.warnings = shown_warnings(warnings, principal.name, policy)
        raise exc
    return Checked(spec=spec, verdict=verdict, body=body, warnings=shown_warnings(warnings, principal.name, policy),
                   info=info)


def accepted_elsewhere(spec: AdvancedTaskSpec, user: str, policy: AdmissionPolicy, checks: tuple[SpecCheck, ...],
                       alternatives: EnvChoices) -> FieldError | None:
    """The first problem of an answer when another environment's verl accepts the spec as written (issue 35): a
    script for an older verl is pointed at the environment that runs it unchanged, before the edits that would
    port it. Each other environment's checks run in full (its own validator), stopping at its first problem."""
    for name, verl in alternatives(spec.env, user):
        verdict = admit(spec.model_copy(update={"env": name}), user, policy)
        if not isinstance(verdict, Admitted):
            return None  # a problem of the spec itself: no environment takes it as written
        if not any(check(verdict, user, []).errors for check in checks):
            current = spec.env or policy.default_env
            return FieldError("env", current, f"accepted as written by verl {verl} in environment {name!r}: add "
                              f"`env: {name}` to run it unchanged there; the problems below are what {current!r} "
                              "would need changed", fix=None)
    return None


@dataclass(frozen=True)
class Charges:
    """Whom a task is charged to and how it is ordered across users (issue 26): its team and priority class."""

    team: str | None
    priority_class: str | None
    class_value: int

    def info(self) -> dict[str, Any]:
        """What a dry run adds to its ``info``: the team and class a submit would record."""
        return {"team": self.team, "priority_class": self.priority_class}


def charges(session: Session, principal: Principal, checked: Checked) -> Charges:
    """The spec's ``team`` (or the user's default team) and ``priority_class``, each checked; every refusal
    names its field, both at once (a dry run reports them as a submit would)."""
    refused: list[ClientError] = []
    team = klass = None
    value = 0
    try:
        team = teams.charged_team(session, principal, checked.spec.team)
    except ClientError as exc:
        refused.append(exc)
    try:
        klass, value = priority_classes.resolve(session, principal, checked.spec.priority_class)
    except ClientError as exc:
        refused.append(exc)
    if refused:
        exc = refused[0] if len(refused) == 1 else ClientError("task refused", code="invalid_spec",
                                                               errors=[e for r in refused for e in r.errors])
        exc.errors = with_lines(exc.errors, checked.body, None)  # the line of `team:` / `priority_class:`
        raise exc
    return Charges(team, klass, value)


def queue_task(session: Session, principal: Principal, checked: Checked, *, policy: AdmissionPolicy,
               origin: Origin | None = None) -> Submitted:
    """Give a checked spec its id and queue it: the task row and its first event, in the caller's transaction.

    Two prepared Core inserts rather than the ORM's unit of work (a third of a submit's CPU went to the
    flush); ``Submitted.task`` is a transient copy of the row for the caller to read."""
    spec, verdict = checked.spec, checked.verdict
    charge = charges(session, principal, checked)  # refused here: no id is spent on it
    task_id = allocate_id(session, spec.workload)
    if isinstance(spec, AdvancedTaskSpec):
        assert verdict.command_expanded is not None
        argv = build_advanced_argv(verdict.command_expanded)
        command_raw = spec.command
    else:
        argv = build_basic_argv(spec, PathView.real(policy.layout, principal.name, task_id), task_id)
        command_raw = display_command(build_basic_argv(spec, PathView.as_written(task_id), task_id))
    now = utcnow()
    row = {c: None for c in _TASK_COLUMNS} | {
        "id": task_id,
        "user_id": principal.id,
        "name": spec.name,
        "kind": spec.kind,
        "workload": spec.workload,
        "status": TaskStatus.QUEUED.value,
        "priority": spec.priority,
        "nnodes": spec.nnodes,
        "n_gpus_per_node": reserved_gpus(spec.n_gpus_per_node, spec.device),  # device cpu: none reserved
        "spec_raw": checked.body,
        "spec_resolved": resolved_view(verdict, principal.name, policy),
        "command_raw": command_raw,
        "command_expanded": display_command(argv),
        "argv": argv,
        "entry_module": verdict.entry_module,
        "warnings": checked.warnings,
        "attempts": 0,
        "created_at": now,
        "updated_at": now,
        "resumed_from": origin.resumed_from if origin else None,
        "evaluates_task": origin.evaluates_task if origin else None,
        "evaluates_step": origin.evaluates_step if origin else None,
        "sweep_id": origin.sweep_id if origin else None,
        "sweep_trial": origin.sweep_trial if origin else None,
        "sweep_params": origin.sweep_params if origin else None,
        "pipeline_id": origin.pipeline_id if origin else None,
        "pipeline_step": origin.pipeline_step if origin else None,
        "team": charge.team,
        "priority_class": charge.priority_class,
        "class_value": charge.class_value,
        **_evaluate_every(spec, argv, origin),
    }
    conn = session.connection()
    conn.execute(_INSERT_TASK, row)
    conn.execute(_INSERT_EVENT, {"task_id": task_id, "at": now, "from_status": None,
                                 "to_status": TaskStatus.QUEUED.value, "reason": None, "message": _ACCEPTED.text,
                                 "message_code": _ACCEPTED.code, "message_params": _ACCEPTED.params,
                                 "actor": principal.name})
    return Submitted(task=TaskModel(**row), warnings=checked.warnings, info=checked.info)


def _evaluate_every(spec: AdvancedTaskSpec | BasicTaskSpec, argv: list[str], origin: Origin | None) -> dict[str, Any]:
    """The scheduler's columns for a spec's ``evaluate_checkpoints`` (core.evaluate_every): watched from the start,
    its mark at the step it resumes from (the steps up to there are the resumed run's). An evaluation is never
    watched, whatever its spec copied from its source: it writes no checkpoint, and must not evaluate itself."""
    option = None if origin is not None and origin.evaluates_task else spec.evaluate_checkpoints
    return {"evaluate_checkpoints": option, "evaluate_watching": option is not None,
            "evaluated_through": evaluate_every.first_step_after(argv) if option is not None else None}


_TASK_COLUMNS = tuple(c.key for c in TaskModel.__table__.columns)
_INSERT_TASK = TaskModel.__table__.insert()
_INSERT_EVENT = TaskEventModel.__table__.insert()
_ACCEPTED = msg("status.accepted")  # a new task's first event (issue 37: coded), built once: the submit path is hot


def preview(checked: Checked, principal: Principal, policy: AdmissionPolicy) -> DryRun:
    """What queueing ``checked`` would store, as a dry run shows it: the same verdict, nothing written, no
    id taken. It reveals nothing a submit would not: the same errors, and the resolved spec a submit
    shows at ``GET /tasks/{id}/spec``."""
    spec, verdict = checked.spec, checked.verdict
    if isinstance(spec, AdvancedTaskSpec):
        assert verdict.command_expanded is not None
        argv = build_advanced_argv(verdict.command_expanded)
    else:
        argv = build_basic_argv(spec, PathView.real(policy.layout, principal.name, DRY_RUN_TASK_ID), DRY_RUN_TASK_ID)
    return DryRun(warnings=checked.warnings, info=checked.info,
                  resolved=resolved_view(verdict, principal.name, policy),
                  command_expanded=display_command(argv))


REJECTION_STAGES = ("size", "syntax", "schema", "admission", "verl")


def shown_errors(errors: list[FieldError], user: str, policy: AdmissionPolicy) -> list[FieldError]:
    """Errors as the user may see them: paths as they write them, none of the server's folders."""
    return shown(errors, user, policy.layout, policy.hidden)


def shown_warnings(warnings: list[str], user: str, policy: AdmissionPolicy) -> list[str]:
    return [shown_text(w, user, policy.layout, policy.hidden) for w in warnings]


def _rejected(errors: list[FieldError], stage: str, message: str | None = None) -> ClientError:
    """The 400 for a refused spec; ``stage`` (one of REJECTION_STAGES) is where it was refused, for the
    ``argus_admission_rejections_total{reason}`` metric (a small fixed label set, not the messages)."""
    n = len(errors)
    exc = ClientError(message or f"task spec rejected: {n} problem{'s' if n != 1 else ''}", code="invalid_spec",
                      errors=errors)
    exc.stage = stage  # type: ignore[attr-defined]
    return exc


def allocate_id(session: Session, workload: str) -> str:
    """Readable ids ``<workload>-<yyyymmdd>-<nnnn>`` from a per-day counter row."""
    day = datetime.now(UTC).strftime("%Y%m%d")
    for _ in range(5):
        value = session.connection().execute(_NEXT_ID, {"the_day": day}).scalar()
        if value is not None:
            return f"{workload}-{day}-{value - 1:04d}"
        try:
            with session.begin_nested():
                session.add(IdCounterModel(day=day, next_value=2))
            return f"{workload}-{day}-0001"
        except IntegrityError:
            continue
    raise Conflict("could not allocate a task id; retry", code="id_conflict")


_COUNTERS = IdCounterModel.__table__
# built once (SQLAlchemy then reuses its compiled form): Core, not the ORM's bulk update, half the CPU
_NEXT_ID = (update(_COUNTERS).where(_COUNTERS.c.day == bindparam("the_day"))
            .values(next_value=_COUNTERS.c.next_value + 1).returning(_COUNTERS.c.next_value))


# ---------------------------------------------------------------- reads


def get_task(session: Session, principal: Principal, task_id: str, *, team_read: bool = False) -> TaskModel:
    """Another user's task is NotFound (404), never Forbidden: no existence leak.

    With ``team_read`` — the read-only views: the task, its spec, events, logs, metrics, resources,
    checkpoints, compare — a task charged to a team the principal is in is theirs to see too (issue 26).
    Everything that changes a task or acts as its owner leaves it False."""
    task = session.get(TaskModel, task_id)
    if task is None or (task.user_id != principal.id and not principal.is_admin and not (
            team_read and task.team and teams.role_in(session, principal.id, task.team) is not None)):
        raise NotFound(f"no task {task_id!r}", code="task_not_found")
    return task



def own_task(session: Session, principal: Principal, task_id: str, what: str) -> TaskModel:
    """The principal's own task, to make a new task from (resume, export, evaluate): an admin sees every task,
    but a task made from another user's would be the admin's, in the admin's home — so it is NotFound."""
    task = get_task(session, principal, task_id)
    if task.user_id != principal.id:
        raise NotFound(f"no task {task_id!r} of yours to {what}", code="task_not_found")
    return task



def stored_spec(task: TaskModel) -> dict[str, Any]:
    """The spec document a task was submitted with, to make a new task from (resume, evaluate). It was accepted
    once; a later parser change that cannot read it is a Conflict, not a crash."""
    doc = load_spec_document(task.spec_raw, None)
    if not isinstance(doc, dict):
        raise Conflict(f"task {task.id}'s spec can no longer be read", code="spec_unreadable")
    return doc


def owned_row(session: Session, principal: Principal, model: type[Any], row_id: str, what: str) -> Any:
    """A sweep or pipeline (any row with ``id`` and ``user_id``) the principal owns, or any for an admin; another
    user's is NotFound (``<what>_not_found``), never Forbidden: no existence leak."""
    row = session.get(model, row_id)
    if row is None or (row.user_id != principal.id and not principal.is_admin):
        raise NotFound(f"no {what} {row_id!r}", code=f"{what}_not_found")
    return row


def owned_rows(session: Session, principal: Principal, model: type[Any], *, limit: int = 100) -> list[Any]:
    """The principal's rows of ``model`` (an admin's: everyone's), newest first."""
    query = select(model).order_by(model.created_at.desc(), model.id.desc()).limit(limit)
    if not principal.is_admin:
        query = query.where(model.user_id == principal.id)
    return list(session.scalars(query))


SUMMARY_COLUMNS = (TaskModel.id, TaskModel.user_id, TaskModel.name, TaskModel.kind, TaskModel.workload,
                   TaskModel.status, TaskModel.priority, TaskModel.nnodes, TaskModel.n_gpus_per_node,
                   TaskModel.termination_reason, TaskModel.status_message, TaskModel.status_message_code,
                   TaskModel.status_message_params, TaskModel.pending_reason, TaskModel.pending_reason_code,
                   TaskModel.pending_reason_params,
                   TaskModel.created_at, TaskModel.started_at, TaskModel.finished_at)


def list_tasks(
    session: Session,
    principal: Principal,
    *,
    status: list[str] | None = None,
    workload: str | None = None,
    user: str | None = None,
    search: str | None = None,
    limit: int = 50,
    offset: int = 0,
    sort: str | None = None,
    team: str | None = None,
) -> tuple[list[Row[Any]], int]:
    """A page of task summaries (rows with the ``SUMMARY_COLUMNS`` and ``owner``, the user's name), newest
    first unless ``sort`` names another column (``services/task_list.py``), and how many tasks match.

    Plain rows, not ORM objects: the spec, command and argv columns (kilobytes each, JSON to parse) stay
    unread, and 50 rows cost no identity-map bookkeeping (a fifth of a page's CPU went to it).

    ``team``: the tasks charged to that team, every member's — for its members and admins (issue 26)."""
    order = task_list.order_by(sort, session.get_bind().dialect.name)  # a bad column: 400 before any query
    q = select(*SUMMARY_COLUMNS, TaskModel.attempts, UserModel.name.label("owner")).join(
        UserModel, UserModel.id == TaskModel.user_id)
    cq = select(func.count()).select_from(TaskModel)
    conds = []
    if team is not None:
        if not principal.is_admin and teams.role_in(session, principal.id, team) is None:
            raise NotFound(f"no team named {team!r}", code="team_not_found",
                           errors=[FieldError("team", team, "name one of your teams (argus team list)")])
        conds.append(TaskModel.team == team)
    if not principal.is_admin and team is None:
        conds.append(TaskModel.user_id == principal.id)
    elif user:
        conds.append(TaskModel.user_id == select(UserModel.id).where(UserModel.name == user).scalar_subquery())
    if status:
        bad = [s for s in status if s not in TaskStatus.__members__]
        if bad:
            raise ClientError("bad filter", code="invalid_filter",
                              errors=[FieldError("status", bad[0], f"must be one of {', '.join(TaskStatus)}")])
        conds.append(TaskModel.status.in_(status))
    if workload:
        conds.append(TaskModel.workload == workload)
    if search and search.strip():
        # a task id by its prefix (the primary key's index), or any part of the name, case-insensitive
        needle = search.strip().lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        conds.append(or_(TaskModel.id.like(f"{needle}%", escape="\\"),
                         func.lower(TaskModel.name).like(f"%{needle}%", escape="\\")))
    for c in conds:
        q = q.where(c)
        cq = cq.where(c)
    rows = session.execute(
        q.order_by(*order).limit(limit).offset(offset)
    ).all()
    total = session.scalar(cq) or 0
    return list(rows), total


def list_task_events(session: Session, principal: Principal, task_id: str) -> list[TaskEventModel]:
    get_task(session, principal, task_id, team_read=True)
    return list(session.scalars(select(TaskEventModel).where(TaskEventModel.task_id == task_id).order_by(TaskEventModel.id)))


def list_task_attempts(session: Session, task_id: str) -> list[TaskAttemptModel]:
    return list(
        session.scalars(select(TaskAttemptModel).where(TaskAttemptModel.task_id == task_id).order_by(TaskAttemptModel.attempt))
    )


def user_name_of(session: Session, task: TaskModel | SweepModel | PipelineModel) -> str:
    """The name of the user who owns a task (or a sweep, a pipeline)."""
    name = session.scalar(select(UserModel.name).where(UserModel.id == task.user_id))
    assert name is not None
    return name


# ---------------------------------------------------------------- writes


def may_cancel(session: Session, principal: Principal, task: TaskModel) -> bool:
    """Whether ``principal`` may cancel ``task`` at all: its owner, an admin, or an admin of the team it is
    charged to (the rule ``cancel_task`` applies; the task's answer sends it as ``can_cancel``)."""
    return task.user_id == principal.id or principal.is_admin or \
        teams.role_in(session, principal.id, task.team or "") is teams.TeamRole.ADMIN


def can_cancel_now(session: Session, principal: Principal, task: TaskModel) -> bool:
    """What a page may offer: ``may_cancel``, and the task has neither ended nor begun to stop."""
    return task.status not in {s.value for s in (*TERMINAL, TaskStatus.CANCELING)} and \
        may_cancel(session, principal, task)


def cancel_task(session: Session, principal: Principal, task_id: str) -> TaskModel:
    """QUEUED → CANCELED now; SUBMITTED/RUNNING → CANCELING (the cancel loop stops Ray). Idempotent.

    The owner, an admin, or an admin of the team the task is charged to may cancel it; a plain member of
    that team sees it but is told only its team's admins may (issue 26)."""
    task = get_task(session, principal, task_id, team_read=True)
    if not may_cancel(session, principal, task):
        raise Forbidden(f"only the owner and the admins of team {task.team!r} may cancel {task_id}",
                        code="forbidden")
    status = TaskStatus(task.status)
    if status in TERMINAL and status != TaskStatus.CANCELED:
        raise Conflict(f"task {task_id} already ended with {status}", code="task_finished")
    if not request_stop(session, task, reason=TerminationReason.USER_CANCELED,
                        message=msg("status.canceled_by", user=principal.name), actor=principal.name):
        return task
    if task.user_id != principal.id:  # an admin stopping someone's task: the owner may ask who
        audit.record(session, actor=principal.name, action=audit.TASK_CANCELED_BY_OTHER, target=task.id,
                     detail={"owner": user_name_of(session, task), "status_was": status.value})
    return task


def request_stop(session: Session, task: TaskModel, *, reason: TerminationReason, message: str | Message,
                 actor: str) -> bool:
    """Stop a task for ``reason``: QUEUED → CANCELED now; SUBMITTED/RUNNING → CANCELING (the cancel loop stops its
    Ray job and ends it CANCELED with this reason). False when it has ended or is already being stopped."""
    status = TaskStatus(task.status)
    if status in TERMINAL or status == TaskStatus.CANCELING:
        return False
    new = TaskStatus.CANCELED if status == TaskStatus.QUEUED else TaskStatus.CANCELING
    switch_task_status(session, task, new, reason=reason, message=message, actor=actor)
    return True


def stop_for_lost_team(session: Session, user_id: int, team: str, *, actor: str) -> list[str]:
    """Stop the user's started tasks after they left team ``team`` (or were removed): each was given the
    team's folder read-write when it started (its owner's teams then) and cannot be shown less while it runs.
    Queued tasks start with the teams of that moment. Returns the stopped tasks' ids."""
    rows = session.scalars(select(TaskModel).where(
        TaskModel.user_id == user_id,
        TaskModel.status.in_((TaskStatus.SUBMITTED.value, TaskStatus.RUNNING.value)))).all()
    for task in rows:
        switch_task_status(session, task, TaskStatus.CANCELING, reason=TerminationReason.USER_CANCELED, actor=actor,
                           message=msg("status.left_team", team=repr(team)))
    return [t.id for t in rows]


def switch_task_status(
    session: Session,
    task: TaskModel,
    new: TaskStatus,
    *,
    actor: str,
    reason: TerminationReason | None = None,
    message: str | Message | None = None,
    event_message: str | Message | None = None,
    **fields: Any,
) -> None:
    """The only writer of ``tasks.status`` (ARCHITECTURE §5.1).

    ``message`` is the task's one-line status message; ``event_message`` (default: the same) is what
    the timeline keeps, e.g. Ray's full multi-line account of a lost node. Either may be a coded
    :class:`~argus.core.messages.Message` (issue 37): its code and parameters are stored beside its text, which the
    WebUI says in the user's language; a plain text clears the status message's code. An ending (SUCCEEDED, FAILED,
    CANCELED) also queues the owner's notifications, committed or rolled back with the change.
    """
    old = TaskStatus(task.status)
    if not can_transition(old, new):
        raise Conflict(f"task {task.id}: illegal status change {old} → {new}", code="illegal_transition")
    now = utcnow()
    values: dict[str, Any] = {"status": new.value, "updated_at": now, **fields}
    if reason is not None:
        values["termination_reason"] = reason.value
    if message is not None:
        coded = message if isinstance(message, Message) else None
        values.update(status_message=text_of(message), status_message_code=coded and coded.code,
                      status_message_params=coded and coded.params)
    if new != TaskStatus.QUEUED:
        values["pending_reason"] = None
    if new == TaskStatus.SUBMITTED:
        values.setdefault("submitted_at", now)
    elif new == TaskStatus.RUNNING:
        values.setdefault("started_at", now)
    elif new in TERMINAL:
        values.setdefault("finished_at", now)
    result = session.execute(
        update(TaskModel).where(TaskModel.id == task.id, TaskModel.status == old.value).values(**values)
    )
    if result.rowcount != 1:
        raise StaleTask(f"task {task.id} changed concurrently (expected {old})", code="stale_task")
    for key, value in values.items():
        set_committed_value(task, key, value)
    said = event_message or message
    said_coded = said if isinstance(said, Message) else None
    session.add(TaskEventModel(task_id=task.id, at=now, from_status=old.value, to_status=new.value,
                               reason=reason.value if reason else None, message=text_of(said),
                               message_code=said_coded and said_coded.code,
                               message_params=said_coded and said_coded.params, actor=actor))
    if new in TERMINAL:  # the owner's webhooks and e-mail: outbox rows in this same transaction (issue 24)
        notifications.enqueue(session, task, new.value, text_of(message))
