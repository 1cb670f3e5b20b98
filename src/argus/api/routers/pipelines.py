"""/api/v2/pipelines: submit a pipeline (checked whole), list, read, cancel (issue 38)."""

from __future__ import annotations

from datetime import datetime
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
from argus.core.messages import known_fields
from argus.errors import ClientError, FieldError
from argus.services import idempotency
from argus.services import pipelines as svc
from argus.services import tasks as tasks_svc
from argus.services.principal import Principal

PREFIX = "pipeline."  # the codes of a pipeline's and its steps' messages (issue 37), known from the English
router = APIRouter(prefix="/api/v2/pipelines", tags=["pipelines"])


class StepOut(BaseModel):
    name: str
    action: str = Field(description="spec (a task), export, evaluate or register")
    needs: list[str]
    status: str = Field(description="waiting, running, succeeded, failed, skipped (a gate, or a step it needs "
                        "did not succeed) or canceled")
    task_id: str | None = None
    tries: int = 0
    message: str | None = None
    message_code: str | None = Field(None, description="issue 37: the message's code (pipeline.*), known from its text")
    message_params: dict[str, Any] | None = None
    gate: str | None = Field(None, description="how its gate was passed")
    gate_code: str | None = None
    gate_params: dict[str, Any] | None = None
    artifacts: dict[str, Any] = Field({}, description="task_id, job_dir, checkpoint, hf_path, scores; model, path")


class PipelineOut(BaseModel):
    pipeline_id: str
    name: str
    user: str
    status: str = Field(description="RUNNING, SUCCEEDED (every step settled, none failed), FAILED or CANCELED")
    message: str | None
    message_code: str | None = Field(None, description="issue 37: the message's code (pipeline.*), known from its text")
    message_params: dict[str, Any] | None = None
    created_at: datetime
    finished_at: datetime | None
    steps: list[StepOut]


def _out(session: Session, row: Any) -> PipelineOut:
    spec = row.spec["steps"]
    return PipelineOut(
        pipeline_id=row.id, name=row.name, user=tasks_svc.user_name_of(session, row), status=row.status,
        **known_fields("message", row.message, PREFIX), created_at=row.created_at, finished_at=row.finished_at,
        steps=[StepOut(name=n, action=next(k for k in ("spec", "export", "evaluate", "register") if k in spec[n]),
                       needs=spec[n].get("needs", []), status=st["status"], task_id=st.get("task_id"),
                       tries=st.get("tries", 0), **known_fields("message", st.get("message"), PREFIX),
                       **known_fields("gate", st.get("gate"), PREFIX),
                       artifacts=st.get("artifacts") or {}) for n, st in row.state.items()])


@router.post("", status_code=201, response_model=PipelineOut | None, openapi_extra=SPEC_BODY,
             responses={400: {"model": ErrorOut}, 409: {"model": ErrorOut}})
async def submit_pipeline(
    request: Request,
    idempotency_key: str | None = Header(None, alias=idempotency.HEADER,
                                         description="makes a retry safe: same key within 24 h, same answer"),
    dry_run: bool = Query(False, description="check the pipeline and its steps; store nothing (answers null)"),
    creds: Credentials = Depends(credentials),
    ctx: AppContext = Depends(get_ctx),
) -> JSONResponse:
    """Submit a pipeline (``kind: pipeline``: named steps, each a task ``spec`` or an ``export``, ``evaluate``
    or ``register`` of a step it ``needs``; ``{{ steps.X.checkpoint }}``-style references; ``retries``; a
    ``when`` gate). Every step's spec is checked first (placeholders for the references); then its first steps
    start on the scheduler's next look.

    An ``Idempotency-Key`` header works as for ``POST /api/v2/tasks``: the same key from the same user within
    24 h answers the first answer again (header ``Idempotent-Replayed: true``) and never makes a second
    pipeline; the same key with a different pipeline is refused (409 ``idempotency_key_reused``). A dry run
    ignores it."""
    raw = await read_capped(request, ctx.settings.max_spec_bytes)
    content_type = request.headers.get("content-type")

    def work() -> idempotency.Made | idempotency.Replay | None:
        principal = creds.principal()
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ClientError("body is not UTF-8 text", code="invalid_pipeline", errors=[
                FieldError("(body)", None, "send the pipeline as UTF-8 YAML or JSON")]) from None
        admission = svc.Admission(ctx.policy, ctx.checks, ctx.settings.max_spec_bytes)
        if dry_run:  # before any Idempotency-Key handling: a dry run stores nothing, a key included
            with ctx.db.session() as session:
                svc.submit_pipeline(session, principal, body, content_type=content_type, dry_run=True,
                                    admission=admission)
            return None
        key = idempotency.parse_key(idempotency_key)

        def make(session: Session) -> idempotency.Made:
            row = svc.submit_pipeline(session, principal, body, content_type=content_type, admission=admission)
            assert row is not None
            return idempotency.Made(row.id, 201, _out(session, row).model_dump(mode="json"))

        if key is None:
            with ctx.db.session() as session:
                return make(session)
        return idempotency.submit_once(ctx.db.session, principal.id, key,
                                       idempotency.request_hash(body, content_type, "pipelines"), make)

    out = await run_in_threadpool(work)
    if out is None:
        return JSONResponse(None, status_code=201)
    ctx.wake()
    return keyed_answer(out)


@router.get("", response_model=list[PipelineOut])
def list_pipelines(principal: Principal = Depends(current_principal),
                   session: Session = Depends(get_session, scope="function")) -> list[PipelineOut]:
    """Your pipelines, newest first (an admin's: everyone's), with their steps."""
    return [_out(session, r) for r in svc.list_pipelines(session, principal)]


@router.get("/{pipeline_id}", response_model=PipelineOut, responses={404: {"model": ErrorOut}})
def get_pipeline(pipeline_id: str, principal: Principal = Depends(current_principal),
                 session: Session = Depends(get_session, scope="function")) -> PipelineOut:
    """One pipeline: each step's status, task, tries, gate, artifacts and why it failed or was skipped."""
    return _out(session, svc.get_pipeline(session, principal, pipeline_id))


@router.post("/{pipeline_id}/cancel", response_model=PipelineOut,
             responses={404: {"model": ErrorOut}, 409: {"model": ErrorOut}})
def cancel_pipeline(pipeline_id: str, principal: Principal = Depends(current_principal),
                    session: Session = Depends(get_session, scope="function"),
                    ctx: AppContext = Depends(get_ctx)) -> PipelineOut:
    """Cancel the pipeline: its running step's task is stopped, the steps not yet run are canceled."""
    row = svc.cancel_pipeline(session, principal, pipeline_id)
    ctx.wake()
    return _out(session, row)
