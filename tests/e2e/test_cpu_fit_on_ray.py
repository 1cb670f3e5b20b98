"""Issue 15 on a real Ray: a task whose CPUs are not free waits in Argus's queue, named, never in Ray's."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from argus.cluster.dashboard import Dashboard
from argus.cluster.inventory import RayInventory
from argus.db.models import TaskEventModel
from tests.e2e.stack import Stack, submit, wait_status
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def _with_cpus(command: str, cpus: float) -> str:
    return (f"kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\ncpus_per_node: {cpus}\n"
            f"command: {command}\n")


def test_a_cpu_hungry_task_waits_in_argus_with_the_reason_and_never_pends_in_ray(stack: Stack) -> None:
    alice = stack.user("alice")
    alive = [n for n in RayInventory(Dashboard(stack.dashboard_url, token=stack.cluster.settings.ray_auth_token), cache_s=0).worker_nodes() if n.alive]
    assert len(alive) == 1, "the e2e cluster has one worker between tests"
    whole = alive[0].cpus_total  # each hungry task takes every CPU the worker advertises
    first = submit(alice, _with_cpus("python3 -m argus.jobs.sleep 4 --lines 1", whole))
    wait_status(alice, first, "RUNNING", timeout=90)
    second = submit(alice, _with_cpus("python3 -m argus.jobs.sleep 1 --lines 1", whole))
    light = submit(alice, "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\n"
                          "command: python3 -m argus.jobs.sleep 0 --lines 1\n")  # Argus probes reserve no CPU
    reasons: set[str] = set()

    def second_ran() -> bool:  # while it waits: its reasons are collected, and Ray never holds both
        if alice.get(f"/api/v2/tasks/{second}").json()["status"] in ("SUCCEEDED", "FAILED"):
            return True
        t = alice.get(f"/api/v2/tasks/{second}").json()
        if t["status"] == "QUEUED" and t["pending_reason"]:
            reasons.add(t["pending_reason"])
        ours = [j for j in stack.ray_jobs() if (j.metadata or {}).get("argus_task_id") in (first, second)
                and str(j.status).rsplit(".", 1)[-1] in ("PENDING", "RUNNING")]
        assert len(ours) <= 1, f"Argus handed Ray a job it had no CPUs for: {ours}"
        return False

    wait_until(second_ran, 180, every=0.2, what="the second task never ran")
    assert wait_status(alice, second, "SUCCEEDED", timeout=5)["attempts"][-1]["status"] == "SUCCEEDED"
    wait_status(alice, light, "SUCCEEDED", timeout=120)
    cpus = int(whole) if float(whole).is_integer() else whole
    assert any(r.startswith(f"needs 1 node × {cpus} CPU") and " 0 CPUs" in r for r in reasons), reasons
    with stack.server.ctx.db.session() as s:
        order = [e.task_id for e in s.scalars(select(TaskEventModel)
                                               .where(TaskEventModel.to_status == "SUBMITTED",
                                                      TaskEventModel.task_id.in_([second, light]))
                                               .order_by(TaskEventModel.id))]
    assert order == [light, second]  # the light task went past the one waiting for CPUs
