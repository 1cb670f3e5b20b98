"""Who is signed in, for page routes: the browser's session cookie, checked by the session service."""

from __future__ import annotations

from fastapi import Request

from argus.api.context import AppContext
from argus.errors import Unauthorized
from argus.services import web_sessions
from argus.services.principal import Principal

COOKIE = "argus_session"


def page_principal(request: Request, ctx: AppContext) -> Principal | None:
    """The signed-in user, or None (no cookie, expired, signed out, or the user is disabled)."""
    cookie = request.cookies.get(COOKIE)
    if not cookie:
        return None
    with ctx.db.session() as session:
        try:
            return web_sessions.authenticate_session(session, cookie)
        except Unauthorized:
            return None
