"""Issue 24 on a real Ray: queued CPU jobs that need the whole worker show their place and an estimated start
from the running job's verl-style steps; the places move up as jobs start."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from argus.cluster.dashboard import Dashboard
from argus.cluster.inventory import RayInventory
from tests.e2e.stack import Stack, submit, wait_status
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def _steps(cpus: float, total: int, seconds: float) -> str:
    return (f"kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\ncpus_per_node: {cpus}\n"
            f"command: python3 -m argus.jobs.steps trainer.total_training_steps={total} step_seconds={seconds} "
            f"trainer.save_freq=0\n")


def _until(c: Any, tid: str, ok: Any, timeout: float = 60.0) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def holds() -> dict[str, Any] | None:
        t = seen["task"] = c.get(f"/api/v2/tasks/{tid}").json()
        return t if ok(t) else None

    return wait_until(holds, timeout, every=0.3, what=lambda: f"{tid} as wanted; now {seen.get('task')}")


def _at(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def test_queued_jobs_move_up_and_get_an_estimate_from_the_running_jobs_steps(stack: Stack) -> None:
    alice = stack.user("eta")
    inventory = RayInventory(Dashboard(stack.dashboard_url, token=stack.cluster.settings.ray_auth_token), cache_s=0)
    alive = [n for n in inventory.worker_nodes() if n.alive]
    assert len(alive) == 1, "the e2e cluster has one worker between tests"
    whole = alive[0].cpus_total  # each job takes every CPU the worker advertises: one runs at a time
    first = submit(alice, _steps(whole, 25, 1.0))
    wait_status(alice, first, "RUNNING", timeout=90)
    second = submit(alice, _steps(whole, 4, 1.0))
    third = submit(alice, _steps(whole, 2, 0.5))

    # the first job logs steps: its end is known, and so is the start of the job that waits for its CPUs
    run = _until(alice, first, lambda t: (t["progress"] or {}).get("eta_end") is not None)["progress"]
    assert run["total_steps"] == 25 and run["step"] >= 1 and run["steps_per_hour"] > 0
    q2 = _until(alice, second, lambda t: t["queue"] and t["queue"]["eta"] is not None, timeout=30)["queue"]
    assert (q2["position"], q2["ahead"], q2["competing"], q2["resource"]) == (1, 0, 2, "CPU")
    now = datetime.now(UTC)
    assert now < _at(q2["eta"]) < now + timedelta(seconds=60)
    assert abs((_at(q2["eta"]) - _at(run["eta_end"])).total_seconds()) < 15
    q3 = alice.get(f"/api/v2/tasks/{third}").json()["queue"]
    assert (q3["position"], q3["ahead"], q3["eta"]) == (2, 1, None)  # the second job's run time is unknown yet
    assert "queued tasks that would start before it" in q3["eta_reason"]

    # the second job starts: the third moves up, and gets an estimate once the second logs its steps
    wait_status(alice, second, "RUNNING", timeout=120)
    q3 = _until(alice, third, lambda t: t["queue"] and t["queue"]["position"] == 1, timeout=30)["queue"]
    assert (q3["ahead"], q3["competing"]) == (0, 1)
    q3 = _until(alice, third, lambda t: t["status"] != "QUEUED" or (t["queue"] and t["queue"]["eta"]), timeout=60)
    if q3["status"] == "QUEUED":  # (a fast second job may be done before a look saw the estimate)
        assert _at(q3["queue"]["eta"]) < datetime.now(UTC) + timedelta(seconds=30)
    wait_status(alice, third, "SUCCEEDED", timeout=120)
    done = alice.get(f"/api/v2/tasks/{third}").json()
    assert done["queue"] is None and done["progress"] is None and done["queue_position"] is None
