"""/api/v2/tasks/{id}/checkpoints, /resume, /export: a run's checkpoints and the tasks made from them."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx, get_session
from argus.api.schemas import ErrorOut, SubmitOut
from argus.services import resume as svc
from argus.services import tasks as tasks_svc
from argus.services.checkpoints import Listing
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2/tasks", tags=["checkpoints"])


class ComponentOut(BaseModel):
    name: str
    kind: str = Field(description="actor | critic | dataloader | model | other")
    size_bytes: int


class StepOut(BaseModel):
    step: int
    path: str = Field(description="the step folder as you write it ($HOME/…): the value of trainer.resume_from_path")
    state: str = Field(description="complete | writing (the task is still active) | incomplete (cut off mid-write); "
                       "only complete steps can be resumed or exported")
    complete: bool
    components: list[ComponentOut]
    size_bytes: int
    size_exact: bool = Field(description="false when the folder had more entries than one listing walks")
    modified_at: datetime | None


class CheckpointsOut(BaseModel):
    task_id: str
    folder: str = Field(description="trainer.default_local_dir as you write it")
    latest: int | None = Field(description="the step in verl's latest_checkpointed_iteration.txt")
    steps: list[StepOut]


class ResumeIn(BaseModel):
    step: int | None = Field(None, ge=0, description="a complete step; default: the latest complete one")


class ExportIn(BaseModel):
    step: int | None = Field(None, ge=0, description="a complete step; default: the latest complete one")
    to: str | None = Field(None, max_length=1024, description="a name (→ $HOME/models/<name>) or a path in your "
                           "home; default $HOME/models/<task>-step<N>")


def _out(task_id: str, listing: Listing, show) -> CheckpointsOut:  # noqa: ANN001 - a path → as written
    return CheckpointsOut(
        task_id=task_id, folder=show(listing.folder), latest=listing.latest,
        steps=[StepOut(step=s.step, path=show(s.path), state=s.state, complete=s.complete,
                       components=[ComponentOut(name=c.name, kind=c.kind, size_bytes=c.size_bytes) for c in s.components],
                       size_bytes=s.size_bytes, size_exact=s.size_exact, modified_at=s.modified_at)
               for s in listing.steps])


@router.get("/{task_id}/checkpoints", response_model=CheckpointsOut, responses={404: {"model": ErrorOut}})
def list_checkpoints(
    task_id: str,
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
    ctx: AppContext = Depends(get_ctx),
) -> CheckpointsOut:
    """The task's saved steps (verl's ``global_step_N/`` folders), oldest first, with components, size and
    time. A step is complete when verl's ``latest_checkpointed_iteration.txt`` (written after the step)
    has reached it; a later one is being written and is not offered for resume or export."""
    listing, owner = svc.checkpoints_of(session, principal, task_id, ctx.policy)
    return _out(task_id, listing, lambda p: ctx.layout.to_virtual(p, owner))


@router.post("/{task_id}/resume", status_code=201, response_model=SubmitOut,
             responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}})
async def resume(
    task_id: str,
    body: ResumeIn = Body(default_factory=ResumeIn),
    principal: Principal = Depends(current_principal),
    ctx: AppContext = Depends(get_ctx),
) -> SubmitOut:
    """Submit a new task with this (ended) task's spec resuming from a complete checkpoint
    (``trainer.resume_mode=resume_path``, ``trainer.resume_from_path``); it goes through admission like any
    submit and shows ``resumed_from``. 409 ``no_checkpoint`` / ``task_active``; 400 ``bad_step``."""
    def work() -> SubmitOut:
        with ctx.db.session() as session:
            policy = tasks_svc.policy_for(session, principal, ctx.policy)
            r = svc.resume_task(session, principal, task_id, step=body.step, policy=policy, checks=ctx.checks,
                                max_bytes=ctx.settings.max_spec_bytes)
            return SubmitOut(task_id=r.task.id, status=r.task.status, warnings=r.warnings, info=r.info)

    out = await run_in_threadpool(work)
    ctx.wake()
    return out


@router.post("/{task_id}/export", status_code=201, response_model=SubmitOut,
             responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}})
async def export(
    task_id: str,
    body: ExportIn = Body(default_factory=ExportIn),
    principal: Principal = Depends(current_principal),
    ctx: AppContext = Depends(get_ctx),
) -> SubmitOut:
    """Queue a CPU task (no GPU) running ``python3 -m verl.model_merger merge`` on a complete checkpoint;
    it writes a Hugging Face folder usable as the ``model_id`` of a next task. The answer is that task."""
    def work() -> SubmitOut:
        with ctx.db.session() as session:
            policy = tasks_svc.policy_for(session, principal, ctx.policy)
            r = svc.export_task(session, principal, task_id, step=body.step, to=body.to, policy=policy,
                                checks=ctx.checks, max_bytes=ctx.settings.max_spec_bytes)
            return SubmitOut(task_id=r.task.id, status=r.task.status, warnings=r.warnings, info=r.info)

    out = await run_in_threadpool(work)
    ctx.wake()
    return out
