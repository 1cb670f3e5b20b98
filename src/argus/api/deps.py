"""Request dependencies: the context, a DB session per request, and authentication.

Two ways in, checked on every request:

* ``Authorization: Bearer <token>`` (the CLI, scripts): unchanged, no CSRF rules (a browser never
  attaches this header to a cross-site request, and the API sends no CORS headers).
* the ``argus_session`` cookie of a signed-in browser (services/web_sessions.py). A cookie is sent by
  the browser whoever built the request, so with it: a cross-site request (``Sec-Fetch-Site:
  cross-site``, or an ``Origin`` that is not this server's) is refused, and a mutating method
  (POST/PUT/PATCH/DELETE) must carry ``X-CSRF-Token`` equal to the session's token.

When both are sent, the bearer token decides (and a bad one is a 401, never a fall-back to the cookie).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi import Depends, Request
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from argus.api.context import AppContext
from argus.errors import Forbidden, Unauthorized
from argus.services import audit
from argus.services.logins import LoginLimiter
from argus.services.principal import Principal
from argus.services.users import authenticate_token
from argus.services.web_sessions import CSRF_HEADER, SESSION_COOKIE, WebSession, csrf_matches, resolve_session

_bearer = HTTPBearer(auto_error=False, description="An Argus API token: `Authorization: Bearer <token>`")
session_cookie = APIKeyCookie(name=SESSION_COOKIE, auto_error=False,
                       description="A browser session from `POST /api/v2/session`; writes also need the "
                                   f"`{CSRF_HEADER}` header")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def get_ctx(request: Request) -> AppContext:
    """``async`` on purpose, like every dependency that does not block: FastAPI runs a plain ``def``
    dependency in its thread pool, and a hop there and back costs more than this whole function."""
    return request.app.state.ctx


def get_session(ctx: AppContext = Depends(get_ctx)) -> Iterator[Session]:
    """One transaction per request. Use it as ``Depends(get_session, scope="function")``: the commit
    then runs before the response is sent, so a commit that fails (database busy or full: a 503) is
    what the client hears — with FastAPI's default scope it would run after a 201 already went out."""
    with ctx.db.session() as session:
        yield session


@dataclass(frozen=True)
class Credentials:
    """What the request presented, read on the event loop; ``principal()`` checks it against the
    database (blocking), in whatever worker thread the endpoint already runs its own work in."""

    request: Request
    ctx: AppContext
    bearer: str | None
    cookie: str | None

    def principal(self) -> Principal:
        if self.bearer:
            with self.ctx.db.session() as session:
                return authenticate_token(session, self.bearer)
        if self.cookie:
            return cookie_session(self.request, self.cookie, self.ctx).principal
        raise Unauthorized("not signed in: send 'Authorization: Bearer <token>' or sign in at POST /api/v2/session",
                           code="unauthorized")


async def credentials(
    request: Request,
    creds: HTTPAuthorizationCredentials | None = Depends(_bearer),
    cookie: str | None = Depends(session_cookie),
    ctx: AppContext = Depends(get_ctx),
) -> Credentials:
    """For a hot endpoint that runs one blocking job anyway (task submit): authenticate inside it,
    one thread hop per request instead of two. Everything else uses ``current_principal``."""
    bearer = creds.credentials if creds is not None and creds.scheme.lower() == "bearer" else None
    return Credentials(request, ctx, bearer or None, cookie or None)


def current_principal(creds: Credentials = Depends(credentials)) -> Principal:
    return creds.principal()


def cookie_session(request: Request, cookie: str, ctx: AppContext) -> WebSession:
    """The live browser session of this cookie, after the cross-site and CSRF rules (module docstring)."""
    refuse_cross_site(request, ctx)
    with ctx.db.session() as session:
        web = resolve_session(session, cookie)
    if request.method not in SAFE_METHODS and not csrf_matches(web, request.headers.get(CSRF_HEADER)):
        raise Forbidden(f"missing or wrong {CSRF_HEADER} header: send the csrf_token from GET /api/v2/session "
                        "with every POST, PUT, PATCH and DELETE", code="csrf_failed")
    return web


def refuse_cross_site(request: Request, ctx: AppContext) -> None:
    """403 for a request another site's page made the browser send (it would carry the cookie).

    ``Sec-Fetch-Site`` (set by every current browser, not settable by scripts) is trusted when present;
    ``Origin`` must then be this server's own (as the browser addressed it, or ``public_url``). A request
    with neither header comes from a non-browser client, which cannot be tricked into sending a cookie."""
    site = request.headers.get("sec-fetch-site", "").lower()
    mutating = request.method not in SAFE_METHODS
    if site == "cross-site" or (mutating and site == "same-site"):
        raise Forbidden("cross-site request refused: use the Argus page itself", code="cross_site")
    origin = request.headers.get("origin")
    if origin is not None and origin.rstrip("/").lower() not in own_origins(request, ctx):
        raise Forbidden(f"cross-site request refused: Origin {origin[:100]!r} is not this server (behind a "
                        "proxy that changes the Host header, the administrator sets ARGUS_PUBLIC_URL)",
                        code="cross_site")


def own_origins(request: Request, ctx: AppContext) -> set[str]:
    origins = {f"{request.url.scheme}://{request.url.netloc}".lower()}
    if ctx.settings.public_url:
        public = urlsplit(ctx.settings.public_url)
        origins.add(f"{public.scheme}://{public.netloc}".lower())
    return origins


async def web_login_limiter(ctx: AppContext = Depends(get_ctx)) -> LoginLimiter:
    """One limiter per server process for browser sign-ins (the same rules as SFTP password logins)."""
    limiter = ctx.extras.get("web_login_limiter")
    if limiter is None:
        limiter = ctx.extras.setdefault(
            "web_login_limiter", LoginLimiter(ctx.settings.login_max_failures, ctx.settings.login_window_s,
                                              on_lockout=audit.lockout_recorder(ctx.db.session, "web")))
    return limiter


def client_ip(request: Request) -> str | None:
    """The peer's address for the audit log and the sign-in limiter: the connection's, or what a proxy in
    ``trusted_proxies`` forwarded (server.forwarded_headers; no other peer's X-Forwarded-For counts)."""
    return request.client.host if request.client else None


async def require_admin(principal: Principal = Depends(current_principal)) -> Principal:
    if not principal.is_admin:
        raise Forbidden("admin only", code="forbidden")
    return principal
