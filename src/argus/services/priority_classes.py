"""Priority classes (issue 26): admin-defined classes that order work across users and teams.

A user's own ``priority`` orders only their own tasks (fair share decides between users). A class
such as ``urgent`` (value 100) puts its tasks before every task of a lower class, whoever owns them —
for a paper deadline, an evaluation the whole lab waits on. Because that overrides fair share, an
admin says who may use each class: users by name and members of teams by team name (both empty:
everyone). A task keeps the class's value it was queued with.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core.messages import field_error, part, refusal
from argus.core.teams import TEAM_NAME_RE
from argus.db.models import PriorityClassModel
from argus.errors import ClientError, Conflict, FieldError, Forbidden, NotFound
from argus.services.principal import Principal
from argus.services.teams import teams_of

NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{1,31}$")
MAX_VALUE = 1000
FIELDS = ("value", "description", "users", "teams")


def check(changes: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    """The class's fields, validated; every bad value named at once."""
    errors: list[FieldError] = []
    if creating and "value" not in changes:
        errors.append(field_error("value", None, "priority.value_required", max=MAX_VALUE))
    for key, value in changes.items():
        if key == "value":
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VALUE:
                errors.append(field_error("value", value, "priority.value_rule", max=MAX_VALUE))
        elif key == "description":
            if value is not None and (not isinstance(value, str) or len(value) > 256):
                errors.append(field_error("description", value, "priority.description_rule"))
        elif key in ("users", "teams"):
            if not isinstance(value, list) or not all(isinstance(v, str) and TEAM_NAME_RE.fullmatch(v) for v in value):
                errors.append(field_error(key, value, "priority.names_rule", kind=key[:-1], field=key))
        else:
            errors.append(field_error(key, value, "priority.field_unknown", fields=", ".join(FIELDS)))
    if errors:
        raise refusal(ClientError, "invalid_priority_class", "priority.invalid", errors=errors)
    return changes


def _get(session: Session, name: str) -> PriorityClassModel:
    row = session.scalar(select(PriorityClassModel).where(PriorityClassModel.name == name))
    if row is None:
        raise refusal(NotFound, "priority_class_not_found", "priority.not_found", name=repr(name))
    return row


def create(session: Session, actor: Principal, name: str, fields: dict[str, Any]) -> PriorityClassModel:
    if not actor.is_admin:
        raise refusal(Forbidden, "forbidden", "priority.define_admins_only")
    errors = [] if isinstance(name, str) and NAME_RE.fullmatch(name) else [
        field_error("name", name, "priority.name_rule")]
    try:
        values = check(fields, creating=True)
    except ClientError as exc:  # every reason at once: the name's and the fields'
        exc.errors = errors + exc.errors
        raise
    if errors:
        raise refusal(ClientError, "invalid_priority_class", "priority.invalid", errors=errors)
    if session.scalar(select(PriorityClassModel.id).where(PriorityClassModel.name == name)) is not None:
        raise refusal(Conflict, "priority_class_exists", "priority.exists", name=repr(name),
                      errors=[field_error("name", name, "priority.name_taken")])
    row = PriorityClassModel(name=name, **{"users": [], "teams": [], **values})
    session.add(row)
    session.flush()
    return row


def update(session: Session, actor: Principal, name: str, changes: dict[str, Any]) -> PriorityClassModel:
    if not actor.is_admin:
        raise refusal(Forbidden, "forbidden", "priority.change_admins_only")
    row = _get(session, name)
    for key, value in check(changes, creating=False).items():
        setattr(row, key, value)
    return row


def delete(session: Session, actor: Principal, name: str) -> None:
    """Tasks already queued with the class keep their place (they carry the value they were queued with)."""
    if not actor.is_admin:
        raise refusal(Forbidden, "forbidden", "priority.delete_admins_only")
    session.delete(_get(session, name))


def may_use(row: PriorityClassModel, user: str, teams: set[str]) -> bool:
    if not row.users and not row.teams:
        return True
    return user in row.users or bool(teams & set(row.teams))


def listing(session: Session, actor: Principal) -> list[tuple[PriorityClassModel, bool]]:
    """Every class, highest first, with whether ``actor`` may use it (everyone sees the classes: a task
    that waits behind an urgent one names the class)."""
    mine = {n for n, _, _ in teams_of(session, actor.id)}
    rows = session.scalars(select(PriorityClassModel).order_by(PriorityClassModel.value.desc(),
                                                                PriorityClassModel.name))
    return [(r, actor.is_admin or may_use(r, actor.name, mine)) for r in rows]


def resolve(session: Session, actor: Principal, name: str | None) -> tuple[str | None, int]:
    """(class name, value) a new task of ``actor`` gets; (None, 0) without a class. Refused (field
    ``priority_class``) for a class that does not exist or that the actor may not use."""
    if name is None:
        return None, 0
    rows = listing(session, actor)
    row = next((r for r, _ in rows if r.name == name), None)
    usable = [r.name for r, ok in rows if ok]
    if row is None or not next(ok for r, ok in rows if r.name == name):
        why = "priority.not_a_class" if row is None else "priority.not_yours"
        classes = [part("part.class_name", name=n) for n in usable]
        raise refusal(ClientError, "invalid_spec", "priority.refused",
                      errors=[field_error("priority_class", name, why, classes=classes)])
    return row.name, row.value
