"""/api/v2/sweeps: submit a sweep (every trial checked, then all queued), list, read, cancel (issue 38)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from argus.api.context import AppContext
from argus.api.deps import Credentials, credentials, current_principal, get_ctx, get_session
from argus.api.routers.tasks import SPEC_BODY, keyed_answer, read_capped
from argus.api.schemas import ErrorOut
from argus.core.messages import from_stored, known_fields, text_fields
from argus.core.metrics import json_value
from argus.errors import ClientError, FieldError
from argus.services import idempotency
from argus.services import sweeps as svc
from argus.services import tasks as tasks_svc
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2/sweeps", tags=["sweeps"])


class TrialOut(BaseModel):
    trial: int
    params: dict[str, Any] = Field(description="the values this trial was given")
    task_id: str | None = Field(None, description="its task (absent in a dry run)")
    status: str | None = None
    status_message: str | None = None
    status_message_code: str | None = Field(None, description="issue 37: the status message's code (core.messages)")
    status_message_params: dict[str, Any] | None = None
    termination_reason: str | None = Field(None, description="SWEEP_STOPPED: early-stopped or over the budget")
    metric: list[tuple[int, float | str]] = Field([], description="the sweep's metric per validated step")
    spec: dict[str, Any] | None = Field(None, description="dry run: the trial's spec as it would be submitted")


class SweepOut(BaseModel):
    sweep_id: str
    name: str
    user: str
    status: str = Field(description="RUNNING, SUCCEEDED (every trial ended, one succeeded), FAILED, CANCELED")
    message: str | None = Field(None, description="why it ended or stopped trials early: budget, cancel")
    message_code: str | None = Field(None, description="issue 37: the message's code (sweep.*), known from its text")
    message_params: dict[str, Any] | None = None
    method: str
    metric: str | None
    mode: str
    max_concurrent: int
    early_stop: dict[str, Any] | None = Field(None, description="{rungs, keep, min_trials}: successive halving")
    budget_gpu_hours: float | None
    hours_used: float = Field(description="GPU-hours of its trials (node-hours for CPU tasks), running ones to now")
    best_task: str | None = Field(None, description="the trial whose last validated metric is best")
    created_at: datetime
    finished_at: datetime | None
    trials: list[TrialOut]


class SweepSubmitOut(BaseModel):
    sweep_id: str | None = Field(description="None for a dry run")
    trials: list[TrialOut]


def _out(session: Session, view: svc.SweepView) -> SweepOut:
    s, spec = view.sweep, view.sweep.spec
    return SweepOut(
        sweep_id=s.id, name=s.name, user=tasks_svc.user_name_of(session, s), status=s.status,
        **known_fields("message", s.message, "sweep."),
        method=spec["method"], metric=spec.get("metric"), mode=spec["mode"],
        max_concurrent=s.max_concurrent, early_stop=spec.get("early_stop"), budget_gpu_hours=spec.get("budget_gpu_hours"),
        hours_used=round(view.hours_used, 6), best_task=view.best_task, created_at=s.created_at,
        finished_at=s.finished_at,
        trials=[TrialOut(trial=t.task.sweep_trial or 0, params=t.task.sweep_params or {}, task_id=t.task.id,
                         status=t.task.status, **text_fields("status_message", t.task.status_message, from_stored(
                             t.task.status_message_code, t.task.status_message_params, t.task.status_message)),
                         termination_reason=t.task.termination_reason,
                         metric=[(k, json_value(v)) for k, v in sorted(t.values.items())]) for t in view.trials])


@router.post("", status_code=201, response_model=SweepSubmitOut, openapi_extra=SPEC_BODY,
             responses={400: {"model": ErrorOut}, 409: {"model": ErrorOut}})
async def submit_sweep(
    request: Request,
    idempotency_key: str | None = Header(None, alias=idempotency.HEADER,
                                         description="makes a retry safe: same key within 24 h, same answer"),
    dry_run: bool = Query(False, description="check the sweep and every trial; answer the trials, queue nothing"),
    creds: Credentials = Depends(credentials),
    ctx: AppContext = Depends(get_ctx),
) -> JSONResponse:
    """Submit a sweep (YAML or JSON: ``base``, ``parameters``, ``method``, ``max_trials``, ``max_concurrent``,
    ``budget_gpu_hours``, ``metric``, ``mode``, ``early_stop``; see the user guide). Every trial's spec is
    checked like a submit before any is queued; a refused trial refuses the sweep, its errors under
    ``trials[i].<field>``. Then every trial is queued as a task of its own.

    An ``Idempotency-Key`` header works as for ``POST /api/v2/tasks``: the same key from the same user within
    24 h answers the first answer again (header ``Idempotent-Replayed: true``) and never makes a second sweep;
    the same key with a different sweep is refused (409 ``idempotency_key_reused``). A dry run ignores it."""
    raw = await read_capped(request, ctx.settings.max_spec_bytes)
    content_type = request.headers.get("content-type")

    def work() -> idempotency.Made | idempotency.Replay:
        principal = creds.principal()
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ClientError("body is not UTF-8 text", code="invalid_sweep",
                              errors=[FieldError("(body)", None, "send the sweep as UTF-8 YAML or JSON")]) from None
        key = None if dry_run else idempotency.parse_key(idempotency_key)  # a dry run stores nothing, a key included

        def make(session: Session) -> idempotency.Made:
            policy = tasks_svc.policy_for(session, principal, ctx.policy)
            done = svc.submit_sweep(session, principal, body, policy=policy, content_type=content_type,
                                    max_bytes=ctx.settings.max_spec_bytes, checks=ctx.checks, dry_run=dry_run)
            out = SweepSubmitOut(
                sweep_id=done.sweep.id if done.sweep else None,
                trials=[TrialOut(trial=t.index, params=t.params, task_id=tid, status="QUEUED" if tid else None,
                                 spec=None if tid else t.spec)
                        for t, tid in zip(done.trials, done.task_ids or [None] * len(done.trials), strict=True)])
            return idempotency.Made(out.sweep_id or "", 201, out.model_dump(mode="json"))

        if key is None:
            with ctx.db.session() as session:
                return make(session)
        return idempotency.submit_once(ctx.db.session, principal.id, key,
                                       idempotency.request_hash(body, content_type, "sweeps"), make)

    out = await run_in_threadpool(work)
    if isinstance(out, idempotency.Made):
        ctx.wake()
    return keyed_answer(out)


@router.get("", response_model=list[SweepOut])
def list_sweeps(
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
    ctx: AppContext = Depends(get_ctx),
) -> list[SweepOut]:
    """Your sweeps, newest first (an admin's: everyone's), with their trials."""
    now = datetime.now(UTC)
    return [_out(session, svc.sweep_view(session, s, ctx.layout, now)) for s in svc.list_sweeps(session, principal)]


@router.get("/{sweep_id}", response_model=SweepOut, responses={404: {"model": ErrorOut}})
def get_sweep(
    sweep_id: str,
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
    ctx: AppContext = Depends(get_ctx),
) -> SweepOut:
    """One sweep: its trials (parameters, task, status, the metric per validated step), resource-hours used and
    the best trial so far."""
    row = svc.get_sweep(session, principal, sweep_id)
    return _out(session, svc.sweep_view(session, row, ctx.layout, datetime.now(UTC)))


@router.post("/{sweep_id}/cancel", response_model=SweepOut, responses={404: {"model": ErrorOut},
                                                                      409: {"model": ErrorOut}})
def cancel_sweep(
    sweep_id: str,
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
    ctx: AppContext = Depends(get_ctx),
) -> SweepOut:
    """Cancel the sweep: its queued trials end now, its running ones are stopped."""
    row = svc.cancel_sweep(session, principal, sweep_id)
    ctx.wake()
    return _out(session, svc.sweep_view(session, row, ctx.layout, datetime.now(UTC)))
