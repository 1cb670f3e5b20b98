"""Each owner gets their running task's own Ray dashboard, behind Argus's auth (issue 21, ★).

A cluster and server of its own (``task_ray_dashboard`` on): alice's Ray task runs its private
cluster with a dashboard; through ``/api/v2/tasks/{id}/ray-dashboard/`` she gets its page and
its state API, which shows her task's one node and no node of the platform's; bob gets 404;
once the task ended, 409.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from argus.settings import Settings
from tests.e2e.stack import argus_on, spec, submit, wait_status
from tests.ray_fixtures import local_ray

pytestmark = [pytest.mark.e2e, pytest.mark.hostile]


def test_the_owner_sees_their_tasks_own_ray_dashboard_and_nobody_else_does() -> None:
    with tempfile.TemporaryDirectory() as tmp, local_ray(Path(tmp), task_jail="bwrap") as cluster:
        cluster.add_worker("worker-2")
        settings = Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off", scheduler_tick_s=0.5,
                            task_jail="bwrap", task_ray_dashboard=True)
        with argus_on(cluster, settings) as stack:
            alice, bob = stack.user("alice"), stack.user("bob")
            tid = submit(alice, spec("python3 -m argus.jobs.ray_gpus --gpus 0 --hold 120"))
            wait_status(alice, tid, set(), timeout=180,
                        until=lambda _t: "ray_gpus: holding" in alice.get(f"/api/v2/tasks/{tid}/logs").text)
            base = f"/api/v2/tasks/{tid}/ray-dashboard"
            assert alice.get(base).status_code == 307
            page = alice.get(f"{base}/")
            assert page.status_code == 200 and "Ray Dashboard" in page.text, page.text[:500]
            nodes = alice.get(f"{base}/api/v0/nodes", params={"limit": 100})
            assert nodes.status_code == 200, nodes.text[:500]
            listed = nodes.json()["data"]["result"]["result"]
            assert len(listed) == 1, listed  # her task's private cluster: one node, not the platform's three
            assert bob.get(f"{base}/").status_code == 404  # another user's task does not exist for bob
            assert bob.get(f"{base}/api/v0/nodes").status_code == 404
            alice.post(f"/api/v2/tasks/{tid}/cancel")
            wait_status(alice, tid, "CANCELED", timeout=120)
            gone = alice.get(f"{base}/")
            assert gone.status_code == 409 and "only while it runs" in gone.text
