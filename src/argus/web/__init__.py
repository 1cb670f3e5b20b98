"""The WebUI: server-rendered page shells over the same ``/api/v2`` the CLI uses.

Each page is a small Jinja2 template (labels in the user's language, no data) plus an ES
module in ``static/js/`` that reads and writes through the documented API with the browser's
session cookie. The server side of a page only decides what the API would decide anyway:
who is signed in (else a redirect to sign-in) and whether the task exists for them (else a
404 page). No business rule lives here or in the scripts (docs/architecture.md §7.3).
"""

from __future__ import annotations

from fastapi import FastAPI


def install_web(app: FastAPI) -> None:
    """Mount the pages and ``/static`` (every asset comes from the installed package: no CDN)."""
    from fastapi.staticfiles import StaticFiles

    from argus.web.pages import STATIC_DIR, SignInFirst, router, to_login

    app.include_router(router)
    app.add_exception_handler(SignInFirst, to_login)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
