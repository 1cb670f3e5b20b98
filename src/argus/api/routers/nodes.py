"""/api/v2/nodes: worker nodes, GPUs total / allocated by Argus, and which tasks hold them.

Read-only: the view comes from ``AppContext.nodes`` (set by the composition root from the
cluster inventory and the scheduler's ledger), plus ``queue``: the oldest waiting tasks with their
pending reason (``services.queue_view``), each node's ``gpu_use`` and ``use`` (CPU and memory of Argus's
tasks now and per minute for half an hour: ``services.node_usage``), and each holder's ``idle_gpus_since`` (its GPUs below 5 % for 10
minutes: ``services.task_usage``; shown for every holder, it names no one). Other users' task ids, names, users and reasons are not
shown to non-admins — only that some GPUs are held or wanted.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx
from argus.core.messages import as_fields, msg
from argus.services import queue_view
from argus.services.node_usage import cpu_mem_by_node, gpu_use_by_node
from argus.services.principal import Principal
from argus.services.task_usage import running_usage

router = APIRouter(prefix="/api/v2", tags=["cluster"])
QUEUE_HEAD = 50


@router.get("/nodes")
def list_nodes(principal: Principal = Depends(current_principal), ctx: AppContext = Depends(get_ctx)) -> dict[str, Any]:
    if ctx.nodes is None:
        view: dict[str, Any] = {"available": False, **as_fields("error", msg("nodes.no_ray")), "nodes": [], "unplaced": [],
                                "gpus_total": 0, "gpus_allocated": 0}
    else:
        view = ctx.nodes()
    with ctx.db.session() as session:
        view["queue"], view["queued_total"] = queue_view.waiting_tasks(session, limit=QUEUE_HEAD)
        idle = {row[0]: row[-1] for row in running_usage(session, ctx.settings.root) if row[-1]}  # (id, …, since)
        gpu_use = gpu_use_by_node(session, ctx.settings.root)
        cpu_mem = cpu_mem_by_node(session, ctx.settings.root)
    for node in view["nodes"]:  # issue 24: GPUs held below 5 % for 10 min (core/resource_use.py)
        for t in node["tasks"]:
            t["idle_gpus_since"] = idle.get(t.get("task_id"))
        # issue 25: each GPU's use from its tasks' telemetry (core/node_gpu.py); null: no fresh sample
        node["gpu_use"] = gpu_use.get(node["node_id"])
        node["cpu_only"] = not node.get("gpus_total") and node["gpu_use"] is None  # Ray sees none, no task sampled one
        node["use"] = _cpu_mem(cpu_mem.get(node["node_id"]), node)
        for g in (node["gpu_use"] or {}).get("gpus", []):  # whose task sampled it: admins and the owner only
            owner = g.pop("user")
            if not principal.is_admin and owner != principal.name:
                g["task_id"] = None
    if not principal.is_admin:
        for node in view["nodes"]:
            node["tasks"] = [_redact(t, principal) for t in node["tasks"]]
        view["unplaced"] = [_redact(t, principal) for t in view["unplaced"]]
        view["queue"] = [_redact(t, principal) for t in view["queue"]]
    return view


def _cpu_mem(use: dict[str, Any] | None, node: dict[str, Any]) -> dict[str, Any]:
    """What Argus's tasks use on the node (services.node_usage.cpu_mem_by_node) as shares of what Ray says the
    node has: ``cpu_pct``/``mem_pct`` now (null: no fresh sample or no size known) and per minute (``history``:
    [t, cpu %, mem %]). Figures only, no task or user: every user may see them."""
    use = use or {"cpu": None, "rss": None, "history": []}
    cpus, mem = node.get("cpus_total") or 0, node.get("memory_total") or 0

    def pct(v: float | None, of: float) -> float | None:
        return None if v is None or not of else round(100.0 * v / of, 1)

    return {"cpu": use["cpu"], "rss": use["rss"], "cpu_pct": pct(use["cpu"], cpus), "mem_pct": pct(use["rss"], mem),
            "history": [[t, pct(c, cpus), pct(r, mem)] for t, c, r in use["history"]]}


def _redact(task: dict[str, Any], principal: Principal) -> dict[str, Any]:
    if task["user"] == principal.name:
        return task
    hidden = {k: None for k in ("task_id", "user", "name", "pending_reason", "pending_reason_code",
                                "pending_reason_params") if k in task}
    return {**task, **hidden}
