"""/api/v2/session: browser sign-in, who am I, sign-out (services/web_sessions.py has the rules).

The session id travels only in an HttpOnly, SameSite=Strict cookie (Secure when the request came over
https: directly, or through a proxy uvicorn trusts for ``X-Forwarded-Proto``, or when ``public_url`` is
https), never in a body the page's scripts could leak. The body carries the CSRF token the page echoes.

``POST /api/v2/session/token`` trades a user name and password for a new API token (``argus login
--user``): the way a directory (LDAP) user, who has no token yet, gets one without the WebUI. Passwords
are checked as for a browser sign-in, with the same limiter: local users locally, others against the
directory when LDAP sign-in is on (services/directory.py).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from argus.api.context import AppContext
from argus.api.deps import cookie_session, get_ctx, refuse_cross_site, session_cookie, web_login_limiter
from argus.api.schemas import ErrorOut, TokenCreatedOut
from argus.errors import ClientError, FieldError, Unauthorized
from argus.services import audit
from argus.services import web_sessions as svc
from argus.services.directory import Directory
from argus.services.logins import LoginLimiter
from argus.services.users import create_token, get_user

router = APIRouter(prefix="/api/v2/session", tags=["session"])


class SignInIn(BaseModel):
    """Either ``user`` + ``password`` (the SFTP password, set with ``argus passwd``) or an API ``token``."""

    model_config = ConfigDict(extra="forbid")

    user: str | None = Field(default=None, max_length=64)
    password: str | None = Field(default=None, max_length=4096)
    token: str | None = Field(default=None, max_length=256)


class SessionOut(BaseModel):
    user: str
    is_admin: bool
    csrf_token: str = Field(description="send it as the X-CSRF-Token header with every POST/PUT/PATCH/DELETE")


class PasswordTokenIn(BaseModel):
    """A user name and password (local, or the directory's when LDAP sign-in is on) for a new API token."""

    model_config = ConfigDict(extra="forbid")

    user: str = Field(max_length=64)
    password: str = Field(max_length=4096)
    name: str | None = Field(default=None, max_length=128, description="a label for the token (e.g. the host)")


_ERRORS = {401: {"model": ErrorOut}, 403: {"model": ErrorOut}}
_SIGN_IN_ERRORS = {**_ERRORS, 400: {"model": ErrorOut}, 429: {"model": ErrorOut}, 503: {"model": ErrorOut}}


def directory_of(ctx: AppContext) -> Directory | None:
    """The process's directory (None: LDAP sign-in off), made once from the settings."""
    if "directory" not in ctx.extras:
        ctx.extras.setdefault("directory", Directory.from_settings(ctx.settings))
    return ctx.extras["directory"]


@router.post("", response_model=SessionOut, responses=_SIGN_IN_ERRORS)
def sign_in(
    body: SignInIn,
    request: Request,
    response: Response,
    old_cookie: str | None = Depends(session_cookie),
    ctx: AppContext = Depends(get_ctx),
    limiter: LoginLimiter = Depends(web_login_limiter),
) -> SessionOut:
    """Sign a browser in; sets the ``argus_session`` cookie and returns the CSRF token.

    Wrong credentials are a 401 with one message whatever was wrong; repeated failures from one address
    are refused with 429 for a while (the SFTP login limits). A cross-site request is refused (403). With
    LDAP sign-in on, a directory that cannot be reached is a 503 (``directory_unavailable``)."""
    refuse_cross_site(request, ctx)
    with_password = body.user is not None or body.password is not None
    if with_password == (body.token is not None) or (with_password and (not body.user or body.password is None)):
        raise ClientError("send either user and password, or token", code="invalid_request",
                          errors=[FieldError("(body)", None, 'send {"user": ..., "password": ...} or {"token": ...}')])
    address = request.client.host if request.client else "unknown"
    with ctx.db.session() as session:
        if body.token is not None:
            principal = svc.authenticate_api_token(session, limiter, body.token, address)
        else:
            assert body.user is not None and body.password is not None
            principal = svc.authenticate_password(session, limiter, body.user, body.password, address,
                                                  directory=directory_of(ctx))
        if old_cookie:  # a browser signing in again (maybe as someone else): its old session ends
            svc.end_session(session, old_cookie)
        session_id, web = svc.start_session(session, principal, hours=ctx.settings.web_session_hours)
    _set_cookie(response, request, ctx, session_id)
    return SessionOut(user=principal.name, is_admin=principal.is_admin, csrf_token=web.csrf_token)


@router.post("/token", status_code=201, response_model=TokenCreatedOut, responses=_SIGN_IN_ERRORS)
def token_by_password(
    body: PasswordTokenIn,
    request: Request,
    ctx: AppContext = Depends(get_ctx),
    limiter: LoginLimiter = Depends(web_login_limiter),
) -> TokenCreatedOut:
    """A new API token for whoever gives their user name and password (``argus login --user``); its secret is
    in this answer only. The same checks, limits and answers as a browser sign-in (401, 403, 429, 503)."""
    refuse_cross_site(request, ctx)
    address = request.client.host if request.client else "unknown"
    with ctx.db.session() as session:
        principal = svc.authenticate_password(session, limiter, body.user, body.password, address,
                                              directory=directory_of(ctx))
        user = get_user(session, principal.name)
        row, token = create_token(session, user, name=body.name)
        audit.record(session, actor=principal.name, action=audit.TOKEN_CREATED, target=user.name,
                     detail={"token_id": row.id, "prefix": row.prefix, "name": row.name, "by": "password"},
                     source_ip=request.client.host if request.client else None)
    return TokenCreatedOut(id=row.id, token=token, name=row.name)


@router.get("", response_model=SessionOut, responses=_ERRORS)
def who_am_i(
    request: Request, cookie: str | None = Depends(session_cookie), ctx: AppContext = Depends(get_ctx)
) -> SessionOut:
    """The signed-in user and the session's CSRF token (so a reloaded page recovers it), or 401."""
    if not cookie:
        raise Unauthorized("not signed in", code="unauthorized")
    web = cookie_session(request, cookie, ctx)
    return SessionOut(user=web.principal.name, is_admin=web.principal.is_admin, csrf_token=web.csrf_token)


@router.delete("", status_code=204, responses=_ERRORS)
def sign_out(request: Request, cookie: str | None = Depends(session_cookie), ctx: AppContext = Depends(get_ctx)) -> Response:
    """End the session on the server and clear the cookie (needs ``X-CSRF-Token``); 204 also when it had
    already ended."""
    response = Response(status_code=204)
    if cookie:
        try:
            cookie_session(request, cookie, ctx)
        except Unauthorized:
            pass  # already ended or expired: only the cookie is left to clear
        else:
            with ctx.db.session() as session:
                svc.end_session(session, cookie)
    response.delete_cookie(svc.SESSION_COOKIE, path="/", secure=_https(request, ctx), httponly=True, samesite="strict")
    return response


def _https(request: Request, ctx: AppContext) -> bool:
    public = ctx.settings.public_url or ""
    return request.url.scheme == "https" or public.lower().startswith("https://")


def _set_cookie(response: Response, request: Request, ctx: AppContext, session_id: str) -> None:
    response.set_cookie(svc.SESSION_COOKIE, session_id, max_age=int(ctx.settings.web_session_hours * 3600), path="/",
                        secure=_https(request, ctx), httponly=True, samesite="strict")
