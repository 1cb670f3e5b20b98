"""/api/v2/tasks: submit, list, read, spec, events, cancel."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from argus.api.context import AppContext
from argus.api.deps import Credentials, credentials, current_principal, get_ctx, get_session
from argus.api.schemas import (
    MAX_LIST_OFFSET,
    AttemptOut,
    CancelOut,
    DryRunOut,
    ErrorOut,
    EventOut,
    ProgressOut,
    QueueOut,
    RerunIn,
    RerunPreviewOut,
    SpecOut,
    SubmitOut,
    TaskListOut,
    TaskOut,
    TaskSummaryOut,
)
from argus.core import messages
from argus.core.admission import AdmissionPolicy
from argus.core.resources import training_device
from argus.core.states import TaskStatus
from argus.errors import ClientError, FieldError
from argus.services import eta as eta_svc
from argus.services import evaluations, idempotency, task_list, telemetry
from argus.services import rerun as rerun_svc
from argus.services import tasks as svc
from argus.services.principal import Principal
from argus.services.resume import resumed_by

if TYPE_CHECKING:
    from typing import Any

    from sqlalchemy import Row

    from argus.db.models import TaskModel

router = APIRouter(prefix="/api/v2/tasks", tags=["tasks"])

SPEC_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/yaml": {"schema": {"type": "string"}},
            "application/json": {"schema": {"type": "object"}},
        },
    }
}


@router.post("", status_code=201, response_model=SubmitOut, openapi_extra=SPEC_BODY,
             responses={200: {"model": DryRunOut, "description": "dry run (`dry_run=true`): accepted, nothing stored"},
                        400: {"model": ErrorOut}, 409: {"model": ErrorOut}})
async def submit(
    request: Request,
    idempotency_key: str | None = Header(None, alias=idempotency.HEADER,
                                         description="makes a retry safe: same key within 24 h, same answer"),
    dry_run: bool = Query(False, description="check the spec exactly as a submit would (verl validation "
                          "included) and answer 200 with the verdict; nothing is queued or stored"),
    checks: str = Query("all", pattern="^(all|spec)$",
                        description="with dry_run: `spec` runs only the spec's own checks (fields, limits, the "
                        "command, paths; no verl, no file read: milliseconds), `all` every check a submit runs. "
                        "The New Task page asks for both and shows the first answer until verl's arrives"),
    creds: Credentials = Depends(credentials),
    ctx: AppContext = Depends(get_ctx),
) -> JSONResponse:
    """Submit a task spec (YAML or JSON). 400 lists every problem with field, value and fix, and for a
    YAML body the ``line`` it is on where that can be found.

    An ``Idempotency-Key`` header (printable ASCII, at most 255 characters; e.g. a UUID) makes a retry
    safe: the same key from the same user within 24 h answers what the first request was answered
    (same status and body, header ``Idempotent-Replayed: true``) and never queues a second task; the
    same key with a different spec is refused (409 ``idempotency_key_reused``).

    With ``dry_run=true`` the answer is 200 ``{warnings, info, resolved, command_expanded}`` (or the same
    400): the New Task page's Check button and ``argus submit --dry-run``."""
    if creds.bearer is None and creds.cookie is None:
        creds.principal()  # the 401, before the body is read
    if checks != "all" and not dry_run:
        raise ClientError("checks applies to a dry run only", code="invalid_request", errors=[FieldError(
            "checks", checks, "a submit always runs every check; drop checks= or add dry_run=true")])
    raw = await read_capped(request, ctx.settings.max_spec_bytes)
    content_type = request.headers.get("content-type")

    # One blocking job per request (authentication, verl validation, the DB), off the loop: a thread hop
    # costs about as much CPU as the whole row insert.
    def admit_and_queue() -> SubmitOut | DryRunOut | idempotency.Replay:
        principal = creds.principal()
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ClientError("body is not UTF-8 text", code="invalid_spec",
                              errors=[FieldError("(body)", None, "send the spec as UTF-8 YAML or JSON")]) from None
        with ctx.db.session() as session:
            policy = svc.policy_for(session, principal, ctx.policy)
        if dry_run:  # before any Idempotency-Key handling: a dry run stores nothing, a key included
            everything = checks == "all"
            checked = svc.check_spec(principal, body, policy=policy, content_type=content_type,
                                     max_bytes=ctx.settings.max_spec_bytes, checks=ctx.checks if everything else (),
                                     alternatives=ctx.env_choices if everything else None)
            with ctx.db.session() as session:  # the team and class a submit would charge, refused alike
                charges = svc.charges(session, principal, checked)
            r = svc.preview(checked, principal, policy)
            return DryRunOut(warnings=r.warnings, info={**r.info, **charges.info()}, resolved=r.resolved,
                             command_expanded=r.command_expanded, checks=checks)
        key = idempotency.parse_key(idempotency_key)
        if key is None:
            return queue(principal, policy, body, None, "")
        req_hash = idempotency.request_hash(body, content_type)
        with ctx.db.session() as session:
            if replay := idempotency.lookup(session, principal.id, key, req_hash):
                return replay
        try:
            return queue(principal, policy, body, key, req_hash)
        except idempotency.KeyRace:
            return after_race(principal, key, req_hash)

    def queue(principal: Principal, policy: AdmissionPolicy, body: str, key: str | None, req_hash: str) -> SubmitOut:
        started = time.monotonic()
        try:  # the checks (verl validation: 0.1–1 s) before the write lock, never inside it
            checked = svc.check_spec(principal, body, policy=policy, content_type=content_type,
                                     max_bytes=ctx.settings.max_spec_bytes, checks=ctx.checks,
                                     alternatives=ctx.env_choices)
        except ClientError as exc:
            telemetry.observe_rejection(exc)
            raise
        with ctx.db.writer() as session:
            result = svc.queue_task(session, principal, checked, policy=policy)
            out = SubmitOut(task_id=result.task.id, status=result.task.status, warnings=result.warnings,
                            info=result.info)
            if key is not None:  # same transaction as the task: both or neither (a racing twin: KeyRace)
                idempotency.remember(session, principal.id, key, req_hash, task_id=out.task_id, status_code=201,
                                     response=out.model_dump(mode="json"))
        telemetry.observe_admission(time.monotonic() - started, result.info)
        return out

    def after_race(principal: Principal, key: str, req_hash: str) -> idempotency.Replay:
        with ctx.db.session() as session:
            return idempotency.winner(session, principal.id, key, req_hash)

    out = await run_in_threadpool(admit_and_queue)
    if isinstance(out, DryRunOut):
        return JSONResponse(out.model_dump(mode="json"), status_code=200)
    if isinstance(out, idempotency.Replay):
        return JSONResponse(out.response, status_code=out.status_code, headers={idempotency.REPLAYED_HEADER: "true"})
    ctx.wake()
    return JSONResponse(out.model_dump(mode="json"), status_code=201)  # byte for byte what a replay sends


def keyed_answer(out: idempotency.Made | idempotency.Replay) -> JSONResponse:
    """A keyed submit's answer (a sweep's, a pipeline's): a replay as first sent, marked ``Idempotent-Replayed``."""
    if isinstance(out, idempotency.Replay):
        return JSONResponse(out.response, status_code=out.status_code, headers={idempotency.REPLAYED_HEADER: "true"})
    return JSONResponse(out.response, status_code=out.status_code)  # byte for byte what a replay sends


async def read_capped(request: Request, limit: int) -> bytes:
    """The body, refusing more than ``limit`` bytes before they are buffered (a spec is small)."""
    too_big = ClientError("task spec too large", code="invalid_spec",
                          errors=[FieldError("(body)", None, f"must be at most {limit} bytes")])
    if int(request.headers.get("content-length") or 0) > limit:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


@router.get("", response_model=TaskListOut)
def list_tasks(
    status: list[str] | None = Query(None, description="repeat or comma-separate: status=QUEUED,RUNNING"),
    workload: str | None = None,
    user: str | None = Query(None, description="admin only: one user's tasks"),
    team: str | None = Query(None, description="one team's tasks, every member's (a team you are in)"),
    q: str | None = Query(None, max_length=128, description="a task id prefix or part of the name (any case)"),
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=MAX_LIST_OFFSET),
    sort: str | None = Query(None, max_length=32, description="a column: id, name, user, workload, status, gpus, "
                             "created, duration, gpu_hours, reason; a leading '-' sorts descending (default -created)"),
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
    ctx: AppContext = Depends(get_ctx),
) -> TaskListOut:
    statuses = [s.strip().upper() for item in status or [] for s in item.split(",") if s.strip()]
    rows, total = svc.list_tasks(session, principal, status=statuses or None, workload=workload, user=user,
                                 search=q, limit=limit, offset=offset, sort=sort, team=team)
    items = [_summary(r, r.owner) for r in rows]
    for t, (hours, nodes) in zip(items, task_list.page_extras(session, rows, now=datetime.now(UTC)).values(),
                                 strict=True):
        t.gpu_hours, t.nodes = hours, nodes
    queued = [t.task_id for t in items if t.status == TaskStatus.QUEUED.value]
    if queued and ctx.queue_estimates is not None:  # one estimate for the page, not one per row
        estimates = ctx.queue_estimates.for_tasks(session, queued, now=datetime.now(UTC))
        for t in items:
            if (e := estimates.get(t.task_id)) is not None and t.status == TaskStatus.QUEUED.value:
                t.queue_position, t.eta = e.position, e.eta
    return TaskListOut(items=items, total=total, limit=limit, offset=offset)


@router.get("/{task_id}", response_model=TaskOut, responses={404: {"model": ErrorOut}})
def get_task(
    task_id: str, principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"), ctx: AppContext = Depends(get_ctx),
) -> TaskOut:
    """One task; a QUEUED one with ``queue`` (its place and estimated start), a RUNNING one with ``progress``."""
    task = svc.get_task(session, principal, task_id, team_read=True)
    attempts = [AttemptOut.model_validate(a) for a in svc.list_task_attempts(session, task_id)]
    owner = svc.user_name_of(session, task)
    summary = _summary(task, owner)
    queue = progress = None
    now = datetime.now(UTC)
    summary.gpu_hours, summary.nodes = task_list.page_extras(session, [task], now=now)[task.id]
    if task.status == TaskStatus.QUEUED.value and ctx.queue_estimates is not None:
        e = ctx.queue_estimates.for_tasks(session, [task.id], now=now).get(task.id)
        if e is not None:
            queue = QueueOut(position=e.position, ahead=e.ahead, competing=e.competing, resource=e.resource,
                             eta=e.eta, eta_reason=e.reason.text, eta_reason_code=e.reason.code,
                             eta_reason_params=e.reason.params)
            summary.queue_position, summary.eta = e.position, e.eta
    elif task.status == TaskStatus.RUNNING.value:
        p = eta_svc.task_progress(session, task, owner, ctx.settings.root, now=now)
        stalled = task_list.stalled(task.status, task.status_message)
        progress = ProgressOut(step=p.step, total_steps=p.total_steps, steps_per_hour=p.steps_per_hour,
                               gpu_hours=p.gpu_hours, eta_end=None if stalled else p.eta_end,
                               last_step_at=p.step_at, stalled=stalled)
    return TaskOut(
        **summary.model_dump(),
        queue=queue,
        progress=progress,
        attempt=task.attempts,
        submission_id=task.submission_id,
        warnings=task.warnings or [],
        entry_module=task.entry_module,
        submitted_at=task.submitted_at,
        updated_at=task.updated_at,
        attempts=attempts,
        resumed_from=task.resumed_from,
        resumed_by=resumed_by(session, task.id),
        evaluates_task=task.evaluates_task,
        evaluates_step=task.evaluates_step,
        scores=evaluations.task_scores(session, task, ctx.layout),
        sweep_id=task.sweep_id,
        sweep_trial=task.sweep_trial,
        sweep_params=task.sweep_params,
        evaluate_checkpoints=task.evaluate_checkpoints,
        failure_kind=task.failure_kind,
        failure_hint=task.failure_hint,
        **_failure_hint_code(task.failure_kind, task.failure_hint),
        team=task.team,
        priority_class=task.priority_class,
        can_cancel=svc.can_cancel_now(session, principal, task),
    )


@router.get("/{task_id}/spec", response_model=SpecOut, responses={404: {"model": ErrorOut}})
def get_spec(
    task_id: str, principal: Principal = Depends(current_principal), session: Session = Depends(get_session, scope="function")
) -> SpecOut:
    task = svc.get_task(session, principal, task_id, team_read=True)
    return SpecOut(raw=task.spec_raw, resolved=task.spec_resolved, command_raw=task.command_raw,
                   command_expanded=task.command_expanded, argv=task.argv)


@router.get("/{task_id}/events", response_model=list[EventOut], responses={404: {"model": ErrorOut}})
def get_events(
    task_id: str, principal: Principal = Depends(current_principal), session: Session = Depends(get_session, scope="function")
) -> list[EventOut]:
    return [_event(e) for e in svc.list_task_events(session, principal, task_id)]


def _event(e: Any) -> EventOut:
    """A timeline entry, its message's code shown only while it still renders to its text (issue 37)."""
    said = messages.from_stored(e.message_code, e.message_params, e.message)
    return EventOut(at=e.at, from_status=e.from_status, to_status=e.to_status, reason=e.reason, message=e.message,
                    message_code=said and said.code, message_params=said and said.params, actor=e.actor)


@router.post("/{task_id}/rerun", status_code=201, response_model=SubmitOut | RerunPreviewOut,
             responses={200: {"model": RerunPreviewOut}, 400: {"model": ErrorOut}, 404: {"model": ErrorOut}})
async def rerun(
    task_id: str,
    body: RerunIn,
    dry_run: bool = Query(False, description="show the spec, its diff and what is left to fix; queue nothing"),
    principal: Principal = Depends(current_principal),
    ctx: AppContext = Depends(get_ctx),
) -> Any:
    """Re-run your task in another training environment: its spec as submitted with ``env:`` set and every
    key moved that the environment's verl reads under another name (the one-click fixes its admission offers).
    A dry run answers 200 with the spec, the diff and the problems no fix covers; a re-run goes through
    admission like any submit (400 listing those problems)."""
    def work() -> Any:
        with ctx.db.session() as session:
            policy = svc.policy_for(session, principal, ctx.policy)
            if dry_run:
                r = rerun_svc.preview(session, principal, task_id, body.env, policy=policy, checks=ctx.checks,
                                      max_bytes=ctx.settings.max_spec_bytes)
                return JSONResponse(RerunPreviewOut(
                    spec=r.spec, diff=r.diff, edits=r.edits, errors=[e.as_dict() for e in r.problems],
                    warnings=r.warnings).model_dump(), status_code=200)
            done, _planned = rerun_svc.rerun(session, principal, task_id, body.env, policy=policy,
                                             checks=ctx.checks, max_bytes=ctx.settings.max_spec_bytes)
            return SubmitOut(task_id=done.task.id, status=done.task.status, warnings=done.warnings, info=done.info)

    out = await run_in_threadpool(work)
    if not dry_run:
        ctx.wake()
    return out


@router.post("/{task_id}/cancel", response_model=CancelOut, responses={404: {"model": ErrorOut}, 409: {"model": ErrorOut}})
def cancel(
    task_id: str, principal: Principal = Depends(current_principal), ctx: AppContext = Depends(get_ctx)
) -> CancelOut:
    with ctx.db.session() as session:
        task = svc.cancel_task(session, principal, task_id)
        out = CancelOut(task_id=task.id, status=task.status)
    ctx.wake()
    return out


def _failure_hint_code(kind: str | None, hint: str | None) -> dict[str, Any]:
    """failure_hint_code/params (issue 37): the page says a generic hint in the user's language."""
    m = messages.failure_hint(kind, hint)
    return {"failure_hint_code": m.code, "failure_hint_params": m.params} if m else {}


def _summary(task: TaskModel | Row[Any], user: str) -> TaskSummaryOut:
    """A task or a row of ``svc.SUMMARY_COLUMNS`` (the list reads only those: no spec, so a list row's
    ``device`` is gpu and its workers its GPUs; one task's answer reads its spec)."""
    device, workers = training_device(getattr(task, "spec_resolved", None), task.n_gpus_per_node)
    why = messages.from_stored(task.pending_reason_code, task.pending_reason_params, task.pending_reason)
    said = messages.from_stored(task.status_message_code, task.status_message_params, task.status_message)
    return TaskSummaryOut(
        task_id=task.id, user=user, name=task.name, kind=task.kind, workload=task.workload, status=task.status,
        priority=task.priority, nnodes=task.nnodes, n_gpus_per_node=task.n_gpus_per_node,
        device=device, workers_per_node=workers,
        termination_reason=task.termination_reason, status_message=task.status_message,
        status_message_code=said and said.code, status_message_params=said and said.params,
        pending_reason=task.pending_reason, pending_reason_code=why and why.code,
        pending_reason_params=why and why.params, created_at=task.created_at, started_at=task.started_at,
        finished_at=task.finished_at, status_note=task_list.status_note(task.status_message),
    )
