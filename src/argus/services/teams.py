"""Teams and their members (issue 26): who is in which team, with which role, and their default team.

Site admins create teams and set a team's weight, quotas and budget; a team's admins manage its
members. A team is invisible to a user who is neither in it nor a site admin (every lookup answers
"no team named …", as for another user's task), so team names do not leak across groups.

Each user has at most one *default* team — where their tasks are charged when a spec names none. A site
admin's enrolment of someone in no team makes it theirs; a team admin's never changes it (a team admin
may add only people already in another team they administer: ``core.teams.may_enrol``); leaving it moves
the default to another of their teams. A member who leaves or is removed keeps no write access to the
team's folder: their running tasks, which show it, are stopped (``tasks.stop_for_lost_team``).
Every change is recorded in the audit log by the caller (api/routers/teams.py), in the same
transaction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from argus.core import accounting
from argus.core.messages import field_error, refusal
from argus.core.states import ACTIVE, LIVE_ATTEMPT
from argus.core.teams import (
    MAX_WEIGHT,
    TEAM_NAME_RE,
    TeamRole,
    budget_problem,
    leaves_team_without_admin,
    may_change_team,
    may_enrol,
    may_manage_members,
    month_window,
)
from argus.db.models import TaskAttemptModel, TaskModel, TeamMemberModel, TeamModel, UserModel
from argus.errors import ClientError, Conflict, FieldError, Forbidden, NotFound
from argus.services.principal import Principal
from argus.services.users import get_user

LIMIT_FIELDS = ("max_gpus", "max_running_tasks", "gpu_hours_month", "quota_bytes")


@dataclass(frozen=True)
class Member:
    name: str
    role: TeamRole
    is_default: bool


@dataclass(frozen=True)
class TeamView:
    """A team as one user sees it: ``my_role`` is None for a site admin who is not a member."""

    team: TeamModel
    my_role: TeamRole | None
    members: tuple[Member, ...]


def validate_team_name(name: object) -> str:
    if not isinstance(name, str) or not TEAM_NAME_RE.fullmatch(name):
        raise refusal(ClientError, "invalid_team", "team.name_invalid", errors=[field_error("name", name, "name.rule")])
    return name


def _role(value: object, field: str = "role") -> TeamRole:
    try:
        return TeamRole(value)
    except ValueError:
        raise refusal(ClientError, "invalid_team_role", "team.role_invalid",
                      errors=[field_error(field, value, "team.role_rule")]) from None


def check_settings(changes: dict[str, Any]) -> dict[str, Any]:
    """A team's weight and limits, validated: every bad value is named at once."""
    errors: list[FieldError] = []
    out: dict[str, Any] = {}
    for key, value in changes.items():
        if key == "weight":
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                    or not 0 < value <= MAX_WEIGHT:
                errors.append(field_error("weight", value, "team.weight_rule", max=MAX_WEIGHT))
                continue
        elif key in ("max_gpus", "max_running_tasks", "quota_bytes"):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                errors.append(field_error(key, value, "team.limit_rule"))
                continue
        elif key == "gpu_hours_month":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value) or value < 0):
                errors.append(field_error(key, value, "team.budget_rule"))
                continue
        else:
            errors.append(field_error(key, value, "team.setting_unknown", settings=", ".join(LIMIT_FIELDS)))
            continue
        out[key] = value
    if errors:
        raise refusal(ClientError, "invalid_team_settings", "team.settings_invalid", errors=errors)
    return out


def _team(session: Session, name: str) -> TeamModel | None:
    return session.scalar(select(TeamModel).where(TeamModel.name == name))


def _roles(session: Session, team_id: int) -> dict[str, TeamRole]:
    rows = session.execute(select(UserModel.name, TeamMemberModel.role)
                           .join(UserModel, UserModel.id == TeamMemberModel.user_id)
                           .where(TeamMemberModel.team_id == team_id))
    return {name: TeamRole(role) for name, role in rows}


def _visible(session: Session, actor: Principal, name: str) -> tuple[TeamModel, TeamRole | None]:
    """The team and the actor's role in it; "no team" for a team the actor may not see."""
    team = _team(session, name) if isinstance(name, str) else None
    role = None
    if team is not None:
        row = session.get(TeamMemberModel, (team.id, actor.id))
        role = TeamRole(row.role) if row is not None else None
    if team is None or (role is None and not actor.is_admin):
        raise refusal(NotFound, "team_not_found", "team.not_found", team=repr(name))
    return team, role


def _members(session: Session, team_id: int) -> tuple[Member, ...]:
    rows = session.execute(select(UserModel.name, TeamMemberModel.role, TeamMemberModel.is_default)
                           .join(UserModel, UserModel.id == TeamMemberModel.user_id)
                           .where(TeamMemberModel.team_id == team_id).order_by(UserModel.name))
    return tuple(Member(n, TeamRole(r), bool(d)) for n, r, d in rows)


def create_team(session: Session, actor: Principal, name: str, settings: dict[str, Any] | None = None) -> TeamModel:
    if not may_change_team(site_admin=actor.is_admin):
        raise refusal(Forbidden, "forbidden", "team.create_admins_only")
    validate_team_name(name)
    values = check_settings(settings or {})
    if _team(session, name) is not None:
        raise refusal(Conflict, "team_exists", "team.exists", team=repr(name),
                      errors=[field_error("name", name, "team.name_taken")])
    team = TeamModel(name=name, **values)
    session.add(team)
    session.flush()
    return team


def update_team(session: Session, actor: Principal, name: str, changes: dict[str, Any]) -> TeamModel:
    team, _ = _visible(session, actor, name)
    if not may_change_team(site_admin=actor.is_admin):
        raise refusal(Forbidden, "forbidden", "team.change_admins_only")
    for key, value in check_settings(changes).items():
        setattr(team, key, value)
    return team


def delete_team(session: Session, actor: Principal, name: str) -> None:
    team, _ = _visible(session, actor, name)
    if not actor.is_admin:
        raise refusal(Forbidden, "forbidden", "team.delete_admins_only")
    affected = [m.user_id for m in session.scalars(select(TeamMemberModel).where(
        TeamMemberModel.team_id == team.id, TeamMemberModel.is_default.is_(True)))]
    session.delete(team)
    session.flush()
    for user_id in affected:
        _pick_default(session, user_id)


def list_teams(session: Session, actor: Principal) -> list[tuple[TeamModel, TeamRole | None, int]]:
    """The teams the actor is in (a site admin: every team), with their role and the member count."""
    counts = (select(TeamMemberModel.team_id, func.count().label("n"))
              .group_by(TeamMemberModel.team_id).subquery())
    mine = select(TeamMemberModel.team_id, TeamMemberModel.role).where(
        TeamMemberModel.user_id == actor.id).subquery()
    q = (select(TeamModel, mine.c.role, func.coalesce(counts.c.n, 0))
         .outerjoin(mine, mine.c.team_id == TeamModel.id)
         .outerjoin(counts, counts.c.team_id == TeamModel.id).order_by(TeamModel.name))
    if not actor.is_admin:
        q = q.where(mine.c.role.is_not(None))
    return [(t, TeamRole(r) if r else None, int(n)) for t, r, n in session.execute(q)]


def get_team(session: Session, actor: Principal, name: str) -> TeamView:
    team, role = _visible(session, actor, name)
    return TeamView(team, role, _members(session, team.id))


def _may_manage(actor: Principal, team: TeamModel, role: TeamRole | None) -> None:
    if not may_manage_members(site_admin=actor.is_admin, role=role):
        raise refusal(Forbidden, "forbidden", "team.members_admins_only", team=repr(team.name))


def _check_keeps_admin(session: Session, actor: Principal, team: TeamModel, user: str,
                       new_role: TeamRole | None) -> None:
    if not actor.is_admin and leaves_team_without_admin(_roles(session, team.id), user, new_role):
        raise refusal(Conflict, "last_team_admin", "team.last_admin", team=repr(team.name),
                      errors=[field_error("user", user, "team.last_admin_field")])


def add_member(session: Session, actor: Principal, name: str, user_name: str, role: object = "member") -> Member:
    team, my_role = _visible(session, actor, name)
    _may_manage(actor, team, my_role)
    new_role = _role(role)
    if not may_enrol(site_admin=actor.is_admin, in_a_team_they_administer=_administered_by(session, actor, user_name)):
        # the same answer whether the user exists or not: a team admin learns no account names here
        raise refusal(Forbidden, "forbidden", "team.enrol_refused", user=repr(user_name), team=repr(name),
                      errors=[field_error("user", user_name, "team.enrol_refused_field")])
    user = get_user(session, user_name)
    if session.get(TeamMemberModel, (team.id, user.id)) is not None:
        raise refusal(Conflict, "already_member", "team.already_member", user=repr(user_name), team=repr(name),
                      errors=[field_error("user", user_name, "team.already_member_field")])
    first = session.scalar(select(TeamMemberModel.team_id).where(TeamMemberModel.user_id == user.id).limit(1)) is None
    default = first and actor.is_admin  # a team admin's enrolment never chooses where someone's tasks are charged
    session.add(TeamMemberModel(team_id=team.id, user_id=user.id, role=new_role.value, is_default=default))
    session.flush()
    return Member(user.name, new_role, default)


def _administered_by(session: Session, actor: Principal, user_name: object) -> bool:
    """Whether ``user_name`` is in a team where ``actor`` is an admin."""
    if not isinstance(user_name, str):
        return False
    mine = select(TeamMemberModel.team_id).where(TeamMemberModel.user_id == actor.id,
                                                 TeamMemberModel.role == TeamRole.ADMIN.value)
    return session.scalar(select(TeamMemberModel.user_id).join(UserModel, UserModel.id == TeamMemberModel.user_id)
                          .where(UserModel.name == user_name, TeamMemberModel.team_id.in_(mine)).limit(1)) is not None


def set_role(session: Session, actor: Principal, name: str, user_name: str, role: object) -> Member:
    team, my_role = _visible(session, actor, name)
    _may_manage(actor, team, my_role)
    new_role = _role(role)
    row = _membership(session, team, user_name)
    _check_keeps_admin(session, actor, team, user_name, new_role)
    row.role = new_role.value
    return Member(user_name, new_role, row.is_default)


def remove_member(session: Session, actor: Principal, name: str, user_name: str) -> int:
    """A team admin (or a site admin) removes a member; any member may leave a team themselves. Returns the
    removed user's id (the caller stops their running tasks: ``tasks.stop_for_lost_team``)."""
    team, my_role = _visible(session, actor, name)
    if user_name != actor.name:
        _may_manage(actor, team, my_role)
    row = _membership(session, team, user_name)
    _check_keeps_admin(session, actor, team, user_name, None)
    user_id, was_default = row.user_id, row.is_default
    session.delete(row)
    session.flush()
    if was_default:
        _pick_default(session, user_id)
    return user_id


def _membership(session: Session, team: TeamModel, user_name: str) -> TeamMemberModel:
    user = session.scalar(select(UserModel).where(UserModel.name == user_name)) if isinstance(user_name, str) else None
    row = session.get(TeamMemberModel, (team.id, user.id)) if user is not None else None
    if row is None:
        raise refusal(NotFound, "not_member", "team.not_member", user=repr(user_name), team=repr(team.name),
                      errors=[field_error("user", user_name, "team.not_member_field")])
    return row


def _pick_default(session: Session, user_id: int) -> None:
    """After a user left their default team: the team they joined first of those left becomes it."""
    rows = list(session.scalars(select(TeamMemberModel).where(TeamMemberModel.user_id == user_id)
                                .order_by(TeamMemberModel.added_at, TeamMemberModel.team_id)))
    if rows and not any(r.is_default for r in rows):
        rows[0].is_default = True


def set_default_team(session: Session, actor: Principal, name: str) -> None:
    """The team the actor's tasks are charged to when a spec names none; they must be in it."""
    team = _team(session, name) if isinstance(name, str) else None
    row = session.get(TeamMemberModel, (team.id, actor.id)) if team is not None else None
    if row is None:
        raise refusal(NotFound, "team_not_found", "team.not_yours", team=repr(name),
                      errors=[field_error("team", name, "team.name_yours")])
    for other in session.scalars(select(TeamMemberModel).where(TeamMemberModel.user_id == actor.id)):
        other.is_default = other.team_id == team.id


def role_in(session: Session, user_id: int, team: str) -> TeamRole | None:
    """The user's role in the team named ``team``, or None when they are not in it (or it does not exist)."""
    role = session.scalar(select(TeamMemberModel.role).join(TeamModel, TeamModel.id == TeamMemberModel.team_id)
                          .where(TeamModel.name == team, TeamMemberModel.user_id == user_id))
    return TeamRole(role) if role is not None else None


def teams_of(session: Session, user_id: int) -> list[tuple[str, TeamRole, bool]]:
    """A user's teams: name, role, and whether it is their default."""
    rows = session.execute(select(TeamModel.name, TeamMemberModel.role, TeamMemberModel.is_default)
                           .join(TeamModel, TeamModel.id == TeamMemberModel.team_id)
                           .where(TeamMemberModel.user_id == user_id).order_by(TeamModel.name))
    return [(n, TeamRole(r), bool(d)) for n, r, d in rows]


def team_gpu_seconds(session: Session, team: str, start: datetime, end: datetime, now: datetime) -> float:
    """GPU-seconds of the tasks charged to ``team`` inside ``[start, end)``; a running attempt counts up to now."""
    q = (select(TaskAttemptModel.started_at, TaskAttemptModel.finished_at, TaskAttemptModel.status,
                TaskModel.nnodes, TaskModel.n_gpus_per_node)
         .join(TaskModel, TaskModel.id == TaskAttemptModel.task_id)
         .where(TaskModel.team == team, TaskModel.n_gpus_per_node > 0, TaskAttemptModel.started_at.is_not(None),
                TaskAttemptModel.started_at < end,
                or_(TaskAttemptModel.finished_at.is_(None), TaskAttemptModel.finished_at > start)))
    total = 0.0
    for r in session.execute(q):
        if r.finished_at is None and r.status not in LIVE_ATTEMPT:
            continue
        lo, hi = accounting.clipped(r.started_at, r.finished_at or now, start, end)
        total += accounting.seconds(r.nnodes, r.n_gpus_per_node, lo, hi)
    return total


def charged_team(session: Session, actor: Principal, requested: str | None, *, now: datetime | None = None) -> str | None:
    """The team a new task of ``actor`` is charged to: the spec's ``team`` (one of theirs) or their default
    team; None when they are in no team. Refused (field ``team``) when they are not in the team named, or
    when the team's monthly GPU-hour budget is spent — at submit, with the budget's numbers."""
    mine = teams_of(session, actor.id)
    if requested is None:
        name = next((n for n, _, default in mine if default), None)
    elif any(n == requested for n, _, _ in mine):
        name = requested
    else:
        yours = ", ".join(n for n, _, _ in mine) or "none (ask a team admin to add you)"
        raise ClientError("not in that team", code="invalid_spec",
                          errors=[FieldError("team", requested, f"you are not in team {requested!r}; your teams: "
                                                                f"{yours}")])
    if name is None:
        return None
    team = _team(session, name)
    assert team is not None
    if team.gpu_hours_month is not None:
        now = now or datetime.now(UTC)
        start, end = month_window(now)
        used = team_gpu_seconds(session, name, start, end, now) / 3600.0
        problem = budget_problem(name, used, team.gpu_hours_month, start.strftime("%Y-%m"))
        if problem is not None:
            raise ClientError("team budget spent", code="team_budget_exhausted",
                              errors=[FieldError("team", name, problem)])
    return name


@dataclass(frozen=True)
class TeamFigures:
    name: str
    gpus_held: int
    gpu_hours_month: float
    budget: float | None


def team_figures(session: Session, now: datetime) -> list[TeamFigures]:
    """Every team's GPUs held now (its SUBMITTED/RUNNING/CANCELING tasks) and GPU-hours this month, for
    /metrics and usage reports. One query per team for the month: teams are few."""
    held = dict(session.execute(
        select(TaskModel.team, func.sum(TaskModel.nnodes * TaskModel.n_gpus_per_node))
        .where(TaskModel.team.is_not(None), TaskModel.status.in_([s.value for s in ACTIVE]))
        .group_by(TaskModel.team)).all())
    start, end = month_window(now)
    return [TeamFigures(t.name, int(held.get(t.name) or 0), team_gpu_seconds(session, t.name, start, end, now) / 3600.0,
                        t.gpu_hours_month)
            for t in session.scalars(select(TeamModel).order_by(TeamModel.name))]
