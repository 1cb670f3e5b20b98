"""/api/v2/models: the model registry (issue 38) — register versions, read them with lineage and scores, move
aliases."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx, get_session
from argus.api.routers.envs import registry as env_registry
from argus.api.schemas import ErrorOut
from argus.services import registry as svc
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2/models", tags=["models"])


class RegisterIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=64, description="the model's name: 1-64 letters, digits, '.', '_', '-'")
    task_id: str | None = Field(None, max_length=64, description="a task of yours: a complete checkpoint step of "
                                "it, or, for an export task, the folder it wrote")
    step: int | None = Field(None, ge=0, description="with task_id: the step (default: the latest complete one)")
    best: str | None = Field(None, max_length=256, description="with task_id: the step that scored best on this "
                             "metric in its evaluations, instead of step")
    mode: Literal["max", "min"] = "max"
    path: str | None = Field(None, max_length=4096, description="instead of task_id: a Hugging Face folder in your "
                             "home ($HOME/models/…)")


class VersionOut(BaseModel):
    name: str
    version: int
    kind: str = Field(description="checkpoint (a verl global_step_N folder) or hf (a Hugging Face folder)")
    path: str = Field(description="where it is, as you write it ($HOME/…): a model_id, or a resume/eval checkpoint")
    source_task: str | None
    step: int | None
    scores: dict[str, Any] | None = Field(description="its evaluation's scores when registered")
    lineage: dict[str, Any] = Field(description="task, task_name, workload, spec (resolved), env, verl, files "
                                    "(path, bytes, sha256) as they were when registered")
    aliases: list[str]
    created_at: datetime


class ModelOut(BaseModel):
    name: str
    versions: int
    latest: int
    aliases: dict[str, int]


class ModelDetailOut(BaseModel):
    name: str
    aliases: dict[str, int]
    versions: list[VersionOut]


class AliasIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1)


def _version(row: Any, alias_map: dict[str, int]) -> VersionOut:  # a services.registry version row
    return VersionOut(name=row.name, version=row.version, kind=row.kind, path=row.path, source_task=row.source_task,
                      step=row.step, scores=row.scores, lineage=row.lineage, created_at=row.created_at,
                      aliases=sorted(a for a, v in alias_map.items() if v == row.version))


@router.post("", status_code=201, response_model=VersionOut, responses={400: {"model": ErrorOut},
                                                                        404: {"model": ErrorOut},
                                                                        409: {"model": ErrorOut}})
def register(
    body: RegisterIn = Body(...),
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
    ctx: AppContext = Depends(get_ctx),
) -> VersionOut:
    """Register the next version of ``name``: a task's complete checkpoint (``step``, the latest, or ``best`` by
    a metric its evaluations scored), an export task's folder, or a Hugging Face folder in your home (``path``).
    Its lineage (the task's resolved spec, environment, verl, SHA-256 of its data and reward files) and the
    step's evaluation scores are recorded as they are now."""
    envs = env_registry(ctx)

    def verl_of(env: str) -> str | None:
        found = envs.get(env, principal.name)
        return found.verl if found is not None else None

    row = svc.register(session, principal, body.name, layout=ctx.layout, task_id=body.task_id, step=body.step,
                       best=body.best, mode=body.mode, path=body.path, verl_of=verl_of)
    return _version(row, {})


@router.get("", response_model=list[ModelOut])
def list_models(
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
) -> list[ModelOut]:
    """Your models: how many versions, the latest, the aliases."""
    alias_rows = svc.aliases(session, principal.id)
    return [ModelOut(name=n, versions=count, latest=latest,
                     aliases={a.alias: a.version for a in alias_rows if a.name == n})
            for n, count, latest in svc.names(session, principal)]


@router.get("/{name}", response_model=ModelDetailOut, responses={404: {"model": ErrorOut}})
def get_model(
    name: str,
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
) -> ModelDetailOut:
    """One model: every version with its path, lineage and scores, and its aliases. ``name@alias`` and
    ``name:N`` name one version (the answer then lists only it)."""
    if "@" in name or ":" in name:
        rows = [svc.resolve(session, principal, name)]
        name = rows[0].name
    else:
        rows = svc.versions(session, principal, name)
    alias_map = {a.alias: a.version for a in svc.aliases(session, principal.id, name)}
    return ModelDetailOut(name=name, aliases=alias_map, versions=[_version(r, alias_map) for r in rows])


@router.put("/{name}/aliases/{alias}", response_model=ModelDetailOut,
            responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}})
def set_alias(
    name: str,
    alias: str,
    body: AliasIn = Body(...),
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
) -> ModelDetailOut:
    """Point ``name@alias`` at a version (``candidate``, ``production``): an audit event, and a MODEL_ALIAS
    notification to your channels that subscribe to it."""
    svc.set_alias(session, principal, name, alias, body.version)
    return get_model(name, principal, session)
