"""/api/v2/nodes: worker nodes, GPUs total / allocated by Argus, and which tasks hold them.

Read-only: the view comes from ``AppContext.nodes`` (set by the composition root from the
cluster inventory and the scheduler's ledger). Other users' task ids are not shown to
non-admins — only that some GPUs are held.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2", tags=["cluster"])


@router.get("/nodes")
def list_nodes(principal: Principal = Depends(current_principal), ctx: AppContext = Depends(get_ctx)) -> dict[str, Any]:
    if ctx.nodes is None:
        return {"available": False, "error": "no Ray cluster configured", "nodes": [], "unplaced": [],
                "gpus_total": 0, "gpus_allocated": 0}
    view = ctx.nodes()
    if not principal.is_admin:
        for node in view["nodes"]:
            node["tasks"] = [_redact(t, principal) for t in node["tasks"]]
        view["unplaced"] = [_redact(t, principal) for t in view["unplaced"]]
    return view


def _redact(task: dict[str, Any], principal: Principal) -> dict[str, Any]:
    return task if task["user"] == principal.name else {**task, "task_id": None, "user": None}
