"""/api/v2/teams: teams, their members and roles, and each user's default team (issue 26).

Site admins create, change and delete teams; a team's admins add and remove members and set roles;
any member may leave. A team the caller is not in (and cannot administer) answers 404 like any
other thing that is not theirs. Every change is written to the audit log with the change.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from argus.api.context import AppContext
from argus.api.deps import client_ip, current_principal, get_ctx, get_session
from argus.api.schemas import ErrorOut
from argus.services import audit
from argus.services import teams as svc
from argus.services.files import retire_team_folder
from argus.services.principal import Principal
from argus.services.tasks import stop_for_lost_team
from argus.services.team_load import TeamLoad, team_load

router = APIRouter(prefix="/api/v2/teams", tags=["teams"])
_ERR = {400: {"model": ErrorOut}, 403: {"model": ErrorOut}, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}}


class TeamSettingsIn(BaseModel):
    """A team's weight and limits; a limit set to null is removed (no limit)."""

    model_config = ConfigDict(extra="forbid")
    weight: float | None = Field(None, description="share under contention; 1 by default, 2 gets twice the share")
    max_gpus: int | None = Field(None, description="GPUs the team's tasks may hold at once")
    max_running_tasks: int | None = None
    gpu_hours_month: float | None = Field(None, description="GPU-hours per calendar month (UTC)")
    quota_bytes: int | None = Field(None, description="storage quota of the team folder")


class TeamIn(TeamSettingsIn):
    name: str


class MemberIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str
    role: str = Field("member", description="member or admin (a team admin manages the team's members)")


class RoleIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: str


class MemberOut(BaseModel):
    name: str
    role: str
    is_default: bool = Field(description="this is the member's default team")


class TeamOut(BaseModel):
    name: str
    weight: float
    max_gpus: int | None
    max_running_tasks: int | None
    gpu_hours_month: float | None
    quota_bytes: int | None
    my_role: str | None = Field(description="your role in the team; null when you administer it without being in it")
    member_count: int
    members: list[MemberOut] | None = Field(None, description="in GET /teams/{name} only")
    running_tasks: int = Field(0, description="the team's tasks starting, running or being canceled now")
    gpus_held: int = Field(0, description="GPUs those tasks hold")
    gpu_hours_used_month: float = Field(0.0, description="GPU-hours charged to the team this calendar month (UTC), "
                                                         "against gpu_hours_month")


def _out(team: Any, role: svc.TeamRole | None, count: int, members: tuple[svc.Member, ...] | None = None,
         load: TeamLoad | None = None) -> TeamOut:
    load = load or TeamLoad()
    return TeamOut(name=team.name, weight=team.weight, max_gpus=team.max_gpus,
                   max_running_tasks=team.max_running_tasks, gpu_hours_month=team.gpu_hours_month,
                   quota_bytes=team.quota_bytes, my_role=role.value if role else None, member_count=count,
                   members=None if members is None else [MemberOut(name=m.name, role=m.role.value,
                                                                   is_default=m.is_default) for m in members],
                   running_tasks=load.running_tasks, gpus_held=load.gpus_held,
                   gpu_hours_used_month=round(load.gpu_hours_month, 4))


def _view_out(session: Session, view: svc.TeamView) -> TeamOut:
    return _out(view.team, view.my_role, len(view.members), view.members,
                team_load(session, [view.team.name])[view.team.name])


def _settings(body: TeamSettingsIn) -> dict[str, Any]:
    return body.model_dump(exclude_unset=True, exclude={"name"})


@router.get("", response_model=list[TeamOut])
def list_teams(principal: Principal = Depends(current_principal),
               session: Session = Depends(get_session, scope="function")) -> list[TeamOut]:
    """Your teams (a site admin: every team), each with its use now and this month."""
    teams = svc.list_teams(session, principal)
    load = team_load(session, [t.name for t, _, _ in teams])
    return [_out(t, r, n, load=load[t.name]) for t, r, n in teams]


@router.post("", status_code=201, response_model=TeamOut, responses=_ERR)
def create_team(body: TeamIn, request: Request, principal: Principal = Depends(current_principal),
                session: Session = Depends(get_session, scope="function")) -> TeamOut:
    """Create a team (site admins). Add members with POST /teams/{name}/members."""
    team = svc.create_team(session, principal, body.name, _settings(body))
    audit.record(session, actor=principal.name, action=audit.TEAM_CREATED, target=team.name,
                 detail=_settings(body) or None, source_ip=client_ip(request))
    return _out(team, None, 0, ())


@router.get("/{name}", response_model=TeamOut, responses=_ERR)
def get_team(name: str, principal: Principal = Depends(current_principal),
             session: Session = Depends(get_session, scope="function")) -> TeamOut:
    return _view_out(session, svc.get_team(session, principal, name))


@router.patch("/{name}", response_model=TeamOut, responses=_ERR)
def update_team(name: str, body: TeamSettingsIn, request: Request, principal: Principal = Depends(current_principal),
                session: Session = Depends(get_session, scope="function")) -> TeamOut:
    """Change a team's weight, quotas or budget (site admins)."""
    changes = _settings(body)
    team = svc.update_team(session, principal, name, changes)
    audit.record(session, actor=principal.name, action=audit.TEAM_CHANGED, target=team.name, detail=changes,
                 source_ip=client_ip(request))
    return _view_out(session, svc.get_team(session, principal, name))


@router.delete("/{name}", status_code=204, responses=_ERR)
def delete_team(name: str, request: Request, principal: Principal = Depends(current_principal),
                session: Session = Depends(get_session, scope="function"),
                ctx: AppContext = Depends(get_ctx)) -> Response:
    svc.delete_team(session, principal, name)
    kept = retire_team_folder(ctx.settings.root, name)
    audit.record(session, actor=principal.name, action=audit.TEAM_DELETED, target=name, source_ip=client_ip(request),
                 detail={"folder_kept_as": f"teams/{kept}"} if kept else None)
    return Response(status_code=204)


@router.post("/{name}/members", status_code=201, response_model=MemberOut, responses=_ERR)
def add_member(name: str, body: MemberIn, request: Request, principal: Principal = Depends(current_principal),
               session: Session = Depends(get_session, scope="function")) -> MemberOut:
    """Add a user to the team (site admins and the team's admins). A user's first team becomes their default."""
    m = svc.add_member(session, principal, name, body.user, body.role)
    audit.record(session, actor=principal.name, action=audit.TEAM_MEMBER_ADDED, target=name,
                 detail={"user": m.name, "role": m.role.value}, source_ip=client_ip(request))
    return MemberOut(name=m.name, role=m.role.value, is_default=m.is_default)


@router.patch("/{name}/members/{user}", response_model=MemberOut, responses=_ERR)
def set_role(name: str, user: str, body: RoleIn, request: Request, principal: Principal = Depends(current_principal),
             session: Session = Depends(get_session, scope="function")) -> MemberOut:
    m = svc.set_role(session, principal, name, user, body.role)
    audit.record(session, actor=principal.name, action=audit.TEAM_ROLE_CHANGED, target=name,
                 detail={"user": m.name, "role": m.role.value}, source_ip=client_ip(request))
    return MemberOut(name=m.name, role=m.role.value, is_default=m.is_default)


@router.delete("/{name}/members/{user}", status_code=204, responses=_ERR)
def remove_member(name: str, user: str, request: Request, principal: Principal = Depends(current_principal),
                  session: Session = Depends(get_session, scope="function")) -> Response:
    """Remove a member (the team's admins), or leave the team (yourself). Their running tasks are stopped:
    those show the team's folder read-write."""
    user_id = svc.remove_member(session, principal, name, user)
    stopped = stop_for_lost_team(session, user_id, name, actor=principal.name)
    audit.record(session, actor=principal.name, action=audit.TEAM_MEMBER_REMOVED, target=name,
                 detail={"user": user, **({"stopped_tasks": stopped} if stopped else {})}, source_ip=client_ip(request))
    return Response(status_code=204)


@router.post("/{name}/default", status_code=204, responses=_ERR)
def make_default(name: str, principal: Principal = Depends(current_principal),
                 session: Session = Depends(get_session, scope="function")) -> Response:
    """Charge your tasks to this team when a spec names none."""
    svc.set_default_team(session, principal, name)
    return Response(status_code=204)
