"""/api/v2/tasks/{id}/ray-dashboard/…: the owner's view of their running task's own Ray dashboard.

A reverse proxy for GET requests only (timeline, actors, logs, resource use: reading, not
acting), behind Argus's authentication; the dashboard's own token is added here and never
reaches the browser. Ray's dashboard uses relative URLs, so it works under this prefix.
"""

from __future__ import annotations

import httpx
from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response, StreamingResponse
from sqlalchemy.orm import Session
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx, get_session
from argus.errors import Conflict
from argus.services.principal import Principal
from argus.services.ray_dashboard import dashboard_target

router = APIRouter(prefix="/api/v2/tasks", tags=["tasks"])
PASS_HEADERS = ("content-type", "content-encoding", "cache-control", "etag", "last-modified")


@router.get("/{task_id}/ray-dashboard", include_in_schema=False)
def dashboard_root(task_id: str) -> RedirectResponse:
    return RedirectResponse(f"/api/v2/tasks/{task_id}/ray-dashboard/", status_code=307)


@router.get("/{task_id}/ray-dashboard/{path:path}", summary="the running task's own Ray dashboard (GET only)")
async def dashboard(task_id: str, path: str, request: Request, principal: Principal = Depends(current_principal),
                    session: Session = Depends(get_session), ctx: AppContext = Depends(get_ctx)) -> Response:
    target = await run_in_threadpool(dashboard_target, session, principal, task_id, ctx.settings.root, ctx.nodes)
    client = httpx.AsyncClient(timeout=30)
    url = f"{target.base_url}/{path}"
    try:
        upstream = await client.send(client.build_request(
            "GET", url, params=request.query_params, headers={"Authorization": f"Bearer {target.token}",
                                                               "Accept-Encoding": "identity"}), stream=True)
    except httpx.TransportError as exc:
        await client.aclose()
        raise Conflict(f"task {task_id}'s Ray dashboard does not answer: {exc}", code="dashboard_unavailable") from exc

    async def close() -> None:
        await upstream.aclose()
        await client.aclose()

    headers = {k: v for k, v in upstream.headers.items() if k.lower() in PASS_HEADERS}
    return StreamingResponse(upstream.aiter_raw(), status_code=upstream.status_code, headers=headers,
                             background=BackgroundTask(close))
