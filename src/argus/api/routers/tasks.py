"""/api/v2/tasks: submit, list, read, spec, events, cancel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx, get_session
from argus.api.schemas import (
    MAX_LIST_OFFSET,
    AttemptOut,
    CancelOut,
    ErrorOut,
    EventOut,
    SpecOut,
    SubmitOut,
    TaskListOut,
    TaskOut,
    TaskSummaryOut,
)
from argus.errors import ClientError, FieldError
from argus.services import tasks as svc
from argus.services.principal import Principal

if TYPE_CHECKING:
    from argus.db.models import TaskModel

router = APIRouter(prefix="/api/v2/tasks", tags=["tasks"])

_SPEC_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/yaml": {"schema": {"type": "string"}},
            "application/json": {"schema": {"type": "object"}},
        },
    }
}


@router.post("", status_code=201, response_model=SubmitOut, responses={400: {"model": ErrorOut}},
             openapi_extra=_SPEC_BODY)
async def submit(
    request: Request,
    principal: Principal = Depends(current_principal),
    ctx: AppContext = Depends(get_ctx),
) -> SubmitOut:
    """Submit a task spec (YAML or JSON). 400 lists every problem with field, value and fix."""
    raw = await _read_capped(request, ctx.settings.max_spec_bytes)
    try:
        body = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ClientError("body is not UTF-8 text", code="invalid_spec",
                          errors=[FieldError("(body)", None, "send the spec as UTF-8 YAML or JSON")]) from None
    content_type = request.headers.get("content-type")

    def admit_and_queue() -> SubmitOut:  # blocking work (DB, verl validation): off the event loop
        with ctx.db.session() as session:
            result = svc.submit_task(session, principal, body, policy=ctx.policy, content_type=content_type,
                                     max_bytes=ctx.settings.max_spec_bytes, checks=ctx.checks)
            return SubmitOut(task_id=result.task.id, status=result.task.status, warnings=result.warnings,
                             info=result.info)

    out = await run_in_threadpool(admit_and_queue)
    ctx.wake()
    return out


async def _read_capped(request: Request, limit: int) -> bytes:
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
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=MAX_LIST_OFFSET),
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session),
) -> TaskListOut:
    statuses = [s.strip().upper() for item in status or [] for s in item.split(",") if s.strip()]
    rows, total = svc.list_tasks(session, principal, status=statuses or None, workload=workload, user=user,
                                 limit=limit, offset=offset)
    return TaskListOut(items=[_summary(t, u) for t, u in rows], total=total, limit=limit, offset=offset)


@router.get("/{task_id}", response_model=TaskOut, responses={404: {"model": ErrorOut}})
def get_task(
    task_id: str, principal: Principal = Depends(current_principal), session: Session = Depends(get_session)
) -> TaskOut:
    task = svc.get_task(session, principal, task_id)
    attempts = [AttemptOut.model_validate(a) for a in svc.list_task_attempts(session, task_id)]
    return TaskOut(
        **_summary(task, svc.user_name_of(session, task)).model_dump(),
        attempt=task.attempts,
        submission_id=task.submission_id,
        warnings=task.warnings or [],
        entry_module=task.entry_module,
        submitted_at=task.submitted_at,
        updated_at=task.updated_at,
        attempts=attempts,
    )


@router.get("/{task_id}/spec", response_model=SpecOut, responses={404: {"model": ErrorOut}})
def get_spec(
    task_id: str, principal: Principal = Depends(current_principal), session: Session = Depends(get_session)
) -> SpecOut:
    task = svc.get_task(session, principal, task_id)
    return SpecOut(raw=task.spec_raw, resolved=task.spec_resolved, command_raw=task.command_raw,
                   command_expanded=task.command_expanded, argv=task.argv)


@router.get("/{task_id}/events", response_model=list[EventOut], responses={404: {"model": ErrorOut}})
def get_events(
    task_id: str, principal: Principal = Depends(current_principal), session: Session = Depends(get_session)
) -> list[EventOut]:
    return [EventOut.model_validate(e) for e in svc.list_task_events(session, principal, task_id)]


@router.post("/{task_id}/cancel", response_model=CancelOut, responses={404: {"model": ErrorOut}, 409: {"model": ErrorOut}})
def cancel(
    task_id: str, principal: Principal = Depends(current_principal), ctx: AppContext = Depends(get_ctx)
) -> CancelOut:
    with ctx.db.session() as session:
        task = svc.cancel_task(session, principal, task_id)
        out = CancelOut(task_id=task.id, status=task.status)
    ctx.wake()
    return out


def _summary(task: TaskModel, user: str) -> TaskSummaryOut:
    return TaskSummaryOut(
        task_id=task.id, user=user, name=task.name, kind=task.kind, workload=task.workload, status=task.status,
        priority=task.priority, nnodes=task.nnodes, n_gpus_per_node=task.n_gpus_per_node,
        termination_reason=task.termination_reason, status_message=task.status_message,
        pending_reason=task.pending_reason, created_at=task.created_at, started_at=task.started_at,
        finished_at=task.finished_at,
    )
