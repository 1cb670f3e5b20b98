"""The queue head for the Nodes page: tasks waiting for resources, oldest first, with the scheduler's reason
(its text, and its code and values when they still render to it: core/messages.from_stored).

Read-only and bounded (``limit`` rows from the ``(status, created_at)`` index). Who may see which
fields is the API's job (``api/routers/nodes.py`` hides other users' ids, names and reasons from
non-admins, as it does for the tasks holding GPUs). The order is by age: the scheduler's fair share
may start a younger task first, which the reason then says.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from argus.core import messages
from argus.core.states import TaskStatus
from argus.db.models import TaskModel, UserModel


def waiting_tasks(session: Session, *, limit: int = 50) -> tuple[list[dict[str, Any]], int]:
    """(the ``limit`` oldest QUEUED tasks, how many are QUEUED in all)."""
    queued = TaskModel.status == TaskStatus.QUEUED.value
    rows = session.execute(
        select(TaskModel.id, TaskModel.name, UserModel.name.label("user"), TaskModel.nnodes, TaskModel.n_gpus_per_node,
               TaskModel.pending_reason, TaskModel.pending_reason_code, TaskModel.pending_reason_params,
               TaskModel.created_at)
        .join(UserModel, UserModel.id == TaskModel.user_id)
        .where(queued).order_by(TaskModel.created_at, TaskModel.id).limit(limit)
    ).all()
    total = session.execute(select(func.count()).select_from(TaskModel).where(queued)).scalar_one()
    out = []
    for r in rows:
        why = messages.from_stored(r.pending_reason_code, r.pending_reason_params, r.pending_reason)
        out.append({"task_id": r.id, "name": r.name, "user": r.user, "status": TaskStatus.QUEUED.value,
                    "nnodes": r.nnodes, "n_gpus_per_node": r.n_gpus_per_node, "gpus": r.nnodes * r.n_gpus_per_node,
                    "pending_reason": r.pending_reason, "pending_reason_code": why and why.code,
                    "pending_reason_params": why and why.params, "created_at": r.created_at.isoformat()})
    return out, total
