"""The WebUI: server-rendered page shells over the same ``/api/v2`` the CLI uses.

Each page is a small Jinja2 template (labels in the user's language, no data) plus an ES
module in ``static/js/`` that reads and writes through the documented API with the browser's
session cookie. The server side of a page only decides what the API would decide anyway:
who is signed in (else a redirect to sign-in) and whether the task exists for them (else a
404 page). No business rule lives here or in the scripts (docs/architecture.md §7.3).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

# Where a 404 stays the API's JSON even for a browser: the API, the assets, the machine endpoints.
_NOT_PAGES = ("/api/", "/static/", "/openapi.json", "/docs", "/metrics")


def install_web(app: FastAPI) -> None:
    """Mount the pages and ``/static`` (every asset comes from the installed package: no CDN).

    Call it after the API's error handlers: a browser that navigates to an address that is no page
    gets the 404 page (with the navigation), everything else keeps the API's JSON 404."""
    from argus.api.static_assets import AssetFiles
    from argus.web.auth import page_principal
    from argus.web.pages import STATIC_DIR, SignInFirst, not_found, router, to_login

    app.include_router(router)
    app.add_exception_handler(SignInFirst, to_login)
    # Compressed once, immutable under /static/v/<version>/ (what the pages link: pages.asset_url).
    app.mount("/static", AssetFiles(STATIC_DIR), name="static")
    api_http_error = app.exception_handlers[StarletteHTTPException]

    async def http_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, StarletteHTTPException) and exc.status_code == 404 and _is_page_visit(request):
            principal = await run_in_threadpool(page_principal, request, request.app.state.ctx)
            return not_found(request, principal)
        return await api_http_error(request, exc)

    app.add_exception_handler(StarletteHTTPException, http_error)


def _is_page_visit(request: Request) -> bool:
    """A browser navigating (GET/HEAD, HTML accepted) to an address outside the API and the assets."""
    return (request.method in ("GET", "HEAD") and "text/html" in request.headers.get("accept", "")
            and not request.url.path.startswith(_NOT_PAGES))
