"""Where the dashboard proxy goes is the platform's answer, not the task's (issues 21 and 33: the launcher's
record in <root>/.argus, the attempt's node; a status.json the owner writes counts for nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from argus.db.models import TaskAttemptModel, TaskModel
from argus.errors import Conflict, NotFound
from argus.launcher.dashboard_record import dashboard_record_path
from argus.services.principal import Principal
from argus.services.ray_dashboard import dashboard_target
from tests.scheduler.fakes import add_task, add_user

pytestmark = pytest.mark.hostile


def _running(ctx, dash: object, status: dict | None = None) -> tuple[str, int]:
    """A running attempt on node n1 whose launcher recorded ``dash``; its owner wrote ``status`` into status.json."""
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid)
    with ctx.db.session() as s:
        t = s.get(TaskModel, tid)
        t.status, t.attempts = "RUNNING", 1
        s.add(TaskAttemptModel(task_id=tid, attempt=1, submission_id=f"{tid}-a1", status="RUNNING", node_id="n1",
                               created_at=t.created_at))
    job = Path(ctx.settings.root) / "users" / "alice" / "jobs" / tid
    job.mkdir(parents=True)
    (job / "status.json").write_text(json.dumps({"attempt": 1, **(status or {})}))
    record = dashboard_record_path(Path(ctx.settings.root), tid, 1)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(dash))
    return tid, uid


NODES = {"nodes": [{"node_id": "n1", "ip": "10.1.2.3", "alive": True}, {"node_id": "n2", "ip": "10.9.9.9", "alive": True}]}


def test_the_address_comes_from_the_attempts_node_and_only_the_owner_gets_it(ctx) -> None:
    tid, uid = _running(ctx, {"port": 45123, "token": "ab" * 24}, {"hostname": "10.9.9.9"})
    with ctx.db.session() as s:
        target = dashboard_target(s, Principal(uid, "alice"), tid, ctx.settings.root, lambda: NODES)
        assert (target.base_url, target.token) == ("http://10.1.2.3:45123", "ab" * 24)
        with pytest.raises(NotFound):
            dashboard_target(s, Principal(uid + 100, "bob"), tid, ctx.settings.root, lambda: NODES)


@pytest.mark.parametrize("dash", [{"port": 22, "token": "ab" * 24}, {"port": "45123", "token": "ab" * 24},
                                  {"port": 45123, "token": "x; rm -rf /"}, {"port": 45123}, "http://10.9.9.9:80"])
def test_a_malformed_record_is_refused(ctx, dash) -> None:
    tid, uid = _running(ctx, dash)
    with ctx.db.session() as s, pytest.raises(NotFound, match="dashboard"):
        dashboard_target(s, Principal(uid, "alice"), tid, ctx.settings.root, lambda: NODES)


def test_the_owners_status_json_is_not_read(ctx) -> None:
    tid, uid = _running(ctx, None, {"ray_dashboard": {"port": 45123, "token": "ab" * 24}})
    with ctx.db.session() as s, pytest.raises(NotFound, match="no Ray dashboard"):
        dashboard_target(s, Principal(uid, "alice"), tid, ctx.settings.root, lambda: NODES)


def test_a_task_that_is_not_running_has_no_dashboard(ctx) -> None:
    tid, uid = _running(ctx, {"port": 45123, "token": "ab" * 24})
    with ctx.db.session() as s:
        s.get(TaskModel, tid).status = "SUCCEEDED"
    with ctx.db.session() as s, pytest.raises(Conflict, match="only while it runs"):
        dashboard_target(s, Principal(uid, "alice"), tid, ctx.settings.root, lambda: NODES)
