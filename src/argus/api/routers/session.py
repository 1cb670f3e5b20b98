"""/api/v2/session: browser sign-in, who am I, sign-out (services/web_sessions.py has the rules).

The session id travels only in an HttpOnly, SameSite=Strict cookie (Secure when the request came over
https: directly, or through a proxy uvicorn trusts for ``X-Forwarded-Proto``, or when ``public_url`` is
https), never in a body the page's scripts could leak. The body carries the CSRF token the page echoes.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from argus.api.context import AppContext
from argus.api.deps import cookie_session, get_ctx, refuse_cross_site, session_cookie, web_login_limiter
from argus.api.schemas import ErrorOut
from argus.errors import ClientError, FieldError, Unauthorized
from argus.services import web_sessions as svc
from argus.services.logins import LoginLimiter

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


_ERRORS = {401: {"model": ErrorOut}, 403: {"model": ErrorOut}}


@router.post("", response_model=SessionOut, responses={**_ERRORS, 400: {"model": ErrorOut}, 429: {"model": ErrorOut}})
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
    are refused with 429 for a while (the SFTP login limits). A cross-site request is refused (403)."""
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
            principal = svc.authenticate_password(session, limiter, body.user, body.password, address)
        if old_cookie:  # a browser signing in again (maybe as someone else): its old session ends
            svc.end_session(session, old_cookie)
        session_id, web = svc.start_session(session, principal, hours=ctx.settings.web_session_hours)
    _set_cookie(response, request, ctx, session_id)
    return SessionOut(user=principal.name, is_admin=principal.is_admin, csrf_token=web.csrf_token)


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
