"""The cluster view behind ``GET /api/v2/nodes``: Ray's worker nodes plus Argus's GPU ledger.

The API must not import the scheduler or Ray, so the composition root hands it
``nodes_view`` as a plain callable (``AppContext.nodes``). Allocation comes from the same
ledger the scheduler fits against (the planned nodes of SUBMITTED/RUNNING/CANCELING
tasks); Ray's free count is shown next to it so a difference is visible.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from argus.cluster.types import ClusterUnavailable, NodeInventory
from argus.core.messages import as_fields, msg
from argus.core.states import ACTIVE
from argus.db.models import TaskAttemptModel, TaskModel, UserModel
from argus.db.session import Database


def nodes_view(db: Database, inventory: NodeInventory) -> dict[str, Any]:
    try:
        nodes = inventory.worker_nodes()
        error = None
    except ClusterUnavailable as exc:
        nodes, error = [], msg("queue.ray_unreachable", error=str(exc))
    with db.session() as s:
        rows = s.execute(
            select(TaskModel.id, UserModel.name, TaskModel.status, TaskModel.nnodes, TaskModel.n_gpus_per_node,
                   TaskAttemptModel.gpus, TaskAttemptModel.node_id)
            .join(UserModel, UserModel.id == TaskModel.user_id)
            .outerjoin(TaskAttemptModel, (TaskAttemptModel.task_id == TaskModel.id)
                       & (TaskAttemptModel.attempt == TaskModel.attempts))
            .where(TaskModel.status.in_([st.value for st in ACTIVE]))
        ).all()
    holders: dict[str, list[dict[str, Any]]] = {}
    unplaced: list[dict[str, Any]] = []
    for r in rows:
        planned = (r.gpus or {}).get("nodes") if isinstance(r.gpus, dict) else None
        entry = {"task_id": r.id, "user": r.name, "status": r.status, "gpus": r.n_gpus_per_node}
        targets = list(planned or []) or ([r.node_id] if r.node_id else [])
        if not targets:
            unplaced.append({**entry, "gpus": r.nnodes * r.n_gpus_per_node})
        for node in targets:
            holders.setdefault(node, []).append(entry)
    out = []
    for n in nodes:
        tasks = holders.get(n.node_id, [])
        out.append({
            "node_id": n.node_id, "hostname": n.hostname, "ip": n.ip, "alive": n.alive,
            "gpus_total": n.gpus_total, "gpus_free_ray": n.gpus_free,
            "gpus_allocated": sum(t["gpus"] for t in tasks), "cpus_total": n.cpus_total,
            # issue 15: what Ray reports free (None until its usage report covers the node)
            "cpus_free_ray": n.cpus_free, "memory_total": n.memory_total, "memory_free_ray": n.memory_free,
            "tasks": tasks,
        })
    return {"available": error is None, **as_fields("error", error), "nodes": out, "unplaced": unplaced,
            "gpus_total": sum(n.gpus_total for n in nodes if n.alive),
            "gpus_allocated": sum(x["gpus_allocated"] for x in out if x["alive"])}
