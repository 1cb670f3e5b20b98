"""/api/v2/audit: the audit log (admins only), newest first, paged by cursor."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from argus.api.deps import get_session, require_admin
from argus.api.schemas import ErrorOut
from argus.services import audit as svc
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2", tags=["admin"])


class AuditEventOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    at: datetime
    actor: str = Field(description="who acted: a user name, or the name tried in a failed sign-in")
    action: str = Field(description="one of: " + ", ".join(svc.ACTIONS))
    target: str | None
    detail: dict[str, Any] | None
    source_ip: str | None


class AuditPageOut(BaseModel):
    events: list[AuditEventOut]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next (older) page; null on the last")


@router.get("/audit", response_model=AuditPageOut,
            responses={400: {"model": ErrorOut}, 401: {"model": ErrorOut}, 403: {"model": ErrorOut}})
def list_audit(
    action: str | None = Query(None, description="only this action"),
    actor: str | None = Query(None, max_length=64, description="only events by this actor"),
    user: str | None = Query(None, max_length=64, description="only events by or about this user (actor or target)"),
    since: datetime | None = Query(None, description="ISO 8601; without a zone, UTC"),
    limit: int = Query(100, description=f"1..{svc.MAX_PAGE}"),
    cursor: str | None = Query(None, max_length=200),
    _: Principal = Depends(require_admin),
    session: Session = Depends(get_session, scope="function"),
) -> AuditPageOut:
    """Admin actions and security events (user and token changes, SSH keys, sign-in lockouts, cancels by
    someone other than the owner, pruning), newest first."""
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    page = svc.list_events(session, action=action, actor=actor, since=since, limit=limit, cursor=cursor, user=user)
    return AuditPageOut(events=[AuditEventOut.model_validate(e) for e in page.events], next_cursor=page.next_cursor)
