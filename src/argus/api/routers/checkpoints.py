"""/api/v2/tasks/{id}/checkpoints, /resume, /export, /evaluate: a run's checkpoints, their scores and the tasks
made from them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx, get_session
from argus.api.schemas import ErrorOut, SubmitOut
from argus.services import evaluations as ev_svc
from argus.services import resume as svc
from argus.services import tasks as tasks_svc
from argus.services.checkpoints import Listing
from argus.services.evaluations import Evaluation
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2/tasks", tags=["checkpoints"])


class ComponentOut(BaseModel):
    name: str
    kind: str = Field(description="actor | critic | dataloader | model | other")
    size_bytes: int


class EvaluationOut(BaseModel):
    task_id: str = Field(description="the task that ran the evaluation")
    step: int
    status: str
    scores: dict[str, float] | None = Field(description="the validation metrics it logged, once it succeeded: "
                                            "val-core/<data source>/<reward key>/mean@1, val-aux/…")
    created_at: datetime
    finished_at: datetime | None


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
    evaluations: list[EvaluationOut] = Field([], description="evaluations of this step, oldest first")


class CheckpointsOut(BaseModel):
    task_id: str
    folder: str = Field(description="trainer.default_local_dir as you write it")
    latest: int | None = Field(description="the step in verl's latest_checkpointed_iteration.txt")
    steps: list[StepOut]


_BEST = ("a metric its evaluations scored (e.g. val-core/openai/gsm8k/acc/mean@1): take the step that scored best "
         "on it instead of 'step'")


class _Pick(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: int | None = Field(None, ge=0, description="a complete step; default: the latest complete one")
    best: str | None = Field(None, min_length=1, max_length=256, description=_BEST)
    mode: Literal["max", "min"] = Field("max", description="with best: the highest (max) or lowest (min, a loss) wins")


class ResumeIn(_Pick):
    pass


class ExportIn(_Pick):
    to: str | None = Field(None, max_length=1024, description="a name (→ $HOME/models/<name>) or a path in your "
                           "home; default $HOME/models/<task>-step<N>")


class EvaluateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: int | None = Field(None, ge=0, description="a complete step; default: the latest complete one")
    val_file: str | None = Field(None, max_length=4096, description="the data to validate on ($HOME/…, common/…); "
                                 "default: the task's own val_file")
    reward_path: str | None = Field(None, max_length=4096, description="a reward file under $HOME/code/; default: "
                                    "the task's own reward")
    reward_name: str | None = Field(None, max_length=256, description="the function in reward_path (compute_score)")
    lm_eval: dict[str, Any] | None = Field(
        None, description="evaluate with lm-eval instead of verl's validation (any verl checkpoint, SFT's too: it is "
        "merged first): a kind eval spec's lm_eval block, {tasks, include_path, num_fewshot, limit, batch_size}",
        examples=[{"tasks": ["my_task"], "include_path": "$HOME/code/lm_tasks", "limit": 32}])


def _out(task_id: str, listing: Listing, show, evals: list[Evaluation]) -> CheckpointsOut:  # noqa: ANN001
    return CheckpointsOut(
        task_id=task_id, folder=show(listing.folder), latest=listing.latest,
        steps=[StepOut(step=s.step, path=show(s.path), state=s.state, complete=s.complete,
                       components=[ComponentOut(name=c.name, kind=c.kind, size_bytes=c.size_bytes) for c in s.components],
                       size_bytes=s.size_bytes, size_exact=s.size_exact, modified_at=s.modified_at,
                       evaluations=[_eval_out(e) for e in evals if e.step == s.step])
               for s in listing.steps])


def _eval_out(e: Evaluation) -> EvaluationOut:
    return EvaluationOut(task_id=e.task_id, step=e.step, status=e.status, scores=e.scores, created_at=e.created_at,
                         finished_at=e.finished_at)


@router.get("/{task_id}/checkpoints", response_model=CheckpointsOut, responses={404: {"model": ErrorOut}})
def list_checkpoints(
    task_id: str,
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
    ctx: AppContext = Depends(get_ctx),
) -> CheckpointsOut:
    """The task's saved steps (verl's ``global_step_N/`` folders), oldest first, with components, size and
    time. A step is complete when verl's ``latest_checkpointed_iteration.txt`` (written after the step)
    has reached it; a later one is being written and is not offered for resume or export. Each step lists its
    evaluations and their scores."""
    listing, owner = svc.checkpoints_of(session, principal, task_id, ctx.policy)
    evals = ev_svc.evaluations_of(session, task_id, ctx.layout)
    return _out(task_id, listing, lambda p: ctx.layout.to_virtual(p, owner), evals)


@router.get("/{task_id}/evaluations", response_model=list[EvaluationOut], responses={404: {"model": ErrorOut}})
def list_evaluations(
    task_id: str,
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
    ctx: AppContext = Depends(get_ctx),
) -> list[EvaluationOut]:
    """Every evaluation of the task's checkpoints, oldest first, with its status and (once it succeeded) the
    validation metrics it logged."""
    tasks_svc.get_task(session, principal, task_id, team_read=True)
    return [_eval_out(e) for e in ev_svc.evaluations_of(session, task_id, ctx.layout)]


@router.get("/{task_id}/checkpoints/best", response_model=StepOut,
            responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}})
def best_checkpoint(
    task_id: str,
    metric: str = Query(..., min_length=1, max_length=256, description=_BEST),
    mode: Literal["max", "min"] = Query("max", description="the highest (max) or lowest (min) score wins"),
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
    ctx: AppContext = Depends(get_ctx),
) -> StepOut:
    """The complete step whose evaluation scored best on ``metric`` (a tie: the later step). 400 ``no_scores``
    names the metrics its evaluations did score."""
    listing, owner = svc.checkpoints_of(session, principal, task_id, ctx.policy)
    chosen = ev_svc.pick_step(session, listing, task_id, ctx.layout, step=None, best=metric, mode=mode)
    evals = ev_svc.evaluations_of(session, task_id, ctx.layout)
    one = Listing(folder=listing.folder, latest=listing.latest, steps=[chosen])
    return _out(task_id, one, lambda p: ctx.layout.to_virtual(p, owner), evals).steps[0]


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
                                max_bytes=ctx.settings.max_spec_bytes, best=body.best, mode=body.mode)
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
                                checks=ctx.checks, max_bytes=ctx.settings.max_spec_bytes, best=body.best,
                                mode=body.mode)
            return SubmitOut(task_id=r.task.id, status=r.task.status, warnings=r.warnings, info=r.info)

    out = await run_in_threadpool(work)
    ctx.wake()
    return out


@router.post("/{task_id}/evaluate", status_code=201, response_model=SubmitOut,
             responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}})
async def evaluate(
    task_id: str,
    body: EvaluateIn = Body(default_factory=EvaluateIn),
    principal: Principal = Depends(current_principal),
    ctx: AppContext = Depends(get_ctx),
) -> SubmitOut:
    """Queue a task that evaluates a complete checkpoint of this ppo/grpo task with verl's own validation: its
    spec resuming from the step with ``trainer.val_only=True`` (on ``val_file`` and the reward given, else the
    task's own); or, with ``lm_eval``, lm-eval on the checkpoint merged into a Hugging Face folder (any task's). It goes through admission like any submit; its scores appear on the step (``checkpoints``),
    in ``evaluations`` and on the new task. 409 ``no_checkpoint`` / ``not_evaluable``; 400 ``bad_step``."""
    def work() -> SubmitOut:
        with ctx.db.session() as session:
            policy = tasks_svc.policy_for(session, principal, ctx.policy)
            r = ev_svc.evaluate_task(session, principal, task_id, step=body.step, val_file=body.val_file,
                                     reward_path=body.reward_path, reward_name=body.reward_name, policy=policy,
                                     checks=ctx.checks, max_bytes=ctx.settings.max_spec_bytes, lm_eval=body.lm_eval)
            return SubmitOut(task_id=r.task.id, status=r.task.status, warnings=r.warnings, info=r.info)

    out = await run_in_threadpool(work)
    ctx.wake()
    return out
