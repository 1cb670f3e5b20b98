"""Request dependencies: the context, a DB session per request, and bearer-token auth."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from argus.api.context import AppContext
from argus.errors import Forbidden, Unauthorized
from argus.services.principal import Principal
from argus.services.users import authenticate_token

_bearer = HTTPBearer(auto_error=False, description="An Argus API token: `Authorization: Bearer <token>`")


def get_ctx(request: Request) -> AppContext:
    return request.app.state.ctx


def get_session(ctx: AppContext = Depends(get_ctx)) -> Iterator[Session]:
    with ctx.db.session() as session:
        yield session


def current_principal(
    creds: HTTPAuthorizationCredentials | None = Depends(_bearer),
    ctx: AppContext = Depends(get_ctx),
) -> Principal:
    if creds is None or creds.scheme.lower() != "bearer" or not creds.credentials:
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'", code="unauthorized")
    with ctx.db.session() as session:
        return authenticate_token(session, creds.credentials)


def require_admin(principal: Principal = Depends(current_principal)) -> Principal:
    if not principal.is_admin:
        raise Forbidden("admin only", code="forbidden")
    return principal
