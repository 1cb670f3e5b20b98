"""Retention endpoints (services/retention.py has the rules): the admin's prune, an owner's checkpoint removal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from argus.api.context import AppContext
from argus.api.deps import client_ip, current_principal, get_ctx, get_session, require_admin
from argus.api.schemas import ErrorOut
from argus.errors import ClientError, FieldError
from argus.services import retention as svc
from argus.services.files import shared_store
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2", tags=["admin"])
_ERR = {400: {"model": ErrorOut}, 401: {"model": ErrorOut}, 403: {"model": ErrorOut}, 404: {"model": ErrorOut},
        409: {"model": ErrorOut}}


class PruneIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    older_than_days: float | None = Field(None, gt=0, le=100_000,
                                          description="default: the prune_older_than_days setting (90)")
    before: datetime | None = Field(None, description="an absolute cutoff instead (a dry run's `before`: the real "
                                    "run then removes exactly what that dry run listed)")
    dry_run: bool = Field(False, description="list what would be removed; remove nothing")


class LogFileOut(BaseModel):
    name: str
    size_bytes: int


class PrunedTaskOut(BaseModel):
    task_id: str
    user: str
    finished_at: datetime | None
    events: int
    logs: list[LogFileOut]


class PruneOut(BaseModel):
    dry_run: bool
    before: datetime = Field(description="the cutoff: tasks that ended before it")
    tasks: list[PrunedTaskOut] = Field(description="every task something is (or would be) removed from; task rows "
                                       "themselves are never removed")
    events: int
    log_files: int
    log_bytes: int


class CheckpointsRemovedOut(BaseModel):
    task_id: str
    removed: str = Field(description="the folder deleted, as you write it")


@router.post("/admin/prune", response_model=PruneOut, responses=_ERR)
def prune(body: PruneIn, request: Request, admin: Principal = Depends(require_admin),
          session: Session = Depends(get_session, scope="function"), ctx: AppContext = Depends(get_ctx)) -> PruneOut:
    """Remove the timeline events and attempt logs of tasks that ended before the cutoff (admin). Task rows,
    checkpoints and other files stay. Run with ``dry_run`` first; pass its ``before`` to remove exactly that."""
    if body.before is not None and body.older_than_days is not None:
        raise ClientError("give older_than_days or before, not both", code="invalid_request",
                          errors=[FieldError("before", body.before.isoformat(), "drop one of the two")])
    before = body.before
    if before is None:
        before = datetime.now(UTC) - timedelta(days=body.older_than_days or ctx.settings.prune_older_than_days)
    elif before.tzinfo is None:
        before = before.replace(tzinfo=UTC)
    plan = svc.plan_prune(session, ctx.layout, before)
    if not body.dry_run:
        svc.apply_prune(session, ctx.layout, plan, actor=admin.name, store=shared_store(ctx.extras, ctx.settings),
                        source_ip=client_ip(request))
    return PruneOut(
        dry_run=body.dry_run, before=plan.before, events=plan.events, log_files=plan.log_files, log_bytes=plan.log_bytes,
        tasks=[PrunedTaskOut(task_id=t.task_id, user=t.user, finished_at=t.finished_at, events=t.events,
                             logs=[LogFileOut(name=f.name, size_bytes=f.size_bytes) for f in t.logs])
               for t in plan.tasks])


@router.delete("/tasks/{task_id}/checkpoints", response_model=CheckpointsRemovedOut, responses=_ERR,
               tags=["checkpoints"])
def delete_checkpoints(task_id: str,
                       step: int | None = Query(None, ge=0, le=10**12, description="only this step's "
                                                "global_step_<step> folder (refused for the latest one: 409)"),
                       principal: Principal = Depends(current_principal),
                       session: Session = Depends(get_session, scope="function"),
                       ctx: AppContext = Depends(get_ctx)) -> CheckpointsRemovedOut:
    """Delete ``$HOME/jobs/<id>/checkpoints`` of your own ended task, or with ``step`` only that step's folder
    (404 when there is none, 409 while the task is active or for the step verl's tracker names as latest; a
    link in its place is refused, never followed). Logs and the task stay."""
    removed = svc.remove_checkpoints(session, shared_store(ctx.extras, ctx.settings), principal, task_id, step,
                                 layout=ctx.layout)
    return CheckpointsRemovedOut(task_id=task_id, removed=removed)
