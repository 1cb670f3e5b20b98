"""Model registries (issue 38): which registry a request reaches — the caller's own or a team's — what it holds,
and moving its aliases. ``services/registry.py`` registers versions into them.

* **Who sees a team's registry**: its members, and site admins (who see every team, as ``services/teams``
  does). Anyone else gets "no model 'nlp/x'" — the answer a missing model gets — so a team's models, and
  whether the team exists at all, do not leak. ``GET /api/v2/models`` lists the caller's own models and
  those of every team they are in.
* **Aliases**: a user moves their own; a team's only its admins (and site admins): ``core.model_refs
  .may_move_alias``. Every move is an audit event (target ``nlp/x@production``) and a ``MODEL_ALIAS``
  notification: a personal alias to the owner's channels with the version's task (as before teams); a team's
  to the channels of *every member of the team* — the alias says what the whole team runs, and the members
  are exactly who can read the model — with the task's payload where the version has a task, else the
  model's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from argus.core import model_refs as refs
from argus.core.teams import TeamRole
from argus.db.models import (
    ModelAliasModel,
    ModelVersionModel,
    TaskModel,
    TeamMemberModel,
    TeamModel,
    UserModel,
    utcnow,
)
from argus.errors import ClientError, Conflict, FieldError, Forbidden, NotFound
from argus.services import audit, notifications, teams
from argus.services.principal import Principal


@dataclass(frozen=True)
class Registry:
    """One registry as the caller reaches it: ``team`` None is their own; ``role`` is their role in the team
    (None for a site admin outside it)."""

    team: str | None = None
    team_id: int | None = None
    role: TeamRole | None = None

    def versions(self, principal: Principal) -> list[ColumnElement[bool]]:
        return _scope(ModelVersionModel, principal, self)

    def aliases(self, principal: Principal) -> list[ColumnElement[bool]]:
        return _scope(ModelAliasModel, principal, self)


def _scope(model: type[ModelVersionModel] | type[ModelAliasModel], principal: Principal,
           reg: Registry) -> list[ColumnElement[bool]]:
    if reg.team_id is None:
        return [model.user_id == principal.id, model.team_id.is_(None)]
    return [model.team_id == reg.team_id]


def readable(session: Session, principal: Principal, team: str | None, shown: str) -> Registry:
    """The registry ``team`` names (None: the caller's own), if the caller may read it; else "no model ``shown``"."""
    if team is None:
        return Registry()
    row = session.scalar(select(TeamModel).where(TeamModel.name == team))
    role = teams.role_in(session, principal.id, team) if row is not None else None
    if row is None or (role is None and not principal.is_admin):
        raise NotFound(f"no model {shown!r}", code="model_not_found")
    return Registry(team, row.id, role)


def writable(session: Session, principal: Principal, team: str) -> Registry:
    """Team ``team``'s registry for a member registering into it; NotFound for anyone else (a site admin outside
    the team too: the version would be theirs, from their home, in a team they are not in)."""
    row = session.scalar(select(TeamModel).where(TeamModel.name == team))
    role = teams.role_in(session, principal.id, team) if row is not None else None
    if row is None or role is None:
        mine = ", ".join(n for n, _, _ in teams.teams_of(session, principal.id)) or "none"
        raise NotFound(f"no team named {team!r} of yours", code="team_not_found", errors=[FieldError(
            "team", team, f"name one of your teams (argus team list): {mine}; or leave team out for your own "
            "registry")])
    return Registry(team, row.id, role)


def versions(session: Session, principal: Principal, ref: str | refs.ModelRef) -> tuple[Registry, list[ModelVersionModel]]:
    """Every version of a model (``name`` or ``team/name``), oldest first."""
    parsed = refs.parse_ref(ref) if isinstance(ref, str) else ref
    reg = readable(session, principal, parsed.team, parsed.model)
    rows = list(session.scalars(select(ModelVersionModel).where(
        *reg.versions(principal), ModelVersionModel.name == parsed.name).order_by(ModelVersionModel.version)))
    if not rows:
        raise NotFound(f"no model {parsed.model!r}", code="model_not_found")
    return reg, rows


def aliases(session: Session, principal: Principal, reg: Registry, name: str | None = None) -> list[ModelAliasModel]:
    query = select(ModelAliasModel).where(*reg.aliases(principal))
    if name is not None:
        query = query.where(ModelAliasModel.name == name)
    return list(session.scalars(query.order_by(ModelAliasModel.name, ModelAliasModel.alias)))


def resolve(session: Session, principal: Principal, ref: str) -> tuple[Registry, ModelVersionModel]:
    """``[team/]name`` (its latest version), ``[team/]name:3`` or ``[team/]name@production``."""
    parsed = refs.parse_ref(ref)
    reg, rows = versions(session, principal, parsed)
    number = parsed.version
    if parsed.alias is not None:
        found = next((a for a in aliases(session, principal, reg, parsed.name) if a.alias == parsed.alias), None)
        if found is None:
            raise NotFound(f"model {parsed.model!r} has no alias {parsed.alias!r}", code="alias_not_found")
        number = found.version
    if number is None:
        return reg, rows[-1]
    row = next((r for r in rows if r.version == number), None)
    if row is None:
        raise NotFound(f"model {parsed.model!r} has no version {number}", code="version_not_found")
    return reg, row


@dataclass(frozen=True)
class Summary:
    """One model in a listing: its registry's team (None: the caller's own), versions, latest and aliases."""

    team: str | None
    name: str
    versions: int
    latest: int
    aliases: dict[str, int]


def listing(session: Session, principal: Principal) -> list[Summary]:
    """The caller's own models, then those of each team they are in (by team, then name)."""
    regs = [Registry()]
    for name, role, _default in teams.teams_of(session, principal.id):
        team_id = session.scalar(select(TeamModel.id).where(TeamModel.name == name))
        regs.append(Registry(name, team_id, role))
    out: list[Summary] = []
    for reg in regs:
        alias_rows = aliases(session, principal, reg)
        rows = session.execute(select(ModelVersionModel.name, func.count(), func.max(ModelVersionModel.version))
                               .where(*reg.versions(principal))
                               .group_by(ModelVersionModel.name).order_by(ModelVersionModel.name)).all()
        out += [Summary(reg.team, n, count, latest, {a.alias: a.version for a in alias_rows if a.name == n})
                for n, count, latest in rows]
    return out


def registrants(session: Session, rows: Sequence[ModelVersionModel]) -> dict[int, str]:
    """Who registered each version (user id → name): a team's versions come from several homes."""
    ids = {r.user_id for r in rows}
    return dict(session.execute(select(UserModel.id, UserModel.name).where(UserModel.id.in_(ids))).all()) if ids else {}


def paths_registered(session: Session, principal: Principal) -> list[tuple[str, str]]:
    """(ref, path) of every version that names a path of the principal's: those they registered (in any registry)
    and their teams' versions in the team's folder (the same folder for every member, whoever registered it).
    An export that would write over one of them is refused (services/resume.py)."""
    mine = select(TeamMemberModel.team_id).where(TeamMemberModel.user_id == principal.id)
    rows = session.execute(select(ModelVersionModel, TeamModel.name)
                           .outerjoin(TeamModel, TeamModel.id == ModelVersionModel.team_id)
                           .where(or_(ModelVersionModel.user_id == principal.id, ModelVersionModel.team_id.in_(mine))))
    return [(refs.shown(team, v.name, v.version), v.path) for v, team in rows
            if v.user_id == principal.id or refs.is_shared(team, v.path)]


def may_move(principal: Principal, reg: Registry) -> bool:
    return refs.may_move_alias(team=reg.team, site_admin=principal.is_admin, role=reg.role)


def set_alias(session: Session, principal: Principal, model: str, alias: str, version: int) -> Registry:
    """Point ``model@alias`` (``name`` or ``team/name``) at ``version``: audited and notified (module docstring).
    A team's alias needs the team's admin role: a plain member gets Forbidden naming it."""
    refs.check_alias(alias)
    parsed = refs.parse_ref(model, one_model=True)
    reg, rows = versions(session, principal, parsed)
    if not may_move(principal, reg):
        assert reg.team is not None
        raise Forbidden(refs.alias_refusal(reg.team, reg.role), code="team_admin_required")
    row = next((r for r in rows if r.version == version), None)
    if row is None:
        raise ClientError(f"model {parsed.model!r} has no version {version}", code="version_not_found",
                          errors=[FieldError("version", version, f"one of {parsed.model}'s versions "
                                                                 f"(argus model show {parsed.model})")])
    before = _move(session, principal, reg, parsed.name, alias, version)
    target = refs.shown(reg.team, parsed.name, alias=alias)
    said = f"model {target} → version {version}" + (f" (was {before})" if before else "") + f": {row.path}"
    audit.record(session, actor=principal.name, action=audit.MODEL_ALIAS_MOVED, target=target,
                 detail={"team": reg.team, "from": before, "to": version, "path": row.path})
    task = session.get(TaskModel, row.source_task) if row.source_task else None
    if reg.team_id is None:
        if task is not None:
            notifications.enqueue(session, task, notifications.MODEL_ALIAS, said)
    else:
        members = session.scalars(select(TeamMemberModel.user_id).where(TeamMemberModel.team_id == reg.team_id))
        notifications.enqueue_to(session, list(members), notifications.MODEL_ALIAS,
                                 _payload(task, target, version, said, principal.name),
                                 task_id=task.id if task else None)
    return reg


def _move(session: Session, principal: Principal, reg: Registry, name: str, alias: str, version: int) -> int | None:
    """Point the alias at ``version``, creating it if new; returns the version it pointed at before (None: new).

    Reading the alias and inserting it when absent let two first settings at once (two team admins) both read
    "absent" and both insert: the second met the unique index and got a 500. Instead the alias is inserted
    first, doing nothing when it exists (``ON CONFLICT DO NOTHING``: the INSERT waits for a concurrent
    inserter's commit — SQLite's write lock, PostgreSQL's check of the unique index), and an alias that exists
    is read locked (``FOR UPDATE`` on PostgreSQL; on SQLite that INSERT already holds the write lock) and
    moved. Moves of one alias are so one at a time, each reading the version the last one set: every move's
    audit event and notification say the right "was"."""
    now = utcnow()
    table = ModelAliasModel.__table__
    insert = (pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert)(table)
    created = session.execute(insert.values(user_id=principal.id, team_id=reg.team_id, name=name, alias=alias,
                                            version=version, updated_at=now)
                              .on_conflict_do_nothing().returning(table.c.id)).first()
    if created is not None:
        return None
    found = session.scalars(select(ModelAliasModel).where(
        *reg.aliases(principal), ModelAliasModel.name == name, ModelAliasModel.alias == alias)
        .with_for_update().execution_options(populate_existing=True)).one_or_none()
    if found is None:  # gone between the two statements (its team deleted): the caller's retry answers it
        raise Conflict(f"the alias {refs.shown(reg.team, name, alias=alias)!r} changed while being moved; retry",
                       code="alias_conflict")
    before = found.version
    found.version, found.updated_at, found.user_id = version, now, principal.id  # a team's: who moved it last
    session.flush()
    return before


def _payload(task: TaskModel | None, target: str, version: int, said: str, mover: str) -> dict[str, Any]:
    """What a team's members' channels receive: the task's payload where the version has a task (so a receiver
    of task events reads it alike), with the model, version and mover added."""
    at = utcnow()
    base = notifications.task_payload(task, notifications.MODEL_ALIAS, said, at) if task is not None else {
        "event": notifications.MODEL_ALIAS, "task_id": None, "name": target, "message": said,
        "at": at.isoformat(timespec="seconds"), "link": "/models/" + target.partition("@")[0]}
    return {**base, "model": target, "version": version, "moved_by": mover}
