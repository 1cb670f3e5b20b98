"""/api/v2/tasks/{id}/ray-dashboard/…: the owner's view of their running task's own Ray dashboard.

A reverse proxy for GET requests only (timeline, actors, logs, resource use: reading, not
acting), behind Argus's authentication; the dashboard's own token is added here and never
reaches the browser. Ray's dashboard uses relative URLs, so it works under this prefix.

Every proxied answer is untrusted content (services/ray_dashboard.py says why): it is served with
``Content-Security-Policy: sandbox`` (an opaque origin: no access to the Argus session),
``nosniff`` and no referrer. A browser opens ``…/ray-dashboard``, which sends it to
``…/ray-dashboard/~<view key>/``: the sandboxed page's own requests carry no cookie, the key in
their relative URLs authenticates them. ``…/ray-dashboard/<path>`` with a token stays for API clients.
"""

from __future__ import annotations

import secrets

import httpx
from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response, StreamingResponse
from sqlalchemy.orm import Session
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx, get_session
from argus.errors import ClientError, Conflict
from argus.services.principal import Principal
from argus.services.ray_dashboard import DashboardTarget, dashboard_target, mint_view_key, view_key_principal
from argus.services.tasks import get_task

router = APIRouter(prefix="/api/v2/tasks", tags=["tasks"])
PASS_HEADERS = ("content-type", "content-encoding", "cache-control", "etag", "last-modified")
# What every proxied answer says to the browser: run as a unique opaque origin (scripts and the dashboard's
# own popups and forms allowed, nothing of this origin), never guess a type, send no address onwards.
UNTRUSTED = {"Content-Security-Policy": "sandbox allow-scripts allow-forms allow-popups allow-downloads",
             "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def _view_secret(ctx: AppContext) -> bytes:
    """This server process's key for view keys (a restart ends every open dashboard link)."""
    secret = ctx.extras.get("ray_dashboard_view_secret")
    return secret if secret is not None else ctx.extras.setdefault("ray_dashboard_view_secret", secrets.token_bytes(32))


@router.get("/{task_id}/ray-dashboard", include_in_schema=False)
def dashboard_root(task_id: str, principal: Principal = Depends(current_principal),
                   session: Session = Depends(get_session), ctx: AppContext = Depends(get_ctx)) -> RedirectResponse:
    return _to_view_key(session, principal, task_id, ctx)


def _to_view_key(session: Session, principal: Principal, task_id: str, ctx: AppContext) -> RedirectResponse:
    get_task(session, principal, task_id)  # another user's task: 404
    key = mint_view_key(_view_secret(ctx), principal, task_id)
    return RedirectResponse(f"/api/v2/tasks/{task_id}/ray-dashboard/~{key}/", status_code=307,
                            headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"})


@router.get("/{task_id}/ray-dashboard/~{key}/{path:path}", include_in_schema=False)
async def dashboard_by_view_key(task_id: str, key: str, path: str, request: Request,
                                session: Session = Depends(get_session), ctx: AppContext = Depends(get_ctx)) -> Response:
    def target() -> DashboardTarget:
        viewer = view_key_principal(session, _view_secret(ctx), task_id, key)
        return dashboard_target(session, viewer, task_id, ctx.settings.root, ctx.nodes)

    # the sandboxed page's requests come from an opaque origin: it may read what its own key fetched
    return await _proxy(task_id, _checked(path), request, await run_in_threadpool(target),
                        {"Access-Control-Allow-Origin": "*"})


@router.get("/{task_id}/ray-dashboard/{path:path}", summary="the running task's own Ray dashboard (GET only)")
async def dashboard(task_id: str, path: str, request: Request, principal: Principal = Depends(current_principal),
                    session: Session = Depends(get_session), ctx: AppContext = Depends(get_ctx)) -> Response:
    path = _checked(path)
    if not path and "authorization" not in request.headers:  # a browser: its sandboxed page needs a view key
        return await run_in_threadpool(_to_view_key, session, principal, task_id, ctx)
    target = await run_in_threadpool(dashboard_target, session, principal, task_id, ctx.settings.root, ctx.nodes)
    return await _proxy(task_id, path, request, target, {})


def _checked(path: str) -> str:
    """400 for a path no dashboard has: control characters (``%00``), a backslash, ``..`` or ``.`` parts."""
    if any(ord(c) < 0x20 or c in "\x7f\\" for c in path) or any(part in (".", "..") for part in path.split("/")):
        raise ClientError(f"not a dashboard path: {path[:100]!r} (control characters, a backslash or a '..' part)",
                          code="bad_path")
    return path


async def _proxy(task_id: str, path: str, request: Request, target: DashboardTarget,
                 extra: dict[str, str]) -> Response:
    client = httpx.AsyncClient(timeout=30)
    try:
        upstream = await client.send(client.build_request(
            "GET", f"{target.base_url}/{path}", params=request.query_params,
            headers={"Authorization": f"Bearer {target.token}", "Accept-Encoding": "identity"}), stream=True)
    except httpx.TransportError as exc:
        await client.aclose()
        raise Conflict(f"task {task_id}'s Ray dashboard does not answer: {exc}", code="dashboard_unavailable") from exc
    except httpx.InvalidURL as exc:
        await client.aclose()
        raise ClientError(f"not a dashboard path: {path[:100]!r}: {exc}", code="bad_path") from exc

    async def close() -> None:
        await upstream.aclose()
        await client.aclose()

    headers = {k: v for k, v in upstream.headers.items() if k.lower() in PASS_HEADERS}
    return StreamingResponse(upstream.aiter_raw(), status_code=upstream.status_code,
                             headers={**headers, **UNTRUSTED, **extra}, background=BackgroundTask(close))
