"""/api/v2/models: the model registries (issue 38) — register versions, read them with lineage and scores, move
aliases — yours and your teams'.

A model is referred to as ``name`` (yours) or ``team/name`` (a team's), a version as ``[team/]name:N`` or
``[team/]name@alias``. Neither a model nor a team name holds a ``/``, so the paths are unambiguous:
``GET /api/v2/models/{ref}`` takes the reference as a path (``{ref:path}``: ``nlp/tiny@production`` arrives
whole, whether its ``/`` is sent as is or as ``%2F``), and ``PUT /api/v2/models/{model}/aliases/{alias}`` ends
with the only ``/aliases/`` segment an alias name (no ``/``) can follow."""

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
from argus.core import model_refs as refs
from argus.services import model_registries as regs
from argus.services import registry as svc
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2/models", tags=["models"])


class RegisterIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=64, description="the model's name: 1-64 letters, digits, '.', '_', '-'")
    task_id: str | None = Field(None, max_length=64, description="a task of yours: a complete checkpoint step of "
                                "it, or, for an export task, the folder it wrote. A task charged to a team "
                                "registers into that team's registry")
    step: int | None = Field(None, ge=0, description="with task_id: the step (default: the latest complete one)")
    best: str | None = Field(None, max_length=256, description="with task_id: the step that scored best on this "
                             "metric in its evaluations, instead of step")
    mode: Literal["max", "min"] = "max"
    path: str | None = Field(None, max_length=4096, description="instead of task_id: a Hugging Face folder in your "
                             "home ($HOME/models/…) or in a team's folder you are in ($HOME/teams/<team>/…: that "
                             "team's registry, readable by all its members)")
    team: str | None = Field(None, max_length=64, description="register into this team's registry (you must be in "
                             "it); a task charged to a team, or a folder in a team's folder, decides by itself")


class VersionOut(BaseModel):
    name: str
    team: str | None = Field(description="the team whose registry holds it; null: yours")
    ref: str = Field(description="how to refer to it: name:N or team/name:N")
    version: int
    kind: str = Field(description="checkpoint (a verl global_step_N folder) or hf (a Hugging Face folder)")
    path: str = Field(description="where it is, as its registrant writes it ($HOME/… is their home): a model_id, "
                      "or a resume/eval checkpoint")
    registered_by: str
    shared: bool = Field(description="whether every member of its team can read its files (a path in the team's "
                         "folder); false for a version in its registrant's home, and for your own models")
    hint: str | None = Field(description="for a team version that is not shared: how its registrant shares it")
    source_task: str | None
    step: int | None
    scores: dict[str, Any] | None = Field(description="its evaluation's scores when registered")
    lineage: dict[str, Any] = Field(description="task, task_name, workload, spec (resolved), env, verl, files "
                                    "(path, bytes, sha256) as they were when registered")
    aliases: list[str]
    created_at: datetime


class RegisteredOut(VersionOut):
    why: str | None = Field(description="why it went to a team's registry without being asked (the task is "
                            "charged to the team, or the folder is in the team's folder)")


class ModelOut(BaseModel):
    name: str
    team: str | None = Field(description="the team whose registry holds it; null: yours")
    ref: str = Field(description="name, or team/name for a team's model")
    versions: int
    latest: int
    aliases: dict[str, int]


class ModelDetailOut(BaseModel):
    name: str
    team: str | None
    ref: str
    can_move_aliases: bool = Field(description="whether you may move its aliases (a team's: its admins)")
    aliases: dict[str, int]
    versions: list[VersionOut]


class AliasIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1)


def _version(row: Any, team: str | None, alias_map: dict[str, int], registrant: str) -> VersionOut:
    """A services.registry version row as the API shows it, with whether its team can read its files."""
    shared = refs.is_shared(team, row.path)
    hint = None if team is None or shared else refs.sharing_hint(
        team=team, name=row.name, kind=row.kind, path=row.path, registrant=registrant, source_task=row.source_task,
        step=row.step)
    return VersionOut(name=row.name, team=team, ref=refs.shown(team, row.name, row.version), version=row.version,
                      kind=row.kind, path=row.path, registered_by=registrant, shared=shared, hint=hint,
                      source_task=row.source_task, step=row.step, scores=row.scores, lineage=row.lineage,
                      created_at=row.created_at, aliases=sorted(a for a, v in alias_map.items() if v == row.version))


@router.post("", status_code=201, response_model=RegisteredOut, responses={400: {"model": ErrorOut},
                                                                           403: {"model": ErrorOut},
                                                                           404: {"model": ErrorOut},
                                                                           409: {"model": ErrorOut}})
def register(
    body: RegisterIn = Body(...),
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
    ctx: AppContext = Depends(get_ctx),
) -> RegisteredOut:
    """Register the next version of ``name``: a task's complete checkpoint (``step``, the latest, or ``best`` by
    a metric its evaluations scored), an export task's folder, or a Hugging Face folder (``path``). Its lineage
    (the task's resolved spec, environment, verl, SHA-256 of its data and reward files) and the step's
    evaluation scores are recorded as they are now. It goes to a team's registry when its folder is in the
    team's folder, when its task is charged to the team, or when ``team`` names one of yours (``why`` says
    which); a team you are not in is 404 ``team_not_found``, a team your task is charged to and you left 403."""
    envs = env_registry(ctx)

    def verl_of(env: str) -> str | None:
        found = envs.get(env, principal.name)
        return found.verl if found is not None else None

    done = svc.register(session, principal, body.name, layout=ctx.layout, task_id=body.task_id, step=body.step,
                        best=body.best, mode=body.mode, path=body.path, team=body.team, verl_of=verl_of)
    out = _version(done.version, done.team, {}, principal.name)
    return RegisteredOut(**out.model_dump(), why=done.why)


@router.get("", response_model=list[ModelOut])
def list_models(
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
) -> list[ModelOut]:
    """Your models, then those of each team you are in (``team``, ``ref`` = ``team/name``): how many versions,
    the latest, the aliases."""
    return [ModelOut(name=m.name, team=m.team, ref=refs.shown(m.team, m.name), versions=m.versions,
                     latest=m.latest, aliases=m.aliases) for m in regs.listing(session, principal)]


@router.get("/{ref:path}", response_model=ModelDetailOut, responses={400: {"model": ErrorOut},
                                                                     404: {"model": ErrorOut}})
def get_model(
    ref: str,
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
) -> ModelDetailOut:
    """One model, ``name`` or ``team/name``: every version with its path, lineage and scores, and its aliases.
    ``[team/]name@alias`` and ``[team/]name:N`` name one version (the answer then lists only it). A team's model
    is readable by its members; for anyone else it does not exist (404 ``model_not_found``). A malformed
    reference is a 400 naming ``ref``, ``team`` or ``name``."""
    parsed = refs.parse_ref(ref)
    if parsed.version is not None or parsed.alias is not None:
        reg, one = regs.resolve(session, principal, ref)
        rows = [one]
    else:
        reg, rows = regs.versions(session, principal, parsed)
    alias_map = {a.alias: a.version for a in regs.aliases(session, principal, reg, parsed.name)}
    names = regs.registrants(session, rows)
    return ModelDetailOut(name=parsed.name, team=reg.team, ref=parsed.model,
                          can_move_aliases=regs.may_move(principal, reg), aliases=alias_map,
                          versions=[_version(r, reg.team, alias_map, names.get(r.user_id, "?")) for r in rows])


@router.put("/{model:path}/aliases/{alias}", response_model=ModelDetailOut,
            responses={400: {"model": ErrorOut}, 403: {"model": ErrorOut}, 404: {"model": ErrorOut}})
def set_alias(
    model: str,
    alias: str,
    body: AliasIn = Body(...),
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
) -> ModelDetailOut:
    """Point ``model@alias`` (``name`` or ``team/name``) at a version (``candidate``, ``production``): an audit
    event and a MODEL_ALIAS notification — to your channels for your own model, to every member's channels for
    a team's. A team's aliases are moved by its admins: a member gets 403 ``team_admin_required``."""
    regs.set_alias(session, principal, model, alias, body.version)
    return get_model(model, principal, session)
