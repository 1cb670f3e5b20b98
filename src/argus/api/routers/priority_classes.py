"""/api/v2/priority-classes: admin-defined classes that order work across users and teams (issue 26).

Everyone may list them (with whether they may use each); only administrators create, change and
delete them. A spec names one with ``priority_class: <name>``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from argus.api.deps import client_ip, current_principal, get_session
from argus.api.schemas import ErrorOut
from argus.services import audit
from argus.services import priority_classes as svc
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2/priority-classes", tags=["teams"])
_ERR = {400: {"model": ErrorOut}, 403: {"model": ErrorOut}, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}}


class ClassFieldsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: int | None = Field(None, description="1–1000; a higher class goes first, tasks of no class are 0")
    description: str | None = None
    users: list[str] | None = Field(None, description="users who may use it (with `teams`; both empty: everyone)")
    teams: list[str] | None = Field(None, description="teams whose members may use it")


class ClassIn(ClassFieldsIn):
    name: str


class ClassOut(BaseModel):
    name: str
    value: int
    description: str | None
    users: list[str]
    teams: list[str]
    may_use: bool = Field(description="you may name it in a spec")


def _out(row: Any, may_use: bool) -> ClassOut:
    return ClassOut(name=row.name, value=row.value, description=row.description, users=list(row.users or []),
                    teams=list(row.teams or []), may_use=may_use)


def _fields(body: ClassFieldsIn) -> dict[str, Any]:
    return body.model_dump(exclude_unset=True, exclude={"name"})


@router.get("", response_model=list[ClassOut])
def list_classes(principal: Principal = Depends(current_principal),
                 session: Session = Depends(get_session, scope="function")) -> list[ClassOut]:
    """Every class, highest first."""
    return [_out(r, ok) for r, ok in svc.listing(session, principal)]


@router.post("", status_code=201, response_model=ClassOut, responses=_ERR)
def create_class(body: ClassIn, request: Request, principal: Principal = Depends(current_principal),
                 session: Session = Depends(get_session, scope="function")) -> ClassOut:
    row = svc.create(session, principal, body.name, _fields(body))
    audit.record(session, actor=principal.name, action=audit.PRIORITY_CLASS_CHANGED, target=row.name,
                 detail={"created": _fields(body)}, source_ip=client_ip(request))
    return _out(row, True)


@router.patch("/{name}", response_model=ClassOut, responses=_ERR)
def update_class(name: str, body: ClassFieldsIn, request: Request, principal: Principal = Depends(current_principal),
                 session: Session = Depends(get_session, scope="function")) -> ClassOut:
    row = svc.update(session, principal, name, _fields(body))
    audit.record(session, actor=principal.name, action=audit.PRIORITY_CLASS_CHANGED, target=row.name,
                 detail=_fields(body), source_ip=client_ip(request))
    return _out(row, True)


@router.delete("/{name}", status_code=204, responses=_ERR)
def delete_class(name: str, request: Request, principal: Principal = Depends(current_principal),
                 session: Session = Depends(get_session, scope="function")) -> Response:
    """Queued tasks of the class keep their place (they carry the value they were queued with)."""
    svc.delete(session, principal, name)
    audit.record(session, actor=principal.name, action=audit.PRIORITY_CLASS_CHANGED, target=name,
                 detail={"deleted": True}, source_ip=client_ip(request))
    return Response(status_code=204)
