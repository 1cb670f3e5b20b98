"""The FastAPI application: routers plus one mapping from error types to HTTP.

Handlers never build error responses themselves; services raise ``errors.py``
types and this module turns them into ``{"detail": {"code", "message",
"message_code"?, "message_params"?, "errors"?}}``. Unexpected exceptions become a 500 without a traceback.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from argus import __version__
from argus.api import db_unavailable
from argus.api.context import AppContext
from argus.api.docs import install_docs
from argus.api.routers import (
    audit,
    checkpoints,
    envs,
    files,
    health,
    logs,
    metrics,
    models,
    nodes,
    notifications,
    pipelines,
    priority_classes,
    prometheus,
    ray_dashboard,
    resources,
    retention,
    session,
    sweeps,
    tasks,
    teams,
    usage,
    users,
    verl,
)
from argus.core import messages
from argus.errors import (
    ArgusError,
    ClientError,
    Conflict,
    Forbidden,
    NotFound,
    QuotaExceeded,
    TooManyRequests,
    Unauthorized,
    Unavailable,
)
from argus.web import install_web

log = logging.getLogger(__name__)

_STATUS = [
    (Unauthorized, 401),
    (Forbidden, 403),
    (NotFound, 404),
    (Conflict, 409),
    (QuotaExceeded, 413),
    (TooManyRequests, 429),
    (Unavailable, 503),
    (ClientError, 400),
]


def create_app(ctx: AppContext, extra_routers: tuple = ()) -> FastAPI:
    app = FastAPI(
        title="Argus",
        version=__version__,
        description="Multi-tenant control plane for verl post-training on Ray. Authenticate with "
        "`Authorization: Bearer <token>`, or (browsers) with the `argus_session` cookie from "
        "`POST /api/v2/session` plus the `X-CSRF-Token` header on writes.",
        docs_url=None,  # FastAPI's pages load Swagger UI/ReDoc from a CDN: api.docs serves them locally
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.ctx = ctx
    install_docs(app)
    for r in (health.router, session.router, tasks.router, users.router, metrics.router, files.router, logs.router, nodes.router,
              audit.router, usage.router, resources.router, checkpoints.router, ray_dashboard.router, envs.router,
              prometheus.router, retention.router, notifications.router, teams.router, priority_classes.router, verl.router,
              sweeps.router, models.router, pipelines.router,
              *extra_routers):
        app.include_router(r)
    _install_error_handlers(app)
    db_unavailable.install(app)  # busy / full / broken database: 503 + Retry-After naming the cause
    install_web(app)  # the WebUI: pages + /static (after the API routes)
    return app


def error_body(code: str, message: str, errors: list[dict] | None = None) -> dict:
    detail: dict = {"code": code, "message": message}
    if errors is not None:
        detail["errors"] = errors
    return {"detail": detail}


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ArgusError)
    async def _argus(_request: Request, exc: ArgusError) -> JSONResponse:
        status = next((code for typ, code in _STATUS if isinstance(exc, typ)), 500)
        errors = [e.as_dict() for e in exc.errors] if exc.errors else None
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        body = error_body(exc.code, exc.message, errors)
        if exc.message_code is not None:  # the message as code + params (issue 37): said in the reader's language
            body["detail"]["message_code"] = exc.message_code
            body["detail"]["message_params"] = exc.message_params
        if exc.warnings:
            body["detail"]["warnings"] = exc.warnings
            body["detail"]["warning_messages"] = messages.known_messages(exc.warnings)  # as codes (issue 37)
        return JSONResponse(body, status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = []
        for err in exc.errors():
            loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path")]
            value = err.get("input")
            if not isinstance(value, str | int | float | bool | type(None)):
                value = None
            if loc and loc[-1] in ("password", "current_password", "token"):  # never echo a secret, even a malformed one
                value = None
            elif isinstance(value, str):  # a lone surrogate (JSON "\ud800") cannot be encoded: escape it
                value = value[:200].encode("utf-8", "backslashreplace").decode("utf-8")
            item = {"field": ".".join(loc) or "(body)", "value": value, "message": err.get("msg", "invalid")}
            # pydantic's English as a code (issue 37), only where the code's template says exactly that
            ctx = {k: v for k, v in (err.get("ctx") or {}).items() if isinstance(v, int | float | str)}
            coded = messages.from_stored(f"request.{err.get('type')}", ctx, item["message"])
            if coded is not None:
                item.update(code=coded.code, params=coded.params)
            errors.append(item)
        body = error_body("invalid_request", "request is invalid", errors)
        body["detail"].update(message_code="request.invalid", message_params={})
        return JSONResponse(body, status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(error_body("server_error", "internal error; see the server log"), status_code=500)
