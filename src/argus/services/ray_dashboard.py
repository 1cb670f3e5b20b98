"""Where a running task's own Ray dashboard is, for its owner only (issue 21).

With ``task_ray_dashboard`` on, the private Ray cluster of a Ray task runs its dashboard on
the task's first node; the launcher writes the port and the cluster's token into the
attempt's ``status.json``. That file is in the owner's home, so the task can change it: what
it says is taken only as a port on *the node Ray ran the launcher on* (the attempt's
``node_id``, resolved to an address by the platform's inventory, never by the file) and a
token sent *to* that port. A forged port reaches nothing the task could not reach itself
from that node, and another task's dashboard refuses this task's token.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core.paths import DataLayout
from argus.core.states import TaskStatus
from argus.db.models import TaskAttemptModel
from argus.errors import Conflict, NotFound
from argus.services.home_files import read_attempt_status
from argus.services.principal import Principal
from argus.services.tasks import get_task, user_name_of

_TOKEN = re.compile(r"[0-9a-f]{16,128}")


@dataclass(frozen=True)
class DashboardTarget:
    base_url: str  # http://<node ip>:<port>
    token: str


def dashboard_target(session: Session, principal: Principal, task_id: str, root: Path,
                     nodes: Callable[[], dict[str, Any]] | None) -> DashboardTarget:
    task = get_task(session, principal, task_id)  # another user's task: 404
    if task.status != TaskStatus.RUNNING.value:
        raise Conflict(f"task {task_id} is {task.status}: its Ray dashboard exists only while it runs",
                       code="task_not_running")
    att = session.scalar(select(TaskAttemptModel).where(TaskAttemptModel.task_id == task.id,
                                                        TaskAttemptModel.attempt == task.attempts))
    layout = DataLayout.at(root)
    owner = user_name_of(session, task)
    status = read_attempt_status(Path(str(layout.home(owner))), Path(str(layout.job_dir(owner, task.id))),
                                 att.attempt) if att is not None else {}
    dash = status.get("ray_dashboard")
    if not isinstance(dash, dict):
        raise NotFound(f"task {task_id} has no Ray dashboard (a Ray program, with task_ray_dashboard on, has one)",
                       code="no_ray_dashboard")
    port, token = dash.get("port"), dash.get("token")
    if not isinstance(port, int) or not 1024 <= port <= 65535 or not isinstance(token, str) \
            or not _TOKEN.fullmatch(token):
        raise NotFound(f"task {task_id}'s dashboard record is not usable", code="no_ray_dashboard")
    view = nodes() if nodes is not None else {"nodes": []}
    ip = next((n.get("ip") for n in view.get("nodes", []) if n.get("node_id") == att.node_id and n.get("alive")), None)
    if not ip:
        raise Conflict(f"task {task_id}'s node is not reachable now", code="node_unavailable")
    return DashboardTarget(f"http://{ip}:{port}", token)
