"""Where a running task's own Ray dashboard is, for its owner only (issues 21 and 33).

With ``task_ray_dashboard`` on, the private Ray cluster of a Ray task runs its dashboard on the
task's first node; the launcher (platform code, outside the sandbox) records the port and the
cluster's token in ``<root>/.argus/dashboards`` (``launcher.dashboard_record.dashboard_record_path``), which no
sandbox shows and no file access of a user reaches — not in the attempt's ``status.json``, which
the owner can rewrite through the files API and so point the proxy at a web server of her own. The
address is the node Ray ran the launcher on (the attempt's ``node_id``, resolved by the platform's
inventory), and the token is only ever sent *to* that port.

What the dashboard serves is the task's to decide (its code can replace the dashboard on that port
with any web server), so the proxy serves it as untrusted content: ``Content-Security-Policy:
sandbox`` without ``allow-same-origin`` gives every proxied page an opaque origin, so its script can
neither read nor use the viewer's Argus session (the session cookie is SameSite=Strict and
``Origin: null`` is refused as cross-site anyway). Such a page's own requests carry no cookie, so a
browser opens the dashboard through a *view key* in the path (``mint_view_key``): an HMAC of the
task, the viewer and an expiry under a key of this server process, checked like a session on every
request (the viewer must still exist, be enabled and see the task). A leaked view key shows that
task's dashboard to whoever holds it until it expires, and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core.states import TaskStatus
from argus.db.models import TaskAttemptModel, UserModel
from argus.errors import Conflict, NotFound, Unauthorized
from argus.launcher.dashboard_record import read_dashboard_record
from argus.services.principal import Principal
from argus.services.tasks import get_task

_TOKEN = re.compile(r"[0-9a-f]{16,128}")
VIEW_KEY_TTL_S = 12 * 3600
_VIEW_KEY = re.compile(r"(\d{1,12})\.(\d{1,12})\.([A-Za-z0-9_-]{43})")


def _view_mac(secret: bytes, task_id: str, user_id: int, expires: int) -> str:
    mac = hmac.new(secret, f"ray-dashboard\0{task_id}\0{user_id}\0{expires}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def mint_view_key(secret: bytes, principal: Principal, task_id: str, now: float | None = None) -> str:
    """``<expires>.<user id>.<mac>``: lets a sandboxed dashboard page (no cookie) reach this task's proxy."""
    expires = int(now if now is not None else time.time()) + VIEW_KEY_TTL_S
    return f"{expires}.{principal.id}.{_view_mac(secret, task_id, principal.id, expires)}"


def view_key_principal(session: Session, secret: bytes, task_id: str, key: str, now: float | None = None) -> Principal:
    """The viewer a view key was made for, if it is this task's, unexpired and the viewer may still sign in."""
    m = _VIEW_KEY.fullmatch(key)
    if m is None:
        raise Unauthorized("not a dashboard view key: open the dashboard from the task's page", code="unauthorized")
    expires, user_id = int(m.group(1)), int(m.group(2))
    if not hmac.compare_digest(m.group(3), _view_mac(secret, task_id, user_id, expires)) \
            or expires < (now if now is not None else time.time()):
        raise Unauthorized("this dashboard link has expired or is not this task's (or the server restarted): "
                           "open the dashboard again from the task's page", code="unauthorized")
    user = session.get(UserModel, user_id)
    if user is None or user.disabled:
        raise Unauthorized("the account this dashboard link was made for cannot sign in", code="unauthorized")
    return Principal(user.id, user.name, user.is_admin)


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
    dash = read_dashboard_record(root, task.id, att.attempt) if att is not None else None
    if dash is None:
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
